/*
 * cmd_sum.c - `hashbatch sum [OPTION]... [FILE]...`: SHA-1 of each FILE
 * ("-" or none: standard input), printed exactly as GNU sha1sum prints it.
 *
 * Owns: the options and help of `sum`, opening and closing the engine,
 * and the exit status (1 when some file could not be read).
 * Must not: read files or format lines itself (sum_batch.c, file_load.c
 * and sum_format.c do).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sum.h"

#define CMD "sum"
#define DEFAULT_BATCH_BYTES ((size_t)64 << 20)
#define BATCH_FILES 4096

enum { OPT_BATCH_BYTES = CLI_OPT_FIRST_LOCAL, OPT_VERBOSE };

typedef struct {
    cli_engine_opts engine;
    size_t batch_bytes;
    int verbose;
    char **files;
    size_t nfiles;
} sum_opts;

static void help(void)
{
    printf("Usage: %s " CMD " [OPTION]... [FILE]...\n"
           "Print SHA-1 checksums, exactly as sha1sum does: \"HASH  NAME\".\n"
           "With no FILE, or when FILE is -, read standard input.\n\n" CLI_ENGINE_OPTIONS_HELP
           "  --batch-bytes N\n"
           "                read files in groups of at most N bytes (suffixes\n"
           "                K, M, G; default 64M), each group hashed at once;\n"
           "                bigger files are memory-mapped and hashed alone\n"
           "  -v, --verbose, --stats\n"
           "                print the engine used and its counters (messages,\n"
           "                bytes, launches, verification, fallbacks, and per\n"
           "                device: bytes and busy time) on stderr\n"
           "  -h, --help    print this help and exit\n\n" CLI_ENGINE_ENV_HELP "\n"
           "Exit status: 0 if all files were hashed, 1 if some could not be\n"
           "read (the others are still hashed) or the engine failed, 2 on a\n"
           "usage error.\n",
           CLI_PROGRAM);
}

/* parse_size: "64M" and friends; returns 0 on success. */
static int parse_size(const char *text, size_t *out)
{
    char *end;
    errno = 0;
    if (text[0] < '0' || text[0] > '9')
        return -1;
    unsigned long long v = strtoull(text, &end, 10);
    unsigned shift = 0;
    if (*end != '\0') {
        const char *units = "KMG";
        const char *u = strchr(units, *end);
        if (u == NULL || end[1] != '\0')
            return -1;
        shift = 10u * (unsigned)(u - units + 1);
    }
    if (errno != 0 || v == 0 || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

/* parse: the options of `sum`. Returns -1 to go on, else the exit
 * status. */
static int parse(int argc, char **argv, sum_opts *o)
{
    static const struct option longopts[] = {
        CLI_ENGINE_LONG_OPTIONS,
        {"batch-bytes", required_argument, NULL, OPT_BATCH_BYTES},
        {"verbose", no_argument, NULL, OPT_VERBOSE},
        {"stats", no_argument, NULL, OPT_VERBOSE},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {NULL, 0, NULL, 0}};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hv", longopts, NULL)) != -1) {
        if (cli_engine_opts_take(&o->engine, c, optarg))
            continue;
        switch (c) {
        case OPT_BATCH_BYTES:
            if (parse_size(optarg, &o->batch_bytes) != 0)
                return cli_usage_error(CMD,
                                       "invalid size '%s' for "
                                       "'--batch-bytes'",
                                       optarg);
            break;
        case 'v':
        case OPT_VERBOSE:
            o->verbose = 1;
            break;
        case 'h':
        case CLI_OPT_HELP:
            help();
            return cli_finish_stdout(CLI_EXIT_OK);
        default:
            return cli_getopt_error(CMD, c, argv);
        }
    }
    o->files = argv + optind;
    o->nfiles = (size_t)(argc - optind);
    return -1;
}

/* report: --verbose's (--stats') lines on stderr: the engine, its
 * counters, and one line per device and for the CPU pool. */
static void report(const hb_engine *e)
{
    hb_stats st;
    fflush(stdout);
    fprintf(stderr, "%s: engine: %s\n", CLI_PROGRAM, hb_engine_describe(e));
    if (hb_engine_stats(e, &st) != HB_OK)
        return;
    fprintf(stderr,
            "%s: %" PRIu64 " messages, %" PRIu64 " bytes in %" PRIu64 " batches; %" PRIu64
            " launches, %" PRIu64 " bytes on devices, %" PRIu64 " on the cpu pool; %" PRIu64
            " verified, %" PRIu64 " mismatches, %" PRIu64 " fallbacks, %" PRIu64
            " device errors%s\n",
            CLI_PROGRAM, st.messages, st.bytes, st.batches, st.device_launches, st.device_bytes,
            st.cpu_bytes, st.verified, st.verify_mismatches, st.fallbacks, st.device_errors,
            st.quarantined ? ", device quarantined" : "");
    for (unsigned i = 0; i < st.ndevices; i++) {
        const hb_device_stats *d = &st.device[i];
        double busy = (double)d->busy_ns * 1e-9;
        fprintf(stderr,
                "%s:   %s: %" PRIu64 " messages, %" PRIu64 " bytes, %" PRIu64
                " batches, %" PRIu64 " launches, busy %.3f s (%.2f GB/s while busy), %" PRIu64
                " errors%s\n",
                CLI_PROGRAM, d->name, d->messages, d->bytes, d->batches, d->launches, busy,
                busy > 0 ? (double)d->bytes / busy / 1e9 : 0.0, d->errors,
                d->quarantined ? ", quarantined" : "");
    }
}

/* run: hashes every file in order; returns the exit status. */
static int run(hb_engine *e, const sum_opts *o)
{
    static char stdin_name[] = "-";
    static char *stdin_only[] = {stdin_name};
    char **files = o->nfiles ? o->files : stdin_only;
    size_t n = o->nfiles ? o->nfiles : 1;
    sum_batch b;

    if (sum_batch_init(&b, e, o->batch_bytes, BATCH_FILES) != 0) {
        cli_error("%s", strerror(ENOMEM));
        return CLI_EXIT_FAILURE;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = sum_batch_add(&b, files[i]);
    if (rc == 0)
        rc = sum_batch_flush(&b);
    if (rc == 0 && b.unreadable)
        rc = CLI_EXIT_FAILURE;
    sum_batch_free(&b);
    return rc;
}

int cmd_sum(int argc, char **argv)
{
    sum_opts o;
    memset(&o, 0, sizeof o);
    o.batch_bytes = DEFAULT_BATCH_BYTES;
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;

    hb_config cfg;
    rc = cli_engine_config(&o.engine, CMD, &cfg);
    if (rc != CLI_EXIT_OK)
        return rc;
    hb_engine *e = NULL;
    rc = cli_engine_open(&cfg, &e);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = run(e, &o);
    if (o.verbose)
        report(e);
    hb_engine_close(e);
    return cli_finish_stdout(rc);
}
