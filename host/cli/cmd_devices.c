/*
 * cmd_devices.c - `hashbatch devices [--json] [--calibrate]`: every
 * OpenCL platform and device the library sees, the CPU pool (the
 * implementation it hashes with, and every CPU implementation and whether
 * this CPU runs it), and what `auto` would pick; as text or as one JSON
 * document. With --calibrate, also the cost model of each backend of an
 * engine opened with a fresh calibration (backend auto unless the engine
 * options say otherwise).
 *
 * Owns: the options, help and both output formats of `devices`, reading
 * HASHBATCH_CPU_IMPL the way an engine would, and with --calibrate the
 * engine's life (open with calibrate = 1, one stats snapshot, close).
 * Must not: open an engine or build kernels without --calibrate
 * (hb_devices_list only queries), format the models itself
 * (engine_report.c does), or decide which device `auto` picks or which
 * CPU implementation is the default: the library's auto_pick flag and
 * hb_cpu_impl_default_name say so.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <time.h>

#include "cli.h"
#include "engine_report.h"

#define CMD "devices"
#define CPU_IMPL_ENV "HASHBATCH_CPU_IMPL"
#define MAX_CPU_IMPLS 8

enum { OPT_JSON = CLI_OPT_FIRST_LOCAL, OPT_CALIBRATE, OPT_CPU_IMPL };

/* What the command reports. */
typedef struct {
    hb_device_info *dev;
    size_t count;
    unsigned cpu_threads;
    int sha_ni;
    const hb_device_info *pick;      /* the device auto uses, NULL: cpu pool */
    const char *cpu_impl;            /* the implementation the pool uses */
    int cpu_impl_from_env;           /* 1: HASHBATCH_CPU_IMPL chose it */
    const char *cpu_default;         /* the library's default implementation */
    const char *impl[MAX_CPU_IMPLS]; /* every implementation, widest first */
    size_t nimpl;
} devices_report;

/* The options of `devices`. */
typedef struct {
    int json;
    int calibrate;
    cli_engine_opts engine; /* --backend, --device, --verify */
    const char *cpu_impl;   /* --cpu-impl, or NULL */
    const char *engine_opt; /* the first engine option given, for messages */
} devices_opts;

/* What --calibrate found. */
typedef struct {
    hb_stats stats;
    char describe[512];
    double open_ms; /* hb_engine_open's wall time */
} devices_calibration;

static void help(void)
{
    printf("Usage: %s " CMD " [--json] [--calibrate [ENGINE OPTION]...]\n"
           "List every OpenCL platform and device, the CPU pool (which CPU\n"
           "implementation it hashes with, and which ones this CPU runs), and\n"
           "what `--backend auto` picks (a GPU, else the pocl OpenCL CPU device,\n"
           "else the CPU pool).\n\n"
           "  --json       print one JSON document instead of text\n"
           "  --calibrate  also open an engine (by default backend auto: every\n"
           "               OpenCL device and the CPU pool under the scheduler),\n"
           "               calibrating its cost models afresh (tens of ms) and\n"
           "               storing them in the model cache, and print each\n"
           "               backend's model per class of work (short: mean message\n"
           "               under 1 KiB, mid: under 256 KiB, long): the predicted\n"
           "               time of a batch of n messages of b bytes is\n"
           "               fixed + n x per message + b x per byte; the table gives\n"
           "               fixed (us), per message (ns), per byte (ns) and the\n"
           "               GB/s that per byte implies, then the calibration time\n"
           "               (with --json: a \"calibration\" object)\n"
           "  -h, --help   print this help and exit\n\n"
           "Engine options (with --calibrate only):\n" CLI_ENGINE_OPTIONS_HELP
           "  --cpu-impl I  the CPU pool's implementation: avx512, avx2, portable or\n"
           "                sha-ni (default: HASHBATCH_CPU_IMPL, else the fastest)\n\n"
           "HASHBATCH_CPU_IMPL (avx512, avx2, portable or sha-ni) names the pool's\n"
           "implementation instead of the default; one that is unknown or does\n"
           "not run on this CPU is a usage error. HASHBATCH_MODEL_CACHE=PATH picks\n"
           "the model cache (default $XDG_CACHE_HOME/hashbatch/models.txt), =off\n"
           "uses none.\n" CLI_ENGINE_ENV_HELP,
           CLI_PROGRAM);
}

/* field: a fixed-size string field of hb_device_info, never unterminated. */
#define FIELD(d, f) (int)strnlen((d)->f, sizeof(d)->f), (d)->f

/* is_pocl: does the device belong to the pocl platform? */
static int is_pocl(const hb_device_info *d)
{
    return strstr(d->platform_name, "Portable Computing Language") != NULL ||
           strcasestr(d->platform_name, "pocl") != NULL || strcasestr(d->version, "pocl") != NULL;
}

/* impl_lanes: the lanes of a multi-buffer implementation, as hashbatch.h
 * documents them for hb_config.cpu_impl; 0 for sha-ni (one message at a
 * time). The library has no call for it; tests/cli/test_bench.py checks
 * these against each engine's own description. */
static unsigned impl_lanes(const char *name)
{
    static const struct {
        const char *name;
        unsigned lanes;
    } lanes[] = {{"avx512", 16}, {"avx2", 8}, {"portable", 4}};
    for (size_t i = 0; i < sizeof lanes / sizeof lanes[0]; i++)
        if (strcmp(name, lanes[i].name) == 0)
            return lanes[i].lanes;
    return 0;
}

/* impl_list: every implementation the library names, ", " between. */
static const char *impl_list(const devices_report *r, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->nimpl && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", r->impl[i]);
    return buf;
}

/* collect_cpu_impls: the implementations, the default, and the one the
 * pool uses (HASHBATCH_CPU_IMPL, else the default). Returns -1 to go
 * on, else the exit status of a usage error (a bad HASHBATCH_CPU_IMPL). */
static int collect_cpu_impls(devices_report *r)
{
    unsigned count = 0;
    while (count < MAX_CPU_IMPLS && hb_cpu_impl_name(count) != NULL)
        count++;
    for (unsigned k = count; k-- > 0;) /* the library lists sha-ni first */
        r->impl[r->nimpl++] = hb_cpu_impl_name(k);
    r->cpu_default = hb_cpu_impl_default_name();
    r->cpu_impl = r->cpu_default;
    const char *env = getenv(CPU_IMPL_ENV);
    if (env == NULL || env[0] == '\0')
        return -1;
    char all[128];
    for (size_t i = 0; i < r->nimpl; i++) {
        if (strcmp(env, r->impl[i]) != 0)
            continue;
        if (!hb_cpu_impl_runs(env))
            return cli_usage_error(CMD, "invalid %s value '%s': it does not run on this CPU",
                                   CPU_IMPL_ENV, env);
        r->cpu_impl = r->impl[i];
        r->cpu_impl_from_env = 1;
        return -1;
    }
    return cli_usage_error(CMD, "invalid %s value '%s' (valid: %s)", CPU_IMPL_ENV, env,
                           impl_list(r, all, sizeof all));
}

/* collect: fills r's devices and pool size (r zeroed before); returns 0,
 * or CLI_EXIT_FAILURE after reporting. */
static int collect(devices_report *r)
{
    hb_status st = hb_devices_list(NULL, 0, &r->count);
    if (st == HB_OK && r->count > 0) {
        r->dev = calloc(r->count, sizeof *r->dev);
        if (r->dev == NULL) {
            cli_error("%s", hb_status_str(HB_ERR_NO_MEMORY));
            return CLI_EXIT_FAILURE;
        }
        size_t total = 0;
        st = hb_devices_list(r->dev, r->count, &total);
        if (total < r->count)
            r->count = total; /* a device went away between the calls */
    }
    if (st != HB_OK) {
        const char *detail = hb_engine_last_error(NULL);
        cli_error("cannot list OpenCL devices: %s%s%s", hb_status_str(st), detail[0] ? ": " : "",
                  detail);
        free(r->dev);
        return CLI_EXIT_FAILURE;
    }
    for (size_t i = 0; i < r->count && r->pick == NULL; i++)
        if (r->dev[i].auto_pick)
            r->pick = &r->dev[i];
    r->cpu_threads = hb_cpu_threads_default();
    r->sha_ni = hb_cpu_has_sha_ni();
    return CLI_EXIT_OK;
}

/* pool_how: how the pool hashes, "avx512 multi-buffer (16 lanes) +
 * OpenSSL" or "OpenSSL", into buf. */
static const char *pool_how(const devices_report *r, char *buf, size_t len)
{
    unsigned lanes = impl_lanes(r->cpu_impl);
    if (lanes > 0)
        snprintf(buf, len, "%s multi-buffer (%u lanes) + OpenSSL", r->cpu_impl, lanes);
    else
        snprintf(buf, len, "OpenSSL");
    return buf;
}

/* text_cpu_impls: "cpu implementations: avx512 (default), avx2, ...",
 * and those this CPU does not run. */
static void text_cpu_impls(const devices_report *r)
{
    printf("cpu implementations:");
    const char *sep = " ";
    for (size_t i = 0; i < r->nimpl; i++) {
        if (!hb_cpu_impl_runs(r->impl[i]))
            continue;
        printf("%s%s%s", sep, r->impl[i], strcmp(r->impl[i], r->cpu_default) ? "" : " (default)");
        sep = ", ";
    }
    sep = "; not on this CPU: ";
    for (size_t i = 0; i < r->nimpl; i++) {
        if (hb_cpu_impl_runs(r->impl[i]))
            continue;
        printf("%s%s", sep, r->impl[i]);
        sep = ", ";
    }
    putchar('\n');
}

/* put_bytes: n as "7.6 GiB (8123456789 bytes)". */
static void put_bytes(uint64_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof unit / sizeof unit[0]) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        printf("%" PRIu64 " B", n);
    else
        printf("%.1f %s (%" PRIu64 " bytes)", v, unit[u], n);
}

/* auto_reason: why auto picks r->pick, in words. */
static const char *auto_reason(const devices_report *r)
{
    if (r->pick == NULL)
        return r->count == 0 ? "no OpenCL device" : "no usable OpenCL device";
    if (r->pick->type == HB_DEVICE_GPU)
        return "a GPU";
    if (r->pick->type == HB_DEVICE_CPU)
        return is_pocl(r->pick) ? "no GPU; the pocl OpenCL CPU device"
                                : "no GPU; an OpenCL CPU device";
    return "an OpenCL device";
}

static void text_device(const hb_device_info *d)
{
    printf("  %u:%u  %.*s%s\n", d->platform_index, d->device_index, FIELD(d, name),
           d->auto_pick ? "  [auto]" : "");
    printf("       platform:      %.*s (vendor: %.*s)\n", FIELD(d, platform_name),
           FIELD(d, vendor));
    printf("       type:          %s, %" PRIu32 " compute units, %" PRIu32 " MHz\n",
           hb_device_type_name(d->type), d->compute_units, d->max_clock_mhz);
    printf("       global memory: ");
    put_bytes(d->global_mem_bytes);
    printf("\n       max alloc:     ");
    put_bytes(d->max_alloc_bytes);
    printf("\n       OpenCL:        %.*s\n", FIELD(d, version));
    printf("       driver:        %.*s\n", FIELD(d, driver_version));
    printf("       available:     %s\n", d->available ? "yes" : "no");
}

/* env_note: mentions environment variables that change what sum does. */
static void env_note(void)
{
    static const char *const vars[] = {"HASHBATCH_BACKEND", "HASHBATCH_DEVICE", "HASHBATCH_VERIFY",
                                       CPU_IMPL_ENV, "HASHBATCH_DEVICE_CORES"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0')
            printf("note: %s=%s is set; it changes what other commands use\n", vars[i], v);
    }
}

/* calibrate_text: the models after the usual listing. */
static void calibrate_text(const devices_calibration *c)
{
    const hb_stats *st = &c->stats;
    printf("\ncost models (");
    if (st->models_from_cache)
        printf("from the model cache");
    else
        printf("calibrated at open in %.1f ms", (double)st->calibration_ns * 1e-6);
    printf("; engine opened in %.0f ms):\n  engine: %s\n", c->open_ms, c->describe);
    engine_report_models_table(stdout, st, "  ");
    for (unsigned i = 0; i < st->ndevices && i < HB_STATS_MAX_DEVICES; i++)
        if (!st->device[i].takes_jobs)
            printf("  (%.*s takes no jobs: it only finishes work a faulty device hands back)\n",
                   (int)strnlen(st->device[i].name, sizeof st->device[i].name), st->device[i].name);
}

/* calibrate_json: the "calibration" member (no newline after it). */
static void calibrate_json(const devices_calibration *c)
{
    const hb_stats *st = &c->stats;
    printf("  \"calibration\": {\n    \"engine\": ");
    json_put_string(stdout, c->describe, sizeof c->describe);
    printf(",\n    \"open_ms\": %.3f,\n    \"calibration_ms\": %.3f,\n"
           "    \"models_from_cache\": %s,\n    \"backends\": ",
           c->open_ms, (double)st->calibration_ns * 1e-6, st->models_from_cache ? "true" : "false");
    engine_report_models_json(stdout, st, "    ");
    printf("\n  }");
}

static void print_text(const devices_report *r)
{
    if (r->count == 0) {
        printf("OpenCL devices: none (no OpenCL platform or device found)\n");
    } else {
        printf("OpenCL devices (%zu):\n", r->count);
        for (size_t i = 0; i < r->count; i++)
            text_device(&r->dev[i]);
    }
    char how[96];
    printf("cpu: %s, %u thread%s, SHA-NI %s%s\n", pool_how(r, how, sizeof how), r->cpu_threads,
           r->cpu_threads == 1 ? "" : "s", r->sha_ni ? "yes" : "no",
           r->cpu_impl_from_env ? " (" CPU_IMPL_ENV ")" : "");
    text_cpu_impls(r);
    if (r->pick != NULL) {
        printf("auto: every backend, under the scheduler:");
        for (size_t i = 0; i < r->count; i++)
            if (r->dev[i].available)
                printf(" opencl %u:%u %.*s,", r->dev[i].platform_index, r->dev[i].device_index,
                       FIELD(&r->dev[i], name));
        printf(" and the cpu pool (--backend opencl alone: opencl %u:%u, %s)\n",
               r->pick->platform_index, r->pick->device_index, auto_reason(r));
    } else
        printf("auto: cpu pool, %s, %u thread%s (%s)\n", how, r->cpu_threads,
               r->cpu_threads == 1 ? "" : "s", auto_reason(r));
    env_note();
}

/* json_key_str: "key": "value" with a fixed-size field. */
static void json_key_str(const char *key, const char *value, size_t max, int last)
{
    printf("      \"%s\": ", key);
    json_put_string(stdout, value, max);
    printf(last ? "\n" : ",\n");
}

#define JSON_FIELD(key, d, f) json_key_str(key, (d)->f, sizeof(d)->f, 0)

static void json_device(const hb_device_info *d, int last)
{
    printf("    {\n");
    printf("      \"id\": \"%u:%u\",\n", d->platform_index, d->device_index);
    printf("      \"platform_index\": %u,\n", d->platform_index);
    printf("      \"device_index\": %u,\n", d->device_index);
    JSON_FIELD("name", d, name);
    JSON_FIELD("platform", d, platform_name);
    JSON_FIELD("vendor", d, vendor);
    printf("      \"type\": \"%s\",\n", hb_device_type_name(d->type));
    printf("      \"pocl\": %s,\n", is_pocl(d) ? "true" : "false");
    printf("      \"compute_units\": %" PRIu32 ",\n", d->compute_units);
    printf("      \"max_clock_mhz\": %" PRIu32 ",\n", d->max_clock_mhz);
    printf("      \"global_mem_bytes\": %" PRIu64 ",\n", d->global_mem_bytes);
    printf("      \"max_alloc_bytes\": %" PRIu64 ",\n", d->max_alloc_bytes);
    JSON_FIELD("opencl_version", d, version);
    JSON_FIELD("driver_version", d, driver_version);
    printf("      \"available\": %s,\n", d->available ? "true" : "false");
    printf("      \"auto_pick\": %s\n", d->auto_pick ? "true" : "false");
    printf("    }%s\n", last ? "" : ",");
}

/* json_cpu: the "cpu" object: the pool and every CPU implementation. */
static void json_cpu(const devices_report *r)
{
    printf("  \"cpu\": {\"library\": \"OpenSSL\", \"threads\": %u, \"sha_ni\": %s,\n",
           r->cpu_threads, r->sha_ni ? "true" : "false");
    printf("          \"cpu_impl\": \"%s\", \"lanes\": %u, \"cpu_impl_from\": %s,\n", r->cpu_impl,
           impl_lanes(r->cpu_impl), r->cpu_impl_from_env ? "\"" CPU_IMPL_ENV "\"" : "null");
    printf("          \"cpu_impl_default\": \"%s\", \"cpu_impls\": [", r->cpu_default);
    for (size_t i = 0; i < r->nimpl; i++)
        printf("%s\n            {\"name\": \"%s\", \"lanes\": %u, \"runs\": %s, \"default\": %s}",
               i ? "," : "", r->impl[i], impl_lanes(r->impl[i]),
               hb_cpu_impl_runs(r->impl[i]) ? "true" : "false",
               strcmp(r->impl[i], r->cpu_default) == 0 ? "true" : "false");
    printf("]},\n");
}

static void print_json(const devices_report *r, const devices_calibration *cal)
{
    printf("{\n  \"version\": ");
    json_put_string(stdout, hb_version_string(), SIZE_MAX);
    printf(",\n  \"opencl_devices\": [%s", r->count ? "\n" : "");
    for (size_t i = 0; i < r->count; i++)
        json_device(&r->dev[i], i + 1 == r->count);
    printf("%s],\n", r->count ? "  " : "");
    json_cpu(r);
    printf("  \"auto\": {\"backend\": \"%s\", \"device\": ", r->pick ? "opencl" : "cpu");
    if (r->pick != NULL) {
        printf("\"%u:%u\", \"name\": ", r->pick->platform_index, r->pick->device_index);
        json_put_string(stdout, r->pick->name, sizeof r->pick->name);
    } else {
        printf("null, \"name\": null");
    }
    printf(", \"reason\": \"%s\"}", auto_reason(r));
    if (cal != NULL) {
        printf(",\n");
        calibrate_json(cal);
    }
    printf("\n}\n");
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* calibrate: opens an engine from the options with calibrate = 1, keeps
 * its description and stats, closes it. Returns CLI_EXIT_OK, or the exit
 * status after reporting. */
static int calibrate(const devices_opts *o, devices_calibration *c)
{
    hb_config cfg;
    int rc = cli_engine_config(&o->engine, CMD, &cfg);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (o->cpu_impl != NULL)
        cfg.cpu_impl = o->cpu_impl;
    cfg.calibrate = 1;
    hb_engine *e = NULL;
    double t0 = now_ms();
    if ((rc = cli_engine_open(&cfg, CMD, &e)) != CLI_EXIT_OK)
        return rc;
    c->open_ms = now_ms() - t0;
    snprintf(c->describe, sizeof c->describe, "%s", hb_engine_describe(e));
    hb_status st = hb_engine_stats(e, &c->stats);
    hb_engine_close(e);
    if (st != HB_OK) {
        cli_error("cannot read the engine's models: %s", hb_status_str(st));
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

/* take_cpu_impl: --cpu-impl's value, which this CPU must run. */
static int take_cpu_impl(devices_opts *o, const char *value)
{
    if (!hb_cpu_impl_runs(value))
        return cli_cpu_impl_invalid(CMD, NULL, value);
    o->cpu_impl = value;
    return -1;
}

/* take: one option. Returns -1 to go on, else the exit status. */
static int take(devices_opts *o, int c, char **argv)
{
    static const char *const names[] = {"--backend", "--device", "--verify"};
    if (cli_engine_opts_take(&o->engine, c, optarg)) {
        if (o->engine_opt == NULL)
            o->engine_opt = names[c - CLI_OPT_BACKEND];
        return -1;
    }
    switch (c) {
    case OPT_JSON:
        o->json = 1;
        return -1;
    case OPT_CALIBRATE:
        o->calibrate = 1;
        return -1;
    case OPT_CPU_IMPL:
        if (o->engine_opt == NULL)
            o->engine_opt = "--cpu-impl";
        return take_cpu_impl(o, optarg);
    case 'h':
    case CLI_OPT_HELP:
        help();
        return cli_finish_stdout(CLI_EXIT_OK);
    default:
        return cli_getopt_error(CMD, c, argv);
    }
}

/* parse: options of `devices`. Returns -1 to go on, else the exit
 * status. */
static int parse(int argc, char **argv, devices_opts *o)
{
    static const struct option longopts[] = {CLI_ENGINE_LONG_OPTIONS,
                                             {"json", no_argument, NULL, OPT_JSON},
                                             {"calibrate", no_argument, NULL, OPT_CALIBRATE},
                                             {"cpu-impl", required_argument, NULL, OPT_CPU_IMPL},
                                             {"help", no_argument, NULL, CLI_OPT_HELP},
                                             {NULL, 0, NULL, 0}};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        int rc = take(o, c, argv);
        if (rc >= 0)
            return rc;
    }
    if (optind < argc)
        return cli_usage_error(CMD, "extra operand '%s'", argv[optind]);
    if (o->engine_opt != NULL && !o->calibrate)
        return cli_usage_error(CMD, "the engine option '%s' is meaningful only with --calibrate",
                               o->engine_opt);
    return -1;
}

int cmd_devices(int argc, char **argv)
{
    devices_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    /* A bad HASHBATCH_BACKEND or HASHBATCH_VERIFY is the usage error it is
     * for every other command (without --calibrate devices opens no
     * engine, so the device spec is only noted). */
    cli_engine_opts none = {NULL, NULL, NULL};
    hb_config unused;
    if ((rc = cli_engine_config(o.calibrate ? &o.engine : &none, CMD, &unused)) != CLI_EXIT_OK)
        return rc;
    devices_report r;
    memset(&r, 0, sizeof r);
    if ((rc = collect_cpu_impls(&r)) >= 0)
        return rc;
    static devices_calibration cal; /* large: kept off the stack */
    memset(&cal, 0, sizeof cal);
    if (o.calibrate && (rc = calibrate(&o, &cal)) != CLI_EXIT_OK)
        return rc;
    rc = collect(&r);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (o.json) {
        print_json(&r, o.calibrate ? &cal : NULL);
    } else {
        print_text(&r);
        if (o.calibrate)
            calibrate_text(&cal);
    }
    free(r.dev);
    return cli_finish_stdout(CLI_EXIT_OK);
}
