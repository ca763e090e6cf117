/*
 * bench_text.c - the text report of `hashbatch bench`: the machine, the
 * backends (with the CPU implementation of each cpu row), a table per
 * sweep (median and min-max of every figure) and the crossover.
 *
 * Owns: the wording and layout of the tables (the isa-l_crypto peer's
 * rows among them). Must not: measure, or
 * compute anything but formatting (the crossover comes from
 * bench_crossover.c).
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

const char *bench_size_name(size_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
    size_t u = 0, v = bytes;
    while (v >= 1024 && v % 1024 == 0 && u + 1 < sizeof unit / sizeof unit[0]) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%zu %s", v, unit[u]);
    return buf;
}

/* num: v with about three significant digits, without an exponent. */
static const char *num(double v, char *buf, size_t len)
{
    if (v >= 100)
        snprintf(buf, len, "%.0f", v);
    else if (v >= 10)
        snprintf(buf, len, "%.1f", v);
    else if (v >= 1)
        snprintf(buf, len, "%.2f", v);
    else if (v > 0) { /* three significant digits after the zeros */
        int decimals = 2;
        for (double x = v; x < 1 && decimals < 12; x *= 10)
            decimals++;
        snprintf(buf, len, "%.*f", decimals, v);
    } else {
        snprintf(buf, len, "0");
    }
    return buf;
}

/* put_spread: "median [min-max]" of s scaled by 1/scale, in a 30-wide
 * field, and at least one space after it. */
static void put_spread(FILE *f, const bench_spread *s, double scale)
{
    char a[32], b[32], c[32], all[100];
    snprintf(all, sizeof all, "%s [%s-%s]", num(s->median / scale, a, sizeof a),
             num(s->min / scale, b, sizeof b), num(s->max / scale, c, sizeof c));
    fprintf(f, "%-29s ", all);
}

const char *bench_label(const bench_report *rep, int i, char *buf, size_t len)
{
    if (i == BENCH_OPENSSL || i == BENCH_PEER) {
        snprintf(buf, len, "%s", i == BENCH_PEER ? BENCH_PEER_NAME : "openssl 1 thread");
        return buf;
    }
    const bench_backend *b = &rep->backends.b[i];
    if (strcmp(b->kind, "cpu") == 0 && !b->cpu_forced && b->cpu_impl != NULL)
        snprintf(buf, len, "%s (%s)", b->name, b->cpu_impl);
    else
        snprintf(buf, len, "%s", b->name);
    return buf;
}

/* peer_line: what the isa-l_crypto row measures. */
static void peer_line(FILE *f, const bench_peer *p)
{
    fprintf(f,
            "  %-16s peer: isa-l_crypto's multi-buffer SHA-1 (sha1_mb) from %s, %u threads,\n"
            "  %-16s a sample of its digests checked against OpenSSL's after every run;\n"
            "  %-16s bench/isal_peer.c, %s by %s: %s\n",
            BENCH_PEER_NAME, p->dir, p->threads, "", "", p->reused ? "built earlier" : "built now",
            p->compiler, p->binary);
}

static void header(FILE *f, const bench_report *rep)
{
    const bench_machine *m = &rep->machine;
    fprintf(f, "hashbatch bench %s, %s, load %.2f %.2f %.2f (at the end: %.2f %.2f %.2f)\n",
            hb_version_string(), m->date, m->load[0], m->load[1], m->load[2], m->load_end[0],
            m->load_end[1], m->load_end[2]);
    fprintf(f, "machine: %s, %u cores, SHA-NI %s; %s; %s\n", m->cpu_model, m->cores,
            m->sha_ni ? "yes" : "no", m->openssl, m->os);
    if (m->ndev == 0)
        fprintf(f, "OpenCL devices: none (no OpenCL platform or device found)\n");
    else
        fprintf(f, "OpenCL devices:\n");
    for (size_t i = 0; i < m->ndev; i++) {
        const hb_device_info *d = &m->dev[i];
        fprintf(f, "  %u:%u %.*s (%.*s; %s; driver %.*s)\n", d->platform_index, d->device_index,
                (int)strnlen(d->name, sizeof d->name), d->name,
                (int)strnlen(d->platform_name, sizeof d->platform_name), d->platform_name,
                hb_device_type_name(d->type),
                (int)strnlen(d->driver_version, sizeof d->driver_version), d->driver_version);
    }
    fprintf(f, "backends:\n");
    for (size_t i = 0; i < rep->backends.n; i++) {
        char label[64];
        fprintf(f, "  %-16s %s\n", bench_label(rep, (int)i, label, sizeof label),
                rep->backends.b[i].describe);
    }
    if (rep->peer.on)
        peer_line(f, &rep->peer);
    if (rep->opts->sizes.n > 0)
        fprintf(f, "  %-16s OpenSSL's SHA1_Init/Update/Final on one thread, for reference\n",
                "openssl 1 thread");
    if (rep->backends.note[0] != '\0')
        fprintf(f, "note: %s\n", rep->backends.note);
    fprintf(f,
            "Each figure: median [min-max] of %u runs; a run hashes one batch back to back\n"
            "for at least %g s; verification %s; every run's digests matched OpenSSL's.\n",
            rep->opts->runs, rep->opts->min_time, rep->verify);
}

/* row: one result line. */
static void row(FILE *f, const bench_report *rep, const bench_result *r, int first)
{
    char size[32], label[64];
    if (first)
        fprintf(f, "  %8s %8zu  ", bench_size_name(r->size, size, sizeof size), r->count);
    else
        fprintf(f, "  %8s %8s  ", "", "");
    fprintf(f, "%-16s  ", bench_label(rep, r->backend, label, sizeof label));
    put_spread(f, &r->gbps, 1.0);
    put_spread(f, &r->mps, 1e6);
    if (r->device_share >= 0)
        fprintf(f, "%9.0f%%", r->device_share * 100);
    if (r->mismatches || r->fallbacks)
        fprintf(f, "  (%llu verification mismatches, %llu batches redone on the CPU)",
                (unsigned long long)r->mismatches, (unsigned long long)r->fallbacks);
    fputc('\n', f);
}

static void table(FILE *f, const bench_report *rep, bench_sweep sweep, size_t only_size)
{
    fprintf(f, "  %8s %8s  %-16s  %-30s%-30s%s\n", "size", "batch", "backend", "GB/s",
            "M messages/s", "on devices");
    size_t last_size = 0, last_count = 0;
    for (size_t i = 0; i < rep->n; i++) {
        const bench_result *r = &rep->r[i];
        if (r->sweep != sweep || (only_size && r->size != only_size))
            continue;
        int first = r->size != last_size || r->count != last_count;
        row(f, rep, r, first);
        last_size = r->size;
        last_count = r->count;
    }
}

static void crossover(FILE *f, const bench_report *rep)
{
    const bench_opts *o = rep->opts;
    if (bench_cpu_index(rep) < 0) {
        fprintf(f, "\nCrossover: not measured (the cpu backend was not measured)\n");
        return;
    }
    fprintf(f, "\nCrossover: the smallest batch from which the backend stays ahead of cpu in\n"
               "messages/s, at each message size of the batch sweep:\n");
    for (size_t b = 0; b < rep->backends.n; b++) {
        if (strcmp(rep->backends.b[b].kind, "cpu") == 0)
            continue;
        fprintf(f, "  %-16s", rep->backends.b[b].name);
        for (size_t s = 0; s < o->batch_sizes.n; s++) {
            char size[32], what[64];
            long long x = bench_crossover(rep, (int)b, o->batch_sizes.v[s]);
            if (x > 0)
                snprintf(what, sizeof what, "%lld", x);
            else if (x == 0)
                snprintf(what, sizeof what, "never (up to %zu)", o->batches.v[o->batches.n - 1]);
            else
                snprintf(what, sizeof what, "not measured");
            fprintf(f, "  %s: %-20s", bench_size_name(o->batch_sizes.v[s], size, sizeof size),
                    what);
        }
        fputc('\n', f);
    }
}

void bench_print_text(FILE *f, const bench_report *rep)
{
    header(f, rep);
    if (rep->opts->sizes.n > 0) {
        fprintf(f, "\nThroughput by message size:\n");
        table(f, rep, BENCH_SWEEP_SIZE, 0);
    }
    if (rep->opts->batches.n == 0)
        return;
    for (size_t s = 0; s < rep->opts->batch_sizes.n; s++) {
        char size[32];
        fprintf(f, "\nThroughput by batch size, %s messages:\n",
                bench_size_name(rep->opts->batch_sizes.v[s], size, sizeof size));
        table(f, rep, BENCH_SWEEP_BATCH, rep->opts->batch_sizes.v[s]);
    }
    crossover(f, rep);
}
