/*
 * service_util.c - helpers shared by the service suites (tests/service).
 *
 * Owns: the backend variants and opening them, checked stats snapshots,
 * HB_TEST_SCALE, and the feeder threads (see service_util.h). Feeder
 * threads make no Check calls (they are not the test's main thread): they
 * count, and the suite asserts on the totals.
 */
#include "service_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- backends ------------------------------------------------------- */

const variant variants[NVARIANTS] = {
    [VARIANT_CPU] = {"cpu", HB_BACKEND_CPU, NULL},
    [VARIANT_OPENCL] = {"opencl", HB_BACKEND_OPENCL, NULL},
    [VARIANT_AUTO_ALL] = {"auto+all", HB_BACKEND_AUTO, "all"},
};

void variant_config(hb_config *cfg, int i)
{
    tu_config(cfg, variants[i].kind);
    cfg->device = variants[i].device;
}

hb_engine *open_variant(int i)
{
    hb_config cfg;
    variant_config(&cfg, i);
    return tu_open_cfg(&cfg);
}

hb_engine *open_variant_checked(int i)
{
    hb_engine *e = open_variant(i);
    if (variants[i].kind == HB_BACKEND_AUTO)
        ck_assert_msg(hb_engine_backend(e) == HB_BACKEND_OPENCL,
                      "auto+all did not open a device: %s",
                      hb_engine_describe(e));
    return e;
}

hb_stats stats_of(const hb_engine *e)
{
    hb_stats s;
    ck_assert_int_eq(hb_engine_stats(e, &s), HB_OK);
    return s;
}

unsigned scale(void)
{
    const char *s = getenv("HB_TEST_SCALE");
    long v = s ? strtol(s, NULL, 10) : 1;
    return v >= 1 ? (unsigned)v : 1u;
}

/* ---- feeders -------------------------------------------------------- */

/* One job in flight: its messages, which set entries they are, its
 * output. */
typedef struct {
    hb_msg m[FEED_MAX_MSGS];
    unsigned pick[FEED_MAX_MSGS]; /* index into the feeder's set */
    hb_digest out[FEED_MAX_MSGS];
    size_t n;
    hb_job *job;
} slot;

static void note(feeder *f, const char *what, hb_status st, unsigned job)
{
    if (f->first_error[0] == '\0')
        snprintf(f->first_error, sizeof f->first_error, "%s %s (job %u)",
                 what, hb_status_name(st), job);
}

/* Waits the job in s and checks every digest. */
static void finish(feeder *f, slot *s, unsigned job)
{
    hb_status st = hb_job_wait(s->job, -1);
    if (st == HB_OK) {
        f->ok_jobs++;
        for (size_t i = 0; i < s->n; i++)
            if (memcmp(s->out[i], f->want[s->pick[i]], 20) != 0) {
                f->bad_digest++;
                note(f, "wrong digest, outcome", st, job);
                break;
            }
    } else if (st == HB_ERR_DEVICE && f->plan.allow_device_error) {
        f->device_errors++;
    } else {
        f->bad_status++;
        note(f, "wait =", st, job);
    }
    hb_job_free(s->job);
    s->job = NULL;
}

/* Draws the next job's messages into s. */
static void fill_slot(feeder *f, slot *s, tu_rng *r)
{
    s->n = 1 + tu_rng_below(r, f->plan.max_msgs);
    for (size_t i = 0; i < s->n; i++) {
        s->pick[i] = f->plan.pick(r);
        s->m[i] = f->set[s->pick[i]];
        f->bytes += s->m[i].len;
    }
    memset(s->out, 0xEE, sizeof s->out);
}

/* Submits f->jobs jobs, keeping up to plan.in_flight of them in flight
 * and finishing the oldest first. */
static void *feeder_main(void *arg)
{
    feeder *f = arg;
    const unsigned depth = f->plan.in_flight;
    tu_rng r;
    tu_rng_seed(&r, f->seed);
    slot *slots = calloc(depth, sizeof *slots);
    if (slots == NULL) {
        f->failed_submit++;
        return NULL;
    }
    unsigned head = 0; /* oldest in-flight slot */
    unsigned in_flight = 0;
    for (unsigned k = 0; k < f->jobs; k++) {
        if (in_flight == depth) {
            finish(f, &slots[head], k - depth);
            head = (head + 1) % depth;
            in_flight--;
        }
        slot *s = &slots[(head + in_flight) % depth];
        fill_slot(f, s, &r);
        hb_status st = hb_submit(f->e, s->m, s->n, s->out, &s->job);
        f->submitted++;
        f->messages += s->n;
        if (st != HB_OK) {
            f->failed_submit++;
            note(f, "submit =", st, k);
            break;
        }
        in_flight++;
    }
    while (in_flight > 0) {
        finish(f, &slots[head], f->jobs - in_flight);
        head = (head + 1) % depth;
        in_flight--;
    }
    free(slots);
    return NULL;
}

feeder *feeders_new(int n)
{
    feeder *f = calloc((size_t)n, sizeof *f);
    ck_assert_ptr_nonnull(f);
    return f;
}

void feeder_init(feeder *f, hb_engine *e, const feed_plan *plan,
                 uint64_t seed, unsigned jobs)
{
    ck_assert(plan->in_flight >= 1);
    ck_assert(plan->max_msgs >= 1 && plan->max_msgs <= FEED_MAX_MSGS);
    memset(f, 0, sizeof *f);
    f->e = e;
    f->plan = *plan;
    f->seed = seed;
    f->jobs = jobs;
}

void feeders_run(feeder *f, int n)
{
    pthread_t *th = calloc((size_t)n, sizeof *th);
    ck_assert_ptr_nonnull(th);
    for (int k = 0; k < n; k++)
        ck_assert_int_eq(pthread_create(&th[k], NULL, feeder_main, &f[k]), 0);
    for (int k = 0; k < n; k++)
        ck_assert_int_eq(pthread_join(th[k], NULL), 0);
    free(th);
}

feed_totals feeders_total(const feeder *f, int n)
{
    feed_totals t;
    memset(&t, 0, sizeof t);
    for (int k = 0; k < n; k++) {
        t.submitted += f[k].submitted;
        t.messages += f[k].messages;
        t.bytes += f[k].bytes;
        t.ok_jobs += f[k].ok_jobs;
        t.device_errors += f[k].device_errors;
        t.bad_status += f[k].bad_status;
        t.bad_digest += f[k].bad_digest;
        t.failed_submit += f[k].failed_submit;
        if (f[k].first_error[0])
            fprintf(stderr, "thread %d: %s\n", k, f[k].first_error);
    }
    return t;
}

void feeders_free(feeder *f, int n)
{
    for (int k = 0; k < n; k++)
        free(f[k].data);
    free(f);
}
