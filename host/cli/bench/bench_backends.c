/*
 * bench_backends.c - the backends `hashbatch bench` measures, one engine
 * each: cpu (the CPU pool with its default implementation), cpu NAME (the
 * pool forced to each other CPU implementation asked for), each OpenCL
 * device alone (or the --device spec), and default: the route `sum` and
 * `dedup` take when nothing is pinned (backend auto, default device:
 * every OpenCL device and the pool under the library's scheduler; the
 * pool alone without OpenCL). It replaces the former "all" row (auto with
 * device "all"), which the scheduler made the same route.
 *
 * Owns: choosing them from --backend, --cpu-impl, --device, the CPU's
 * implementations and the devices present, and opening each engine once
 * (hb_engine_open builds the kernel and runs it once, so no timed batch
 * compiles). Must not: time anything.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* add: appends a backend to open; kind is a static string. */
static bench_backend *add(bench_backends *bs, const char *kind, const char *name,
                          const char *device)
{
    if (bs->n == BENCH_MAX_BACKENDS)
        return NULL;
    bench_backend *b = &bs->b[bs->n++];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    snprintf(b->name, sizeof b->name, "%s", name);
    snprintf(b->device, sizeof b->device, "%s", device);
    return b;
}

/* note: appends one reason to bs->note ("; " between reasons). */
static void note(bench_backends *bs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(bench_backends *bs, const char *fmt, ...)
{
    size_t used = strlen(bs->note);
    if (used > 0 && used + 2 < sizeof bs->note) {
        memcpy(bs->note + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(bs->note + used, sizeof bs->note - used, fmt, ap);
    va_end(ap);
}

/* add_cpu_impl: the "cpu NAME" backend of implementation `name`, if it is
 * asked for, is not the default, and (with --cpu-impl all) runs here. */
static void add_cpu_impl(bench_backends *bs, const bench_opts *o, unsigned k, const char *name)
{
    char row[48];
    if (!o->cpu_impls_all && !(o->cpu_impls & (1u << k)))
        return;
    if (strcmp(name, hb_cpu_impl_default_name()) == 0)
        return; /* that is the "cpu" row */
    if (!hb_cpu_impl_runs(name)) {
        note(bs, "CPU implementation %s does not run on this CPU: skipped", name);
        return;
    }
    snprintf(row, sizeof row, "cpu %s", name);
    bench_backend *b = add(bs, "cpu", row, "");
    if (b == NULL) {
        note(bs, "more than %d backends: %s skipped", BENCH_MAX_BACKENDS, row);
        return;
    }
    b->cpu_impl = name;
    b->cpu_forced = 1;
}

/* add_cpu: "cpu" (the default implementation), then "cpu NAME" for the
 * others asked for, widest lanes first (the library lists them
 * narrowest first, sha-ni at 0). */
static void add_cpu(bench_backends *bs, const bench_opts *o)
{
    bench_backend *b = add(bs, "cpu", "cpu", "");
    if (b == NULL)
        return;
    b->cpu_impl = hb_cpu_impl_default_name();
    unsigned count = 0;
    while (count < BENCH_MAX_CPU_IMPLS && hb_cpu_impl_name(count) != NULL)
        count++;
    for (unsigned k = count; k-- > 0;)
        add_cpu_impl(bs, o, k, hb_cpu_impl_name(k));
}

/* choose: the list of backends, not yet opened. Returns 0, or
 * CLI_EXIT_FAILURE when OpenCL was asked for by name and there is none. */
static int choose(bench_backends *bs, const bench_opts *o, const bench_machine *m)
{
    char name[48];
    if (o->want_cpu)
        add_cpu(bs, o);
    if (o->want_opencl && m->ndev == 0) {
        note(bs, "no OpenCL platform or device found: no opencl backend is measured, and the "
                 "default route is the cpu pool alone");
        if (o->backends_given) {
            cli_error(BENCH_CMD ": no OpenCL platform or device found: cannot measure the "
                                "opencl backend");
            return CLI_EXIT_FAILURE;
        }
    } else if (o->want_opencl && o->device != NULL) {
        snprintf(name, sizeof name, "opencl %.40s", o->device);
        add(bs, "opencl", name, o->device);
    } else if (o->want_opencl) {
        for (size_t i = 0; i < m->ndev; i++) {
            char spec[32];
            snprintf(spec, sizeof spec, "%u:%u", m->dev[i].platform_index, m->dev[i].device_index);
            snprintf(name, sizeof name, "opencl %s", spec);
            if (!m->dev[i].available)
                note(bs, "OpenCL device %s is not available: skipped", spec);
            else if (add(bs, "opencl", name, spec) == NULL) {
                note(bs, "more than %d backends: %s and later skipped", BENCH_MAX_BACKENDS, name);
                break;
            }
        }
    }
    bench_backend *def = o->want_default ? add(bs, "default", "default", "") : NULL;
    if (def != NULL)
        def->cpu_impl = hb_cpu_impl_default_name();
    return CLI_EXIT_OK;
}

/* open_one: the engine of b, with the verification mode of base (and,
 * for a "cpu NAME" row, that CPU implementation);
 * user_spec: b's device is the --device spec, so a spec that matches no
 * device is a usage error. */
static int open_one(bench_backend *b, const hb_config *base, int user_spec)
{
    hb_config cfg = *base;
    cfg.use_environment = 0;
    cfg.cpu_impl = b->cpu_forced ? b->cpu_impl : NULL;
    if (strcmp(b->kind, "cpu") == 0) {
        cfg.backend = HB_BACKEND_CPU;
        cfg.device = NULL;
    } else if (strcmp(b->kind, "default") == 0) {
        cfg.backend = HB_BACKEND_AUTO;
        cfg.device = NULL;
    } else {
        cfg.backend = HB_BACKEND_OPENCL;
        cfg.device = b->device;
    }
    hb_status st = hb_engine_open(&b->engine, &cfg);
    if ((st == HB_ERR_BAD_DEVICE_SPEC && user_spec) ||
        (st == HB_ERR_INVALID_ARGUMENT && cfg.device_cores != NULL))
        return cli_engine_open_failed(BENCH_CMD, &cfg, st, hb_engine_last_error(NULL));
    if (st != HB_OK) {
        const char *detail = hb_engine_last_error(NULL);
        cli_error(BENCH_CMD ": cannot open the %s backend: %s%s%s", b->name, hb_status_str(st),
                  detail[0] ? ": " : "", detail);
        b->engine = NULL;
        return CLI_EXIT_FAILURE;
    }
    snprintf(b->describe, sizeof b->describe, "%s", hb_engine_describe(b->engine));
    return CLI_EXIT_OK;
}

int bench_backends_open(bench_backends *bs, const bench_opts *o, const bench_machine *m,
                        const hb_config *base)
{
    memset(bs, 0, sizeof *bs);
    int rc = choose(bs, o, m);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (bs->n == 0) {
        cli_error(BENCH_CMD ": no backend to measure");
        return CLI_EXIT_FAILURE;
    }
    for (size_t i = 0; i < bs->n && rc == CLI_EXIT_OK; i++)
        rc = open_one(&bs->b[i], base, o->device != NULL && strcmp(bs->b[i].kind, "opencl") == 0);
    if (rc != CLI_EXIT_OK)
        bench_backends_close(bs);
    return rc;
}

void bench_backends_close(bench_backends *bs)
{
    for (size_t i = 0; i < bs->n; i++) {
        hb_engine_close(bs->b[i].engine);
        bs->b[i].engine = NULL;
    }
}
