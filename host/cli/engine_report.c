/*
 * engine_report.c - the scheduler's decisions and cost models, as the CLI
 * shows them (engine_report.h): `sum -v` and `dedup -v` print a line per
 * backend that took part, `devices --calibrate` a table or JSON of every
 * model.
 *
 * Owns: reading one hb_stats snapshot into those lines (shares of the
 * work, the model of the class a backend mostly did, predicted against
 * measured time) and the number formats they use. Must not: call the
 * engine (callers bring the snapshot), or print anywhere but the stream
 * it is given.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "engine_report.h"

/* Class bounds on the mean message length, as hashbatch.h documents
 * them for HB_COST_CLASSES. */
#define SHORT_BELOW 1024u
#define MID_BELOW (256u << 10)

unsigned engine_report_class_of(uint64_t messages, uint64_t bytes)
{
    uint64_t mean = messages > 0 ? bytes / messages : 0;
    return mean < SHORT_BELOW ? 0u : mean < MID_BELOW ? 1u : 2u;
}

int engine_report_took_part(const hb_device_stats *d)
{
    return d->messages > 0 || d->takes_jobs;
}

/* num: v with about three significant digits and no exponent ("0.312",
 * "85.3", "1234"), "-" when it is not a finite number >= 0. */
static const char *num(double v, char *buf, size_t len)
{
    if (!isfinite(v) || v < 0)
        snprintf(buf, len, "-");
    else if (v == 0 || v >= 100)
        snprintf(buf, len, "%.0f", v);
    else if (v >= 10)
        snprintf(buf, len, "%.1f", v);
    else if (v >= 1)
        snprintf(buf, len, "%.2f", v);
    else if (v >= 0.001)
        snprintf(buf, len, "%.3f", v);
    else
        snprintf(buf, len, "%.2g", v);
    return buf;
}

/* gbps: the rate a per-byte term implies (1 ns per byte is 1 GB/s), or
 * "-" when the term is 0. */
static const char *gbps(double ns_per_byte, char *buf, size_t len)
{
    if (!(ns_per_byte > 0) || !isfinite(ns_per_byte))
        return num(-1, buf, len);
    return num(1.0 / ns_per_byte, buf, len);
}

/* share: part of whole as a percentage, one decimal. */
static double share(uint64_t part, uint64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

void engine_report_origin(FILE *f, const hb_stats *st)
{
    if (st->models_from_cache)
        fprintf(f, "%s: cost models: from the model cache\n", CLI_PROGRAM);
    else if (st->calibration_ns > 0)
        fprintf(f, "%s: cost models: calibrated at open in %.1f ms\n", CLI_PROGRAM,
                (double)st->calibration_ns * 1e-6);
    else
        fprintf(f, "%s: cost models: neither calibrated at open nor from the cache\n", CLI_PROGRAM);
}

/* put_model: "long model 52.0 us + 85.3 ns/msg + 0.312 ns/B (3.21 GB/s)". */
static void put_model(FILE *f, unsigned c, const hb_cost_terms *t)
{
    char a[32], b[32], d[32], g[32];
    fprintf(f, "%s model %s us + %s ns/msg + %s ns/B (%s GB/s)", hb_cost_class_name(c),
            num(t->fixed_ns * 1e-3, a, sizeof a), num(t->ns_per_message, b, sizeof b),
            num(t->ns_per_byte, d, sizeof d), gbps(t->ns_per_byte, g, sizeof g));
}

/* put_timing: "predicted 120 ms, measured 131 ms (1.09x)". */
static void put_timing(FILE *f, const hb_device_stats *d)
{
    char a[32], b[32];
    if (d->predicted_ns == 0 && d->measured_ns == 0) {
        fputs("no predicted batches", f);
        return;
    }
    fprintf(f, "predicted %s ms, measured %s ms", num((double)d->predicted_ns * 1e-6, a, sizeof a),
            num((double)d->measured_ns * 1e-6, b, sizeof b));
    if (d->predicted_ns > 0)
        fprintf(f, " (%.2fx)", (double)d->measured_ns / (double)d->predicted_ns);
}

/* backend_line: one backend's line; run_class is the class of the whole
 * run, shown for a backend that did nothing. */
static void backend_line(FILE *f, const hb_device_stats *d, uint64_t messages, uint64_t bytes,
                         unsigned run_class)
{
    unsigned c = d->messages > 0 ? engine_report_class_of(d->messages, d->bytes) : run_class;
    fprintf(f,
            "%s:   %.*s: %" PRIu64 " messages (%.1f%%), %" PRIu64 " bytes (%.1f%%), %" PRIu64
            " batches",
            CLI_PROGRAM, (int)strnlen(d->name, sizeof d->name), d->name, d->messages,
            share(d->messages, messages), d->bytes, share(d->bytes, bytes), d->batches);
    if (!d->is_cpu)
        fprintf(f, ", %" PRIu64 " launches", d->launches);
    fprintf(f, ", busy %.3f s", (double)d->busy_ns * 1e-9);
    if (d->errors > 0)
        fprintf(f, ", %" PRIu64 " errors", d->errors);
    if (d->quarantined)
        fputs(", quarantined", f);
    if (!d->takes_jobs)
        fputs(", takes no jobs", f);
    fputs("; ", f);
    put_model(f, c, &d->model[c]);
    fputs("; ", f);
    put_timing(f, d);
    fputc('\n', f);
}

void engine_report_backends(FILE *f, const hb_stats *st)
{
    uint64_t messages = 0, bytes = 0;
    unsigned n = st->ndevices < HB_STATS_MAX_DEVICES ? st->ndevices : HB_STATS_MAX_DEVICES;
    for (unsigned i = 0; i < n; i++) {
        messages += st->device[i].messages;
        bytes += st->device[i].bytes;
    }
    unsigned run_class = engine_report_class_of(messages, bytes);
    for (unsigned i = 0; i < n; i++)
        if (engine_report_took_part(&st->device[i]))
            backend_line(f, &st->device[i], messages, bytes, run_class);
}

/* name_width: the widest backend name, at least that of the header. */
static int name_width(const hb_stats *st, unsigned n)
{
    int w = (int)strlen("backend");
    for (unsigned i = 0; i < n; i++) {
        int len = (int)strnlen(st->device[i].name, sizeof st->device[i].name);
        w = len > w ? len : w;
    }
    return w;
}

void engine_report_models_table(FILE *f, const hb_stats *st, const char *indent)
{
    unsigned n = st->ndevices < HB_STATS_MAX_DEVICES ? st->ndevices : HB_STATS_MAX_DEVICES;
    int w = name_width(st, n);
    fprintf(f, "%s%-*s  %-5s  %10s  %16s  %13s  %8s\n", indent, w, "backend", "class", "fixed (us)",
            "per message (ns)", "per byte (ns)", "GB/s");
    for (unsigned i = 0; i < n; i++) {
        const hb_device_stats *d = &st->device[i];
        for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
            const hb_cost_terms *t = &d->model[c];
            char a[32], b[32], p[32], g[32];
            fprintf(f, "%s%-*.*s  %-5s  %10s  %16s  %13s  %8s\n", indent, w,
                    c == 0 ? (int)strnlen(d->name, sizeof d->name) : 0, d->name,
                    hb_cost_class_name(c), num(t->fixed_ns * 1e-3, a, sizeof a),
                    num(t->ns_per_message, b, sizeof b), num(t->ns_per_byte, p, sizeof p),
                    gbps(t->ns_per_byte, g, sizeof g));
        }
    }
}

/* json_num: a finite number, or null. */
static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

/* json_models: one backend's "models" array. */
static void json_models(FILE *f, const hb_device_stats *d, const char *indent)
{
    fputs("\"models\": [", f);
    for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
        const hb_cost_terms *t = &d->model[c];
        fprintf(f, "%s\n%s    {\"class\": \"%s\", \"fixed_ns\": ", c ? "," : "", indent,
                hb_cost_class_name(c));
        json_num(f, t->fixed_ns);
        fputs(", \"ns_per_message\": ", f);
        json_num(f, t->ns_per_message);
        fputs(", \"ns_per_byte\": ", f);
        json_num(f, t->ns_per_byte);
        fputs(", \"gb_per_s\": ", f);
        if (t->ns_per_byte > 0 && isfinite(t->ns_per_byte))
            json_num(f, 1.0 / t->ns_per_byte);
        else
            fputs("null", f);
        fputc('}', f);
    }
    fputc(']', f);
}

void engine_report_models_json(FILE *f, const hb_stats *st, const char *indent)
{
    unsigned n = st->ndevices < HB_STATS_MAX_DEVICES ? st->ndevices : HB_STATS_MAX_DEVICES;
    fputc('[', f);
    for (unsigned i = 0; i < n; i++) {
        const hb_device_stats *d = &st->device[i];
        fprintf(f, "%s\n%s  {\"name\": ", i ? "," : "", indent);
        json_put_string(f, d->name, sizeof d->name);
        fprintf(f, ", \"is_cpu\": %s, \"shares_host_cores\": %s, \"takes_jobs\": %s,\n%s   ",
                d->is_cpu ? "true" : "false", d->shares_host_cores ? "true" : "false",
                d->takes_jobs ? "true" : "false", indent);
        json_models(f, d, indent);
        fputc('}', f);
    }
    if (n > 0)
        fprintf(f, "\n%s]", indent);
    else
        fputc(']', f);
}
