/*
 * bench_peer_run.c - one case of `hashbatch bench` measured by the
 * isa-l_crypto peer (the program bench_peer_build.c compiled from
 * bench/isal_peer.c): COUNT messages of SIZE bytes, the bench's number of
 * runs of at least --min-time seconds each, on as many threads as the
 * cpu backend's pool.
 *
 * Owns: the peer's command line, reading its `round=R s=S gbps=G
 * passes=P` lines and its final `isal_sha1_mb bytes=B count=N threads=T
 * ...` line into a result (backend BENCH_PEER), and the errors when it
 * fails (its exit status and the first lines of its stderr) or writes
 * something else. The peer checks a sample of its digests against
 * OpenSSL's after every run and exits 1 when one differs, so a result
 * counts every run as checked. Must not: build the peer, or print
 * anything but an error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_RUNS 1000

/* The per-run figures the peer printed. */
typedef struct {
    double seconds[MAX_RUNS];
    uint64_t passes[MAX_RUNS];
    unsigned runs;
    int summary; /* the isal_sha1_mb line was there and matched */
} peer_output;

/* read_line: one line of the peer's stdout into *po; 0, or -1 when it is
 * a line the peer does not print. */
static int read_line(const char *line, size_t size, size_t count, unsigned threads, peer_output *po)
{
    unsigned r;
    double s, g;
    uint64_t passes;
    size_t b, n;
    unsigned t;
    if (sscanf(line, "round=%u s=%lf gbps=%lf passes=%" SCNu64, &r, &s, &g, &passes) == 4) {
        if (r != po->runs + 1 || po->runs == MAX_RUNS || !(s > 0) || passes == 0)
            return -1;
        po->seconds[po->runs] = s;
        po->passes[po->runs++] = passes;
        return 0;
    }
    if (sscanf(line, "isal_sha1_mb bytes=%zu count=%zu threads=%u", &b, &n, &t) == 3) {
        po->summary = b == size && n == count && t == threads;
        return po->summary ? 0 : -1;
    }
    return -1;
}

/* parse: every line of out. Returns 0, or -1 when it is not what the
 * peer prints for this case. */
static int parse(const char *out, size_t size, size_t count, unsigned threads, unsigned runs,
                 peer_output *po)
{
    char line[512];
    memset(po, 0, sizeof *po);
    while (*out != '\0') {
        size_t n = strcspn(out, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), out);
        if (n > 0 && read_line(line, size, count, threads, po) != 0)
            return -1;
        out += n + (out[n] == '\n');
    }
    return po->summary && po->runs == runs ? 0 : -1;
}

/* fill: the result from the peer's runs. */
static void fill(const peer_output *po, size_t size, size_t count, bench_result *r)
{
    double gbps[MAX_RUNS], mps[MAX_RUNS];
    bench_sweep sweep = r->sweep;
    memset(r, 0, sizeof *r);
    r->sweep = sweep;
    r->backend = BENCH_PEER;
    r->size = size;
    r->count = count;
    r->runs = po->runs;
    r->checked = po->runs;
    r->device_share = -1;
    for (unsigned i = 0; i < po->runs; i++) {
        double messages = (double)po->passes[i] * (double)count;
        mps[i] = messages / po->seconds[i];
        gbps[i] = messages * (double)size / po->seconds[i] / 1e9;
        r->calls += po->passes[i];
        r->seconds += po->seconds[i];
    }
    bench_spread_of(gbps, po->runs, &r->gbps);
    bench_spread_of(mps, po->runs, &r->mps);
}

int bench_peer_case(const bench_peer *p, size_t size, size_t count, const bench_opts *o,
                    bench_result *r)
{
    char min_time[32], bytes[32], n[32], runs[16], threads[16];
    snprintf(min_time, sizeof min_time, "%.17g", o->min_time);
    snprintf(bytes, sizeof bytes, "%zu", size);
    snprintf(n, sizeof n, "%zu", count);
    snprintf(runs, sizeof runs, "%u", o->runs);
    snprintf(threads, sizeof threads, "%u", p->threads);
    static char opt[] = "--min-time";
    char binary[BENCH_PATH_MAX];
    snprintf(binary, sizeof binary, "%s", p->binary);
    char *argv[] = {binary, opt, min_time, bytes, n, runs, threads, NULL};
    static bench_child c; /* large: kept off the stack */
    static peer_output po;
    char how[96], first[2048];
    if (bench_child_run(argv, 0, &c) != 0) {
        cli_error(BENCH_CMD ": cannot run the isa-l_crypto peer %s: %s", p->binary,
                  strerror(errno));
        return CLI_EXIT_FAILURE;
    }
    if (!bench_child_ok(&c)) {
        cli_error(BENCH_CMD ": the isa-l_crypto peer (%s) failed on %zu messages of %zu bytes "
                            "(%s)%s%s",
                  p->binary, count, size, bench_child_how(&c, how, sizeof how),
                  c.err_len ? "; its stderr:" : "",
                  c.err_len ? bench_first_lines(c.err, 15, first, sizeof first) : "");
        return CLI_EXIT_FAILURE;
    }
    if (parse(c.out, size, count, p->threads, o->runs, &po) != 0) {
        cli_error(BENCH_CMD ": the isa-l_crypto peer (%s) printed something else than %u "
                            "rounds and a summary for %zu messages of %zu bytes on %u threads:%s",
                  p->binary, o->runs, count, size, p->threads,
                  bench_first_lines(c.out, 15, first, sizeof first));
        return CLI_EXIT_FAILURE;
    }
    fill(&po, size, count, r);
    return CLI_EXIT_OK;
}
