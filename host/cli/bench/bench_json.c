/*
 * bench_json.c - `hashbatch bench --json`: every measurement as one JSON
 * document (machine, settings, backends, both sweeps, the OpenSSL
 * reference and the crossover).
 *
 * Owns: the JSON shape of the report, documented in the README ("cpu_impl"
 * on each backend and each result: the CPU pool's implementation for the
 * rows that use the pool, null for OpenCL devices and OpenSSL's own loop,
 * with "cpu_impl_default": true on the default "cpu" row; with
 * --peer-isal, "peer_isal" describing the isa-l_crypto peer, and its
 * results, backend "isa-l_crypto", with "peer": true and "peer_dir").
 * Numbers
 * are printed in the C locale (main() leaves LC_NUMERIC alone).
 * Must not: measure, or print anything that is not JSON on its stream.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* num: a finite number, or null. */
static void num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void str(FILE *f, const char *s, size_t max)
{
    json_put_string(f, s, max);
}

#define STR_FIELD(f, s) str((f), (s), sizeof(s))

/* cpu_impl: the "cpu_impl" value of backend i (BENCH_OPENSSL and
 * BENCH_PEER: null). */
static void cpu_impl(FILE *f, const bench_report *rep, int i)
{
    const char *name = i < 0 ? NULL : rep->backends.b[i].cpu_impl;
    if (name != NULL)
        str(f, name, 32);
    else
        fputs("null", f);
}

static void spread(FILE *f, const char *key, const bench_spread *s)
{
    fprintf(f, "\"%s\": {\"median\": ", key);
    num(f, s->median);
    fputs(", \"min\": ", f);
    num(f, s->min);
    fputs(", \"max\": ", f);
    num(f, s->max);
    fputs(", \"q1\": ", f);
    num(f, s->q1);
    fputs(", \"q3\": ", f);
    num(f, s->q3);
    fputs("}", f);
}

static void device(FILE *f, const hb_device_info *d, int last)
{
    fprintf(f, "      {\"id\": \"%u:%u\", \"name\": ", d->platform_index, d->device_index);
    STR_FIELD(f, d->name);
    fputs(", \"platform\": ", f);
    STR_FIELD(f, d->platform_name);
    fprintf(f, ", \"type\": \"%s\", \"compute_units\": %" PRIu32 ", \"driver_version\": ",
            hb_device_type_name(d->type), d->compute_units);
    STR_FIELD(f, d->driver_version);
    fputs(", \"opencl_version\": ", f);
    STR_FIELD(f, d->version);
    fprintf(f, ", \"available\": %s}%s\n", d->available ? "true" : "false", last ? "" : ",");
}

static void machine(FILE *f, const bench_machine *m)
{
    fputs("  \"machine\": {\n    \"cpu_model\": ", f);
    STR_FIELD(f, m->cpu_model);
    fprintf(f, ",\n    \"cores\": %u,\n    \"cpu_pool_threads\": %u,\n    \"sha_ni\": %s,\n",
            m->cores, m->cpu_threads, m->sha_ni ? "true" : "false");
    fputs("    \"openssl\": ", f);
    STR_FIELD(f, m->openssl);
    fputs(",\n    \"os\": ", f);
    STR_FIELD(f, m->os);
    fputs(",\n    \"load\": [", f);
    for (int i = 0; i < 3; i++) {
        num(f, m->load[i]);
        fputs(i < 2 ? ", " : "],\n", f);
    }
    fputs("    \"load_end\": [", f);
    for (int i = 0; i < 3; i++) {
        num(f, m->load_end[i]);
        fputs(i < 2 ? ", " : "],\n", f);
    }
    fprintf(f, "    \"opencl_devices\": [%s", m->ndev ? "\n" : "");
    for (size_t i = 0; i < m->ndev; i++)
        device(f, &m->dev[i], i + 1 == m->ndev);
    fprintf(f, "%s]\n  },\n", m->ndev ? "    " : "");
}

static void settings(FILE *f, const bench_report *rep)
{
    const bench_opts *o = rep->opts;
    fprintf(f, "  \"settings\": {\"quick\": %s, \"runs\": %u, \"min_time_s\": ",
            o->quick ? "true" : "false", o->runs);
    num(f, o->min_time);
    fprintf(f, ", \"verify\": \"%s\", \"seed\": \"%" PRIu64 "\", \"sizes\": [", rep->verify,
            rep->seed);
    for (size_t i = 0; i < o->sizes.n; i++)
        fprintf(f, "%s%zu", i ? ", " : "", o->sizes.v[i]);
    fputs("], \"batches\": [", f);
    for (size_t i = 0; i < o->batches.n; i++)
        fprintf(f, "%s%zu", i ? ", " : "", o->batches.v[i]);
    fputs("], \"batch_message_sizes\": [", f);
    for (size_t i = 0; i < o->batch_sizes.n; i++)
        fprintf(f, "%s%zu", i ? ", " : "", o->batch_sizes.v[i]);
    fputs("]},\n", f);
}

/* peer: "peer_isal": the isa-l_crypto peer, or null without one. */
static void peer(FILE *f, const bench_peer *p)
{
    fputs("  \"peer_isal\": ", f);
    if (!p->on) {
        fputs("null,\n", f);
        return;
    }
    fputs("{\"name\": \"" BENCH_PEER_NAME "\", \"peer\": true, \"dir\": ", f);
    str(f, p->dir, BENCH_PATH_MAX);
    fprintf(f, ", \"given_by\": \"%s\", \"threads\": %u, \"library\": ", p->origin, p->threads);
    STR_FIELD(f, p->library);
    fputs(", \"compiler\": ", f);
    STR_FIELD(f, p->compiler);
    fputs(", \"binary\": ", f);
    STR_FIELD(f, p->binary);
    fprintf(f, ", \"reused_build\": %s, \"checks\": \"a sample of digests per run\"},\n",
            p->reused ? "true" : "false");
}

static void backends(FILE *f, const bench_report *rep)
{
    const bench_backends *bs = &rep->backends;
    fputs("  \"backends\": [\n", f);
    for (size_t i = 0; i < bs->n; i++) {
        fputs("    {\"name\": ", f);
        STR_FIELD(f, bs->b[i].name);
        fprintf(f, ", \"kind\": \"%s\", \"device\": ", bs->b[i].kind);
        if (bs->b[i].device[0])
            STR_FIELD(f, bs->b[i].device);
        else
            fputs("null", f);
        fputs(", \"cpu_impl\": ", f);
        cpu_impl(f, rep, (int)i);
        fprintf(f, ", \"cpu_impl_default\": %s, \"engine\": ",
                bs->b[i].cpu_impl != NULL && !bs->b[i].cpu_forced ? "true" : "false");
        STR_FIELD(f, bs->b[i].describe);
        fprintf(f, "}%s\n", i + 1 == bs->n ? "" : ",");
    }
    fputs("  ],\n", f);
    peer(f, &rep->peer);
    fputs("  \"opencl\": ", f);
    fputs(rep->machine.ndev ? "true" : "false", f);
    fputs(",\n  \"note\": ", f);
    if (bs->note[0])
        STR_FIELD(f, bs->note);
    else
        fputs("null", f);
    fputs(",\n", f);
}

static void result(FILE *f, const bench_report *rep, const bench_result *r, int last)
{
    fputs("    {\"backend\": ", f);
    if (r->backend == BENCH_OPENSSL)
        fputs("\"openssl\"", f);
    else if (r->backend == BENCH_PEER)
        fputs("\"" BENCH_PEER_NAME "\"", f);
    else
        STR_FIELD(f, rep->backends.b[r->backend].name);
    if (r->backend == BENCH_PEER) {
        fputs(", \"peer\": true, \"peer_dir\": ", f);
        str(f, rep->peer.dir, BENCH_PATH_MAX);
    }
    fputs(", \"cpu_impl\": ", f);
    cpu_impl(f, rep, r->backend);
    fprintf(f,
            ", \"size\": %zu, \"count\": %zu, \"runs\": %u, \"checked_runs\": %u, "
            "\"calls\": %" PRIu64 ", \"seconds\": ",
            r->size, r->count, r->runs, r->checked, r->calls);
    num(f, r->seconds);
    fputs(",\n     ", f);
    spread(f, "gb_per_s", &r->gbps);
    fputs(",\n     ", f);
    spread(f, "messages_per_s", &r->mps);
    fputs(",\n     \"device_share\": ", f);
    if (r->device_share >= 0)
        num(f, r->device_share);
    else
        fputs("null", f);
    fprintf(f,
            ", \"verified\": %" PRIu64 ", \"verify_mismatches\": %" PRIu64
            ", \"fallbacks\": %" PRIu64 "}%s\n",
            r->verified, r->mismatches, r->fallbacks, last ? "" : ",");
}

/* results: every result of one sweep; openssl: 1 only the reference,
 * 0 only the backends. */
static void results(FILE *f, const bench_report *rep, const char *key, bench_sweep sweep,
                    int openssl)
{
    size_t total = 0, k = 0;
    for (size_t i = 0; i < rep->n; i++)
        total += rep->r[i].sweep == sweep && (rep->r[i].backend == BENCH_OPENSSL) == openssl;
    fprintf(f, "  \"%s\": [%s", key, total ? "\n" : "");
    for (size_t i = 0; i < rep->n; i++) {
        const bench_result *r = &rep->r[i];
        if (r->sweep == sweep && (r->backend == BENCH_OPENSSL) == openssl)
            result(f, rep, r, ++k == total);
    }
    fprintf(f, "%s],\n", total ? "  " : "");
}

static void crossover(FILE *f, const bench_report *rep)
{
    const bench_opts *o = rep->opts;
    int first = 1;
    fputs("  \"crossover\": [", f);
    for (size_t b = 0; b < rep->backends.n; b++) {
        if (strcmp(rep->backends.b[b].kind, "cpu") == 0)
            continue;
        for (size_t s = 0; s < o->batch_sizes.n && o->batches.n > 0; s++) {
            long long x = bench_crossover(rep, (int)b, o->batch_sizes.v[s]);
            fprintf(f, "%s\n    {\"backend\": ", first ? "" : ",");
            STR_FIELD(f, rep->backends.b[b].name);
            fprintf(f, ", \"size\": %zu, \"batch\": ", o->batch_sizes.v[s]);
            if (x > 0)
                fprintf(f, "%lld, \"text\": \"%lld\"}", x, x);
            else if (x == 0)
                fprintf(f, "null, \"text\": \"never\"}");
            else
                fprintf(f, "null, \"text\": \"not measured\"}");
            first = 0;
        }
    }
    fprintf(f, "%s]\n", first ? "" : "\n  ");
}

void bench_print_json(FILE *f, const bench_report *rep)
{
    fputs("{\n  \"hashbatch_version\": ", f);
    str(f, hb_version_string(), 32);
    fputs(",\n  \"date\": ", f);
    STR_FIELD(f, rep->machine.date);
    fputs(",\n", f);
    machine(f, &rep->machine);
    settings(f, rep);
    backends(f, rep);
    results(f, rep, "sizes", BENCH_SWEEP_SIZE, 0);
    results(f, rep, "openssl_single_thread", BENCH_SWEEP_SIZE, 1);
    results(f, rep, "batches", BENCH_SWEEP_BATCH, 0);
    crossover(f, rep);
    fputs("}\n", f);
}
