/*
 * cmd_bench.c - `hashbatch bench`: end-to-end SHA-1 throughput of each
 * backend (cpu, each OpenCL device, default) by message size and by batch
 * size, beside OpenSSL's SHA-1 on one thread, with the crossover where
 * an OpenCL device overtakes the cpu backend, and with --peer-isal the
 * isa-l_crypto peer's rate beside them; as tables, JSON and a plot.
 *
 * Owns: the order of the work: options, the peer's build (before any
 * measurement), machine, engines (opened and warmed once), the random
 * input (made once), then every case with the backends and the peer
 * taking turns on it, then the report. Must not: parse options,
 * time, format or plot itself (bench_options.c, bench_measure.c,
 * bench_text.c, bench_json.c and bench_plot.c do).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* progress: a line on stderr when it is a terminal. */
static void progress(const bench_report *rep, const char *what, size_t size, size_t count)
{
    (void)rep;
    if (!isatty(STDERR_FILENO))
        return;
    char buf[32];
    fprintf(stderr, "\r%s: %-6s %8s x %-8zu", CLI_PROGRAM " " BENCH_CMD, what,
            bench_size_name(size, buf, sizeof buf), count);
    fflush(stderr);
}

static void progress_done(void)
{
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r%60s\r", "");
}

/* size_count: the batch of the size sweep for messages of size bytes. */
static size_t size_count(const bench_opts *o, size_t size)
{
    size_t n = o->target_bytes / size;
    if (n > o->max_count)
        n = o->max_count;
    return n ? n : 1;
}

/* input_bytes: the most bytes any case lays over the input. */
static size_t input_bytes(const bench_opts *o)
{
    size_t most = 0;
    for (size_t i = 0; i < o->sizes.n; i++) {
        size_t b = o->sizes.v[i] * size_count(o, o->sizes.v[i]);
        most = b > most ? b : most;
    }
    if (o->batches.n > 0) {
        size_t b = o->batch_sizes.v[o->batch_sizes.n - 1] * o->batches.v[o->batches.n - 1];
        most = b > most ? b : most;
    }
    return most;
}

/* measure_peer: the isa-l_crypto peer on one case, when it is on. */
static int measure_peer(bench_report *rep, bench_sweep sweep, size_t size, size_t count)
{
    bench_result r;
    if (!rep->peer.on)
        return CLI_EXIT_OK;
    progress(rep, BENCH_PEER_NAME, size, count);
    r.sweep = sweep;
    int rc = bench_peer_case(&rep->peer, size, count, rep->opts, &r);
    if (rc == CLI_EXIT_OK && bench_report_add(rep, &r) != 0)
        rc = CLI_EXIT_FAILURE;
    return rc;
}

/* measure: one case, every backend in turn, the isa-l_crypto peer, then
 * (size sweep) OpenSSL. */
static int measure(bench_report *rep, const bench_input *in, bench_sweep sweep, size_t size,
                   size_t count)
{
    bench_case c;
    if (bench_case_init(&c, in, size, count) != 0) {
        cli_error(BENCH_CMD ": out of memory for %zu messages of %zu bytes", count, size);
        return CLI_EXIT_FAILURE;
    }
    int rc = CLI_EXIT_OK;
    bench_result r;
    for (size_t b = 0; b < rep->backends.n && rc == CLI_EXIT_OK; b++) {
        progress(rep, rep->backends.b[b].name, size, count);
        r.sweep = sweep;
        rc = bench_case_engine(&c, &rep->backends.b[b], (int)b, rep->opts, &r);
        if (rc == CLI_EXIT_OK && bench_report_add(rep, &r) != 0)
            rc = CLI_EXIT_FAILURE;
    }
    if (rc == CLI_EXIT_OK)
        rc = measure_peer(rep, sweep, size, count);
    if (rc == CLI_EXIT_OK && sweep == BENCH_SWEEP_SIZE) {
        progress(rep, "openssl", size, count);
        r.sweep = sweep;
        rc = bench_case_openssl(&c, rep->opts, &r);
        if (rc == CLI_EXIT_OK && bench_report_add(rep, &r) != 0)
            rc = CLI_EXIT_FAILURE;
    }
    bench_case_free(&c);
    return rc;
}

/* sweeps: the size sweep, then the batch sweep at each of its sizes. */
static int sweeps(bench_report *rep, const bench_input *in)
{
    const bench_opts *o = rep->opts;
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < o->sizes.n && rc == CLI_EXIT_OK; i++)
        rc = measure(rep, in, BENCH_SWEEP_SIZE, o->sizes.v[i], size_count(o, o->sizes.v[i]));
    for (size_t s = 0; s < o->batch_sizes.n && rc == CLI_EXIT_OK; s++)
        for (size_t i = 0; i < o->batches.n && rc == CLI_EXIT_OK; i++)
            rc = measure(rep, in, BENCH_SWEEP_BATCH, o->batch_sizes.v[s], o->batches.v[i]);
    progress_done();
    return rc;
}

/* write_json_file: the JSON report into path. */
static int write_json_file(const char *path, const bench_report *rep)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        cli_error_path(path, errno);
        return CLI_EXIT_FAILURE;
    }
    bench_print_json(f, rep);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        cli_error_path(path, errno ? errno : EIO);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

/* run: everything after the options; the report is printed on success. */
static int run(bench_report *rep, const hb_config *base)
{
    const bench_opts *o = rep->opts;
    int rc = bench_machine_read(&rep->machine);
    if (rc != CLI_EXIT_OK)
        return rc;
    rep->peer.threads = rep->machine.cpu_threads;
    rc = bench_backends_open(&rep->backends, o, &rep->machine, base);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (rep->backends.note[0] != '\0')
        cli_error(BENCH_CMD ": note: %s", rep->backends.note);
    bench_input in;
    if (bench_input_make(&in, input_bytes(o)) != 0) {
        cli_error(BENCH_CMD ": out of memory for %zu bytes of input", input_bytes(o));
        bench_backends_close(&rep->backends);
        return CLI_EXIT_FAILURE;
    }
    rep->seed = in.seed;
    rc = sweeps(rep, &in);
    bench_machine_load_end(&rep->machine);
    bench_input_free(&in);
    bench_backends_close(&rep->backends);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (o->json)
        bench_print_json(stdout, rep);
    else
        bench_print_text(stdout, rep);
    if (o->json_file != NULL && (rc = write_json_file(o->json_file, rep)) != CLI_EXIT_OK)
        return rc;
    if (o->plot != NULL) {
        fflush(stdout);
        rc = bench_plot(o->plot, rep);
        if (rc == CLI_EXIT_OK && !o->json)
            printf("\nplot: %s\n", o->plot);
    }
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    bench_opts o;
    int rc = bench_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    /* backend and device are bench's own; only --verify goes through the
     * shared rules (option, then HASHBATCH_VERIFY). */
    cli_engine_opts eo = {"auto", NULL, o.engine.verify};
    hb_config base;
    rc = cli_engine_config(&eo, BENCH_CMD, &base);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (o.plot != NULL && (rc = bench_plot_check(o.plot)) != CLI_EXIT_OK)
        return rc;
    if (o.json_file != NULL && (rc = bench_check_writable(o.json_file, "json-file")) != CLI_EXIT_OK)
        return rc;
    static bench_report rep; /* large (the peer's paths): kept off the stack */
    memset(&rep, 0, sizeof rep);
    if (o.peer_dir != NULL &&
        (rc = bench_peer_prepare(&rep.peer, o.peer_dir, o.peer_origin)) != CLI_EXIT_OK)
        return rc;
    rep.opts = &o;
    rep.verify = hb_verify_name(base.verify);
    rc = run(&rep, &base);
    bench_machine_free(&rep.machine);
    free(rep.r);
    return cli_finish_stdout(rc);
}
