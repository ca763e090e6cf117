/*
 * cmd_devices.c - `hashbatch devices [--json]`: every OpenCL platform and
 * device the library sees, the CPU pool, and what `auto` would pick; as
 * text or as one JSON document.
 *
 * Owns: the options, help and both output formats of `devices`.
 * Must not: open an engine or build kernels (hb_devices_list only
 * queries), or decide itself which device `auto` picks: the library's
 * auto_pick flag says so.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

#define CMD "devices"

enum { OPT_JSON = CLI_OPT_FIRST_LOCAL };

/* What the command reports. */
typedef struct {
    hb_device_info *dev;
    size_t count;
    unsigned cpu_threads;
    int sha_ni;
    const hb_device_info *pick; /* the device auto uses, NULL: cpu pool */
} devices_report;

static void help(void)
{
    printf("Usage: %s " CMD " [--json]\n"
           "List every OpenCL platform and device, the CPU pool, and what\n"
           "`--backend auto` picks (a GPU, else the pocl OpenCL CPU device,\n"
           "else the CPU pool).\n\n"
           "  --json     print one JSON document instead of text\n"
           "  -h, --help print this help and exit\n",
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

/* collect: fills r; returns 0, or CLI_EXIT_FAILURE after reporting. */
static int collect(devices_report *r)
{
    memset(r, 0, sizeof *r);
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
    static const char *const vars[] = {"HASHBATCH_BACKEND", "HASHBATCH_DEVICE", "HASHBATCH_VERIFY"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0')
            printf("note: %s=%s is set; it changes what other commands use\n", vars[i], v);
    }
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
    printf("cpu: OpenSSL, %u threads, SHA-NI %s\n", r->cpu_threads, r->sha_ni ? "yes" : "no");
    if (r->pick != NULL)
        printf("auto: opencl %u:%u %.*s (%s)\n", r->pick->platform_index, r->pick->device_index,
               FIELD(r->pick, name), auto_reason(r));
    else
        printf("auto: cpu pool, OpenSSL, %u threads (%s)\n", r->cpu_threads, auto_reason(r));
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

static void print_json(const devices_report *r)
{
    printf("{\n  \"version\": ");
    json_put_string(stdout, hb_version_string(), SIZE_MAX);
    printf(",\n  \"opencl_devices\": [%s", r->count ? "\n" : "");
    for (size_t i = 0; i < r->count; i++)
        json_device(&r->dev[i], i + 1 == r->count);
    printf("%s],\n", r->count ? "  " : "");
    printf("  \"cpu\": {\"library\": \"OpenSSL\", \"threads\": %u, "
           "\"sha_ni\": %s},\n",
           r->cpu_threads, r->sha_ni ? "true" : "false");
    printf("  \"auto\": {\"backend\": \"%s\", \"device\": ", r->pick ? "opencl" : "cpu");
    if (r->pick != NULL) {
        printf("\"%u:%u\", \"name\": ", r->pick->platform_index, r->pick->device_index);
        json_put_string(stdout, r->pick->name, sizeof r->pick->name);
    } else {
        printf("null, \"name\": null");
    }
    printf(", \"reason\": \"%s\"}\n}\n", auto_reason(r));
}

/* parse: options of `devices`; *json set by --json. Returns -1 to go on,
 * else the exit status. */
static int parse(int argc, char **argv, int *json)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, OPT_JSON},
                                             {"help", no_argument, NULL, CLI_OPT_HELP},
                                             {NULL, 0, NULL, 0}};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_JSON:
            *json = 1;
            break;
        case 'h':
        case CLI_OPT_HELP:
            help();
            return cli_finish_stdout(CLI_EXIT_OK);
        default:
            return cli_getopt_error(CMD, c, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(CMD, "extra operand '%s'", argv[optind]);
    return -1;
}

int cmd_devices(int argc, char **argv)
{
    int json = 0;
    int rc = parse(argc, argv, &json);
    if (rc >= 0)
        return rc;
    /* A bad HASHBATCH_BACKEND or HASHBATCH_VERIFY is the usage error it is
     * for every other command (devices opens no engine, so the device
     * spec is only noted). */
    cli_engine_opts none = {NULL, NULL, NULL};
    hb_config unused;
    if ((rc = cli_engine_config(&none, CMD, &unused)) != CLI_EXIT_OK)
        return rc;
    devices_report r;
    rc = collect(&r);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (json)
        print_json(&r);
    else
        print_text(&r);
    free(r.dev);
    return cli_finish_stdout(CLI_EXIT_OK);
}
