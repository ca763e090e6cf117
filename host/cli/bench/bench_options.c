/*
 * bench_options.c - the options and help of `hashbatch bench`, and the
 * plan they make (which sizes, batches, backends; how many runs).
 *
 * Owns: parsing --sizes/--batches lists, --backend and --cpu-impl lists,
 * --runs, --min-time, --peer-isal (else HASHBATCH_PEER_ISAL), and the
 * defaults of the full and the --quick plans.
 * Must not: measure, open engines, or touch the plot file (the plot
 * module checks that).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum {
    OPT_QUICK = CLI_OPT_FIRST_LOCAL,
    OPT_JSON,
    OPT_SIZES,
    OPT_BATCHES,
    OPT_RUNS,
    OPT_MIN_TIME,
    OPT_PLOT,
    OPT_JSON_FILE,
    OPT_CPU_IMPL,
    OPT_PEER_ISAL
};

#define PEER_ENV "HASHBATCH_PEER_ISAL"

static void help(void)
{
    printf("Usage: %s " BENCH_CMD " [OPTION]...\n"
           "Measure SHA-1 throughput end to end through the library (hb_sha1_batch,\n"
           "packing, transfers and verification included) on each backend: the cpu\n"
           "backend (a pool of one thread per core), each OpenCL device alone, and\n"
           "`default`, the route `sum` and `dedup` take when nothing is pinned\n"
           "(backend auto with the default device: every OpenCL device and the CPU\n"
           "pool at once, the scheduler sending each batch where its cost models\n"
           "predict it finishes first; the pool alone without OpenCL); beside them\n"
           "OpenSSL's SHA-1 on one thread. The cpu backend is measured once per CPU\n"
           "implementation (--cpu-impl): `cpu` is the one the pool uses by default,\n"
           "`cpu NAME` each other one. Two sweeps:\n"
           "  by message size: 64 B to 16 MiB, batches of about 256 MiB\n"
           "  by batch size:   1 to 65536 messages of 64 B and of 4 KiB, and the\n"
           "                   crossover: the smallest batch from which an OpenCL\n"
           "                   device stays ahead of the cpu backend\n"
           "Each figure is the median of several runs with its spread; a run\n"
           "hashes the same batch back to back for at least --min-time seconds.\n"
           "Every run's digests are compared with OpenSSL's; a difference stops\n"
           "the benchmark with an error.\n\n"
           "  --quick         a small plan (a few seconds): sizes 64,4K,1M,\n"
           "                  batches 1,16,256,4096, runs of 0.02 s; cpu\n"
           "                  implementations: the default and sha-ni\n"
           "  --json          print one JSON document instead of tables\n"
           "  --json-file FILE\n"
           "                  also write that JSON document to FILE\n"
           "  --sizes LIST    message sizes, e.g. 64,4K,1M (suffixes K, M, G;\n"
           "                  up to 1G), or none\n"
           "  --batches LIST  batch sizes of the batch sweep, e.g. 1,64,4K, or none\n"
           "  --backend LIST  any of cpu, opencl, default (default: all three;\n"
           "                  `all`, the former name of the default row, is the\n"
           "                  same as default)\n"
           "  --cpu-impl LIST the CPU implementations of the cpu backend, beside the\n"
           "                  default one (always measured, as `cpu`): any of\n"
           "                  avx512, avx2, portable (multi-buffer lanes), sha-ni\n"
           "                  (OpenSSL, one message at a time), comma-separated;\n"
           "                  `default` for the default one alone; `all` (the\n"
           "                  default without --quick) for every one this CPU runs\n"
           "  --device D      the OpenCL device(s) for `opencl`, as --device of\n"
           "                  `sum` (default: each device, one at a time)\n",
           CLI_PROGRAM);
    printf("  --verify V      verification of the engines: off, sample (default)\n"
           "                  or full\n"
           "  --runs N        timed runs per figure (default 5)\n"
           "  --min-time S    least seconds of one run (default 0.25)\n"
           "  --plot FILE.png draw the results with gnuplot: GB/s by message size\n"
           "                  and messages/s by batch size, log axes\n"
           "  --peer-isal DIR beside the cpu rows, an isa-l_crypto row: the rate of\n"
           "                  isa-l_crypto's multi-buffer SHA-1 (sha1_mb) on as many\n"
           "                  threads as the cpu backend's pool, in every case. DIR is\n"
           "                  an isa-l_crypto install prefix (include/isa-l_crypto.h,\n"
           "                  lib/libisal_crypto.a or .so); bench/isal_peer.c, carried\n"
           "                  in this program, is compiled against it once with $CC\n"
           "                  (default cc) into $XDG_CACHE_HOME/hashbatch/ (default\n"
           "                  ~/.cache/hashbatch/), and checks a sample of its digests\n"
           "                  against OpenSSL's after every run. Never required; the\n"
           "                  default is " PEER_ENV " when set\n"
           "  -h, --help      print this help and exit\n\n"
           "Without OpenCL devices only cpu is measured, and the report says so.\n"
           "HASHBATCH_BACKEND, HASHBATCH_DEVICE and HASHBATCH_CPU_IMPL are ignored:\n"
           "--backend, --device and --cpu-impl choose; HASHBATCH_VERIFY gives the\n"
           "default of --verify, " PEER_ENV " that of --peer-isal.\n\n"
           "Exit status: 0 when every figure was measured, 1 if an engine failed\n"
           "or a digest differed from OpenSSL's, 2 on a usage error (including a\n"
           "--plot or --json-file file that cannot be written, a CPU\n"
           "implementation this CPU does not run, and a --peer-isal or " PEER_ENV "\n"
           "directory that is no isa-l_crypto install); with --peer-isal, 1 also\n"
           "when there is no C compiler, the peer does not compile, or it fails.\n");
}

/* parse_count: one item of a list, with an optional K/M/G suffix. */
static int parse_count(const char *text, size_t len, size_t *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf || text[0] < '0' || text[0] > '9')
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    uint64_t v;
    if (cli_parse_size(buf, &v) != 0 || v > SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int by_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

int bench_parse_list(const char *text, size_t max, bench_list *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    if (strcmp(text, "none") == 0)
        return 0;
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        size_t v;
        if (parse_count(p, len, &v) != 0) {
            snprintf(why, whylen, "'%.*s' is not a number (suffixes K, M, G)", (int)len, p);
            return -1;
        }
        if (v == 0 || v > max) {
            snprintf(why, whylen, "%zu is out of range (1 to %zu)", v, max);
            return -1;
        }
        if (out->n == BENCH_MAX_LIST) {
            snprintf(why, whylen, "more than %d entries", BENCH_MAX_LIST);
            return -1;
        }
        out->v[out->n++] = v;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    qsort(out->v, out->n, sizeof out->v[0], by_size);
    size_t k = 0;
    for (size_t i = 0; i < out->n; i++)
        if (k == 0 || out->v[k - 1] != out->v[i])
            out->v[k++] = out->v[i];
    out->n = k;
    return 0;
}

/* parse_backends: "cpu,opencl,default" into the want_* flags ("all",
 * the default row's former name, is "default"). */
static int parse_backends(const char *text, bench_opts *o)
{
    o->want_cpu = o->want_opencl = o->want_default = 0;
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 3 && strncmp(p, "cpu", 3) == 0)
            o->want_cpu = 1;
        else if (len == 6 && strncmp(p, "opencl", 6) == 0)
            o->want_opencl = 1;
        else if ((len == 7 && strncmp(p, "default", 7) == 0) ||
                 (len == 3 && strncmp(p, "all", 3) == 0))
            o->want_default = 1;
        else
            return cli_usage_error(BENCH_CMD,
                                   "invalid backend '%.*s' in '--backend %s' "
                                   "(valid: cpu, opencl, default, comma-separated)",
                                   (int)len, p, text);
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    o->backends_given = 1;
    return -1;
}

int bench_cpu_impl_index(const char *name)
{
    const char *k_name;
    for (unsigned k = 0; k < BENCH_MAX_CPU_IMPLS && (k_name = hb_cpu_impl_name(k)) != NULL; k++)
        if (strcmp(k_name, name) == 0)
            return (int)k;
    return -1;
}

/* runnable_names: the implementations this CPU runs, ", " between. */
static const char *runnable_names(char *buf, size_t len)
{
    const char *name;
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned k = 0; k < BENCH_MAX_CPU_IMPLS && (name = hb_cpu_impl_name(k)) != NULL; k++)
        if (hb_cpu_impl_runs(name) && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
    return buf;
}

/* take_cpu_impl: one item of --cpu-impl (len bytes at p). Returns -1 to
 * go on, else the exit status of a usage error. */
static int take_cpu_impl(const char *p, size_t len, const char *text, bench_opts *o)
{
    char name[32], runs[128];
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), p);
    if (len == 3 && strncmp(p, "all", 3) == 0) {
        o->cpu_impls_all = 1;
        return -1;
    }
    if (len == 7 && strncmp(p, "default", 7) == 0)
        return -1; /* the "cpu" row, always measured */
    int k = len < sizeof name ? bench_cpu_impl_index(name) : -1;
    if (k < 0)
        return cli_usage_error(BENCH_CMD,
                               "invalid CPU implementation '%.*s' in '--cpu-impl %s' (valid: "
                               "avx512, avx2, portable, sha-ni, default, all, comma-separated)",
                               (int)len, p, text);
    if (!hb_cpu_impl_runs(name))
        return cli_usage_error(BENCH_CMD,
                               "CPU implementation '%s' in '--cpu-impl %s' does not run on this "
                               "CPU (it runs: %s)",
                               name, text, runnable_names(runs, sizeof runs));
    o->cpu_impls |= 1u << k;
    return -1;
}

/* parse_cpu_impls: "avx2,sha-ni", "default" or "all" into the cpu_impl*
 * fields. */
static int parse_cpu_impls(const char *text, bench_opts *o)
{
    o->cpu_impls = 0;
    o->cpu_impls_all = 0;
    o->cpu_impl_arg = text;
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        int rc = take_cpu_impl(p, len, text, o);
        if (rc >= 0)
            return rc;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    return -1;
}

/* set_list: the value of --sizes or --batches. */
static int set_list(const char *opt, const char *text, size_t max, bench_list *out)
{
    char why[128];
    if (bench_parse_list(text, max, out, why, sizeof why) != 0)
        return cli_usage_error(BENCH_CMD, "invalid list '%s' for '--%s': %s", text, opt, why);
    return -1;
}

/* defaults: the plan of a full or a --quick run, before the options. */
static void defaults(bench_opts *o, int quick)
{
    static const size_t full_sizes[] = {64, 256, 1024, 4096, 65536, 1 << 20, 16 << 20};
    static const size_t quick_sizes[] = {64, 4096, 1 << 20};
    static const size_t full_batches[] = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536};
    static const size_t quick_batches[] = {1, 16, 256, 4096};
    const size_t *s = quick ? quick_sizes : full_sizes;
    const size_t *b = quick ? quick_batches : full_batches;
    o->sizes.n = quick ? 3 : 7;
    o->batches.n = quick ? 4 : 9;
    memcpy(o->sizes.v, s, o->sizes.n * sizeof *s);
    memcpy(o->batches.v, b, o->batches.n * sizeof *b);
    o->batch_sizes.n = 2;
    o->batch_sizes.v[0] = 64;
    o->batch_sizes.v[1] = 4096;
    o->runs = 5;
    o->min_time = quick ? 0.02 : 0.25;
    o->target_bytes = quick ? (size_t)4 << 20 : (size_t)256 << 20;
    o->max_count = quick ? 16384 : 1000000;
    o->cpu_impls_all = !quick;
    int sha_ni = bench_cpu_impl_index("sha-ni");
    o->cpu_impls = quick && sha_ni >= 0 ? 1u << sha_ni : 0;
}

/* take: one option of bench other than --quick. Returns -1 to go on. */
static int take(int c, const char *arg, bench_opts *o, char **argv)
{
    char *end;
    switch (c) {
    case OPT_JSON:
        o->json = 1;
        return -1;
    case OPT_SIZES:
        return set_list("sizes", arg, BENCH_MAX_SIZE, &o->sizes);
    case OPT_BATCHES:
        return set_list("batches", arg, BENCH_MAX_BATCH, &o->batches);
    case CLI_OPT_BACKEND:
        return parse_backends(arg, o);
    case OPT_CPU_IMPL:
        return parse_cpu_impls(arg, o);
    case CLI_OPT_DEVICE:
        if (arg[0] == '\0')
            return cli_usage_error(BENCH_CMD, "empty argument for '--device'");
        o->device = arg;
        return -1;
    case CLI_OPT_VERIFY:
        o->engine.verify = arg;
        return -1;
    case OPT_RUNS: {
        errno = 0;
        unsigned long v = strtoul(arg, &end, 10);
        if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 || v < 1 || v > 1000)
            return cli_usage_error(BENCH_CMD, "invalid argument '%s' for '--runs' (1 to 1000)",
                                   arg);
        o->runs = (unsigned)v;
        return -1;
    }
    case OPT_MIN_TIME: {
        errno = 0;
        double v = strtod(arg, &end);
        if (end == arg || *end != '\0' || errno != 0 || !isfinite(v) || v <= 0 || v > 60)
            return cli_usage_error(BENCH_CMD,
                                   "invalid argument '%s' for '--min-time' (seconds, above 0, "
                                   "at most 60)",
                                   arg);
        o->min_time = v;
        return -1;
    }
    case OPT_PLOT:
        if (arg[0] == '\0')
            return cli_usage_error(BENCH_CMD, "empty argument for '--plot'");
        o->plot = arg;
        return -1;
    case OPT_JSON_FILE:
        if (arg[0] == '\0')
            return cli_usage_error(BENCH_CMD, "empty argument for '--json-file'");
        o->json_file = arg;
        return -1;
    case OPT_PEER_ISAL:
        if (arg[0] == '\0')
            return cli_usage_error(BENCH_CMD, "empty argument for '--peer-isal'");
        o->peer_dir = arg;
        o->peer_origin = "--peer-isal";
        return -1;
    case 'h':
    case CLI_OPT_HELP:
        help();
        return cli_finish_stdout(CLI_EXIT_OK);
    default:
        return cli_getopt_error(BENCH_CMD, c, argv);
    }
}

static const struct option longopts[] = {CLI_ENGINE_LONG_OPTIONS,
                                         {"quick", no_argument, NULL, OPT_QUICK},
                                         {"json", no_argument, NULL, OPT_JSON},
                                         {"sizes", required_argument, NULL, OPT_SIZES},
                                         {"batches", required_argument, NULL, OPT_BATCHES},
                                         {"runs", required_argument, NULL, OPT_RUNS},
                                         {"min-time", required_argument, NULL, OPT_MIN_TIME},
                                         {"plot", required_argument, NULL, OPT_PLOT},
                                         {"json-file", required_argument, NULL, OPT_JSON_FILE},
                                         {"cpu-impl", required_argument, NULL, OPT_CPU_IMPL},
                                         {"peer-isal", required_argument, NULL, OPT_PEER_ISAL},
                                         {"help", no_argument, NULL, CLI_OPT_HELP},
                                         {NULL, 0, NULL, 0}};

/* has_quick: is --quick among the options? (It sets the defaults that the
 * other options then change, wherever it stands.) */
static int has_quick(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--quick") == 0)
            return 1;
    return 0;
}

int bench_parse(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->quick = has_quick(argc, argv);
    defaults(o, o->quick);
    o->want_cpu = o->want_opencl = o->want_default = 1;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == OPT_QUICK)
            continue;
        int rc = take(c, optarg, o, argv);
        if (rc >= 0)
            return rc;
    }
    if (optind < argc)
        return cli_usage_error(BENCH_CMD, "extra operand '%s'", argv[optind]);
    const char *env = getenv(PEER_ENV);
    if (o->peer_dir == NULL && env != NULL && env[0] != '\0') {
        o->peer_dir = env;
        o->peer_origin = PEER_ENV;
    }
    if (o->device != NULL && !o->want_opencl)
        return cli_usage_error(BENCH_CMD,
                               "'--device' given ('%s') but '--backend' leaves out opencl, "
                               "the backend it chooses devices for",
                               o->device);
    if (o->cpu_impl_arg != NULL && !o->want_cpu)
        return cli_usage_error(BENCH_CMD,
                               "'--cpu-impl' given ('%s') but '--backend' leaves out cpu, "
                               "the backend it chooses implementations for",
                               o->cpu_impl_arg);
    if (o->sizes.n == 0 && o->batches.n == 0)
        return cli_usage_error(BENCH_CMD, "nothing to measure: --sizes and --batches are both "
                                          "none");
    for (size_t i = 0; i < o->batches.n; i++)
        if (o->batches.v[i] * 4096 > BENCH_MAX_INPUT)
            return cli_usage_error(BENCH_CMD,
                                   "batch %zu of 4 KiB messages is too big (at most "
                                   "%zu)",
                                   o->batches.v[i], BENCH_MAX_INPUT / 4096);
    return -1;
}
