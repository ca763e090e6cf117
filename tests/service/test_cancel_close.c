/*
 * test_cancel_close.c - hb_job_cancel racing completion, hb_job_free of
 * unfinished jobs, and hb_engine_close while threads keep it busy.
 *
 * Covers: (a) cancel right after submit or after a random short delay,
 * many times: cancel returns, then hb_job_wait(j, 0) answers HB_OK (every
 * digest equals OpenSSL) or HB_ERR_CANCELLED, never HB_ERR_TIMEOUT; the
 * output buffer is poisoned after cancel returns and must stay poisoned
 * (under AddressSanitizer it is freed instead, with the message bytes, so
 * any later engine access is reported); (b) cancelling one job among
 * others, from several threads: the neighbours finish right; (c) a waiter
 * blocked on a job wakes when another thread cancels it; (d) hb_job_free
 * of running jobs; (e) hb_engine_close while several threads have big
 * jobs queued and are waiting on them: close returns (alarm watchdog),
 * every job ends HB_OK (right digests) or HB_ERR_CLOSED, the waiters
 * wake, a look after close answers at once, eventfds are readable, cancel
 * and free after close work; (f) 32 threads submitting (hb_submit,
 * hb_sha1_batch, hb_engine_stats, hb_job_cancel) in a loop while the main
 * thread closes the engine, many rounds: every call answers HB_OK or
 * HB_ERR_CLOSED, every job that finished OK has OpenSSL's digests, nothing
 * hangs (issue 11, defect 4: a submit blocked in hb_queue_push on a
 * destroyed mutex). The close there is hb_testing_shut_down, which is
 * hb_engine_close without the final free, so that the racing threads'
 * calls never land on freed memory; hb_engine_close frees afterwards.
 * (g) cancelling a job of long messages (4 x 256 MiB) once it is under
 * way (issue 11, defect 2): the job ends HB_ERR_CANCELLED, and the bytes
 * the engine hashed for it after the cancel (hb_testing_job_work) stay
 * within what was in flight at that moment (each device's ring of launches
 * plus one staging buffer, two pieces per CPU thread), far below what was
 * left; hb_job_free of such a job and a close with one running end the
 * same way; the engine hashes correctly afterwards. No clock is read: the
 * bound is on work, not time.
 * Backends: cpu, opencl, auto with "all".
 *
 * HB_TEST_SCALE (a divisor, default 1) shrinks the iteration counts.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hb_testing.h"
#include "service_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifndef HAVE_ASAN
#define HAVE_ASAN 0
#endif

#define POISON 0x5A

/* ---- backends ------------------------------------------------------- */

/* Variant i with small staging, so a job of a few MiB is cut into several
 * device batches and a cancel can land between them. */
static hb_engine *open_small_staging(int i)
{
    hb_config cfg;
    variant_config(&cfg, i);
    cfg.staging_bytes = 256u << 10;
    return tu_open_cfg(&cfg);
}

static unsigned scaled(unsigned n)
{
    unsigned v = n / scale();
    return v ? v : 1;
}

/* ---- one owned job: its own message bytes and output ---------------- */

typedef struct {
    uint8_t *data;
    hb_msg *m;
    size_t n;
    uint64_t bytes;
    hb_digest *out;
} owned_job;

static void owned_make(owned_job *o, tu_rng *r, size_t n, size_t maxlen)
{
    size_t *lens = malloc(n * sizeof *lens);
    o->bytes = 0;
    for (size_t i = 0; i < n; i++) {
        lens[i] = tu_rng_below(r, maxlen + 1);
        o->bytes += lens[i];
    }
    o->data = malloc(o->bytes ? o->bytes : 1);
    o->m = malloc(n * sizeof *o->m);
    o->out = malloc(n * sizeof *o->out);
    if (lens == NULL || o->data == NULL || o->m == NULL || o->out == NULL) {
        fprintf(stderr, "out of memory\n");
        abort();
    }
    tu_rng_fill(r, o->data, o->bytes);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        o->m[i] = (hb_msg){o->data + at, lens[i]};
        at += lens[i];
    }
    o->n = n;
    memset(o->out, 0xEE, n * sizeof *o->out);
    free(lens);
}

/* Number of digests differing from OpenSSL's. */
static size_t owned_bad(const owned_job *o, const char *what)
{
    hb_digest *want = tu_oracle(o->m, o->n);
    size_t bad = tu_count_mismatches(o->m, o->n, want, o->out, what);
    free(want);
    return bad;
}

static void owned_free(owned_job *o)
{
    free(o->data);
    free(o->m);
    free(o->out);
    memset(o, 0, sizeof *o);
}

static int all_poisoned(const owned_job *o)
{
    const uint8_t *p = (const uint8_t *)o->out;
    for (size_t i = 0; i < o->n * sizeof(hb_digest); i++)
        if (p[i] != POISON)
            return 0;
    return 1;
}

static void short_delay(tu_rng *r, unsigned mode)
{
    switch (mode % 4) {
    case 0:
        break;
    case 1:
        sched_yield();
        break;
    case 2: {
        double until = tu_now() + (double)tu_rng_below(r, 200) * 1e-6;
        while (tu_now() < until)
            ;
        break;
    }
    default:
        usleep((useconds_t)tu_rng_below(r, 1000));
        break;
    }
}

/* ---- (a) cancel racing completion ----------------------------------- */

typedef struct {
    unsigned ok, cancelled, timeout_after_cancel, poison_overwritten,
        wrong_digests, bad_status, late_outcome_change;
} cancel_tally;

/* After hb_job_cancel(j) returned: the checks of the contract. Frees o
 * (possibly before the job is freed, to let ASan see late accesses). */
static void check_after_cancel(hb_job *j, owned_job *o, unsigned iter,
                               cancel_tally *t, const char *what)
{
    hb_status st = hb_job_wait(j, 0);
    if (st == HB_ERR_TIMEOUT) {
        if (t->timeout_after_cancel++ < 3)
            fprintf(stderr, "%s: iteration %u: hb_job_wait(j, 0) after "
                    "hb_job_cancel returned = HB_ERR_TIMEOUT (n = %zu, "
                    "%llu bytes)\n", what, iter, o->n,
                    (unsigned long long)o->bytes);
    }
    if (st == HB_OK) {
        t->ok++;
        if (owned_bad(o, what) > 0)
            t->wrong_digests++;
        owned_free(o);
        return;
    }
    if (st == HB_ERR_CANCELLED)
        t->cancelled++;
    else if (st != HB_ERR_TIMEOUT) {
        t->bad_status++;
        fprintf(stderr, "%s: iteration %u: outcome %s after cancel\n", what,
                iter, hb_status_name(st));
    }
    if (HAVE_ASAN && iter % 2) {
        /* ASan: any engine access from now on is a use after free */
        owned_free(o);
        return;
    }
    memset(o->out, POISON, o->n * sizeof *o->out);
    /* let anything still (wrongly) running finish, then look */
    hb_status final = hb_job_wait(j, -1);
    if (st != HB_ERR_TIMEOUT && final != st)
        t->late_outcome_change++;
    if (!all_poisoned(o)) {
        if (t->poison_overwritten++ < 3)
            fprintf(stderr, "%s: iteration %u: the engine wrote the output "
                    "after hb_job_cancel returned (n = %zu)\n", what, iter,
                    o->n);
    }
    owned_free(o);
}

static void report_tally(const char *what, const cancel_tally *t)
{
    fprintf(stderr,
            "%s: ok %u, cancelled %u, wait(0) timed out after cancel %u, "
            "output written after cancel %u, wrong digests %u, bad status "
            "%u, outcome changed %u\n",
            what, t->ok, t->cancelled, t->timeout_after_cancel,
            t->poison_overwritten, t->wrong_digests, t->bad_status,
            t->late_outcome_change);
    ck_assert_msg(t->wrong_digests == 0, "%s: %u jobs with wrong digests",
                  what, t->wrong_digests);
    ck_assert_msg(t->bad_status == 0, "%s: %u bad outcomes", what,
                  t->bad_status);
    ck_assert_msg(t->timeout_after_cancel == 0,
                  "%s: %u jobs not finished when hb_job_cancel returned "
                  "(wait(0) = HB_ERR_TIMEOUT)", what, t->timeout_after_cancel);
    ck_assert_msg(t->poison_overwritten == 0,
                  "%s: the engine wrote %u jobs' output after "
                  "hb_job_cancel returned", what, t->poison_overwritten);
    ck_assert_msg(t->late_outcome_change == 0,
                  "%s: %u outcomes changed after cancel", what,
                  t->late_outcome_change);
}

START_TEST(cancel_races_completion)
{
    hb_engine *e = open_small_staging(_i);
    tu_rng r;
    tu_rng_seed(&r, 0xC0FFEEu + (uint64_t)_i);
    static const size_t maxlens[] = {64, 2000, 8000, 70000};
    unsigned iters = scaled(300);
    cancel_tally t;
    memset(&t, 0, sizeof t);
    for (unsigned it = 0; it < iters; it++) {
        owned_job o;
        size_t maxlen = maxlens[tu_rng_below(&r, 4)];
        size_t n = 1 + tu_rng_below(&r, maxlen > 10000 ? 150 : 1500);
        owned_make(&o, &r, n, maxlen);
        hb_job *j;
        ck_assert_int_eq(hb_submit(e, o.m, o.n, o.out, &j), HB_OK);
        short_delay(&r, it);
        ck_assert_int_eq(hb_job_cancel(j), HB_OK);
        check_after_cancel(j, &o, it, &t, variants[_i].name);
        if (it % 5 == 0)
            ck_assert_int_eq(hb_job_cancel(j), HB_OK); /* twice is fine */
        hb_job_free(j);
    }
    fprintf(stderr, "%s: %u iterations (scale %u)\n", variants[_i].name,
            iters, scale());
    report_tally(variants[_i].name, &t);
    /* the engine still works, and its queue is empty */
    tu_msgset s;
    tu_msgset_random(&s, 500, 3000, 7);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "after cancels");
    hb_stats st = stats_of(e);
    ck_assert_uint_eq(st.queue_messages, 0);
    ck_assert_uint_eq(st.queue_jobs, 0);
    ck_assert_uint_eq(st.jobs_completed, t.ok + 1);
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

/* ---- (b) cancel the middle one, from several threads ---------------- */

#define NCT 4

typedef struct {
    hb_engine *e;
    uint64_t seed;
    unsigned iters;
    const char *what;
    cancel_tally t;
    unsigned neighbour_failures;
} canceller;

static void *canceller_main(void *arg)
{
    canceller *c = arg;
    tu_rng r;
    tu_rng_seed(&r, c->seed);
    for (unsigned it = 0; it < c->iters; it++) {
        owned_job o[3];
        hb_job *j[3];
        for (int k = 0; k < 3; k++) {
            owned_make(&o[k], &r, 1 + tu_rng_below(&r, 400), 4000);
            if (hb_submit(c->e, o[k].m, o[k].n, o[k].out, &j[k]) != HB_OK) {
                c->neighbour_failures++;
                return NULL;
            }
        }
        short_delay(&r, it);
        hb_job_cancel(j[1]);
        check_after_cancel(j[1], &o[1], it, &c->t, c->what);
        hb_job_free(j[1]);
        for (int k = 0; k < 3; k += 2) {
            hb_status st = hb_job_wait(j[k], -1);
            if (st != HB_OK || owned_bad(&o[k], c->what) > 0) {
                if (c->neighbour_failures++ < 3)
                    fprintf(stderr, "%s: neighbour of a cancelled job: %s\n",
                            c->what, hb_status_name(st));
            }
            hb_job_free(j[k]);
            owned_free(&o[k]);
        }
    }
    return NULL;
}

START_TEST(cancel_among_neighbours_threads)
{
    hb_engine *e = open_small_staging(_i);
    pthread_t th[NCT];
    canceller c[NCT];
    for (int k = 0; k < NCT; k++) {
        memset(&c[k], 0, sizeof c[k]);
        c[k].e = e;
        c[k].seed = 0xBEEF00u + (uint64_t)(k * 7 + _i);
        c[k].iters = scaled(100);
        c[k].what = variants[_i].name;
        ck_assert_int_eq(pthread_create(&th[k], NULL, canceller_main, &c[k]),
                         0);
    }
    alarm(400);
    for (int k = 0; k < NCT; k++)
        ck_assert_int_eq(pthread_join(th[k], NULL), 0);
    alarm(0);
    cancel_tally all;
    memset(&all, 0, sizeof all);
    unsigned neighbours = 0;
    for (int k = 0; k < NCT; k++) {
        all.ok += c[k].t.ok;
        all.cancelled += c[k].t.cancelled;
        all.timeout_after_cancel += c[k].t.timeout_after_cancel;
        all.poison_overwritten += c[k].t.poison_overwritten;
        all.wrong_digests += c[k].t.wrong_digests;
        all.bad_status += c[k].t.bad_status;
        all.late_outcome_change += c[k].t.late_outcome_change;
        neighbours += c[k].neighbour_failures;
    }
    report_tally(variants[_i].name, &all);
    ck_assert_msg(neighbours == 0,
                  "%u jobs next to a cancelled one failed or went wrong",
                  neighbours);
    hb_stats st = stats_of(e);
    ck_assert_uint_eq(st.queue_messages, 0);
    hb_engine_close(e);
}
END_TEST

/* ---- (c) a blocked waiter wakes when another thread cancels --------- */

typedef struct {
    hb_job *job;
    hb_status result;
} blocked;

static void *blocked_main(void *arg)
{
    blocked *b = arg;
    b->result = hb_job_wait(b->job, -1);
    return NULL;
}

START_TEST(cancel_wakes_waiter)
{
    hb_engine *e = open_small_staging(_i);
    tu_rng r;
    tu_rng_seed(&r, 0xAB00u + (uint64_t)_i);
    for (unsigned it = 0; it < scaled(40); it++) {
        owned_job o;
        owned_make(&o, &r, 64, 256u << 10); /* ~8 MiB */
        hb_job *j;
        ck_assert_int_eq(hb_submit(e, o.m, o.n, o.out, &j), HB_OK);
        blocked b = {j, HB_ERR_INTERNAL};
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, blocked_main, &b), 0);
        short_delay(&r, it);
        ck_assert_int_eq(hb_job_cancel(j), HB_OK);
        alarm(120);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        alarm(0);
        ck_assert_msg(b.result == HB_OK || b.result == HB_ERR_CANCELLED,
                      "waiter got %s", hb_status_name(b.result));
        ck_assert_int_eq(hb_job_wait(j, 0), b.result);
        if (b.result == HB_OK)
            ck_assert_uint_eq(owned_bad(&o, "waiter"), 0);
        hb_job_free(j);
        owned_free(&o);
    }
    hb_engine_close(e);
}
END_TEST

/* ---- (d) hb_job_free of running jobs -------------------------------- */

START_TEST(free_running_jobs)
{
    hb_engine *e = open_small_staging(_i);
    tu_rng r;
    tu_rng_seed(&r, 0xF4EEu + (uint64_t)_i);
    for (unsigned it = 0; it < scaled(60); it++) {
        owned_job o;
        owned_make(&o, &r, 1 + tu_rng_below(&r, 2000), 6000);
        hb_job *j;
        ck_assert_int_eq(hb_submit(e, o.m, o.n, o.out, &j), HB_OK);
        short_delay(&r, it);
        hb_job_free(j); /* cancels, waits for what started */
        owned_free(&o); /* the engine must not touch it any more */
    }
    tu_msgset s;
    tu_msgset_random(&s, 1000, 5000, 11);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "after frees");
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

/* ---- (e) close while busy ------------------------------------------- */

#define CLOSE_THREADS 4
#define CLOSE_JOBS 16
#define CLOSE_MSGS 32
#define CLOSE_MSG_LEN (64u << 10)
#define CLOSE_POOL (8u << 20)

typedef struct {
    hb_engine *e;
    const uint8_t *pool;
    unsigned index;
    pthread_barrier_t *barrier;
    hb_msg m[CLOSE_JOBS][CLOSE_MSGS];
    hb_digest out[CLOSE_JOBS][CLOSE_MSGS];
    hb_job *job[CLOSE_JOBS];
    hb_status submitted[CLOSE_JOBS];
    hb_status waited[CLOSE_JOBS];
} closer;

static void *closer_main(void *arg)
{
    closer *c = arg;
    for (unsigned k = 0; k < CLOSE_JOBS; k++) {
        for (unsigned i = 0; i < CLOSE_MSGS; i++) {
            size_t at = ((size_t)(c->index * 7919u + k * 131u + i) * 4099u) %
                        (CLOSE_POOL - CLOSE_MSG_LEN);
            c->m[k][i] = (hb_msg){c->pool + at, CLOSE_MSG_LEN - i % 5};
        }
        memset(c->out[k], 0xEE, sizeof c->out[k]);
        c->submitted[k] =
            hb_submit(c->e, c->m[k], CLOSE_MSGS, c->out[k], &c->job[k]);
    }
    pthread_barrier_wait(c->barrier); /* all submitted: close may begin */
    for (unsigned k = 0; k < CLOSE_JOBS; k++)
        c->waited[k] = c->job[k] ? hb_job_wait(c->job[k], -1)
                                 : HB_ERR_INTERNAL;
    return NULL;
}

START_TEST(close_while_busy)
{
    hb_engine *e = open_small_staging(_i);
    tu_rng r;
    tu_rng_seed(&r, 0xC105Eu);
    uint8_t *pool = malloc(CLOSE_POOL);
    ck_assert_ptr_nonnull(pool);
    tu_rng_fill(&r, pool, CLOSE_POOL);
    closer *c = calloc(CLOSE_THREADS, sizeof *c);
    ck_assert_ptr_nonnull(c);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, CLOSE_THREADS + 1);
    pthread_t th[CLOSE_THREADS];
    for (unsigned k = 0; k < CLOSE_THREADS; k++) {
        c[k].e = e;
        c[k].pool = pool;
        c[k].index = k;
        c[k].barrier = &barrier;
        ck_assert_int_eq(pthread_create(&th[k], NULL, closer_main, &c[k]), 0);
    }
    pthread_barrier_wait(&barrier);
    alarm(120); /* watchdog: close or a waiter hanging kills the test */
    double t0 = tu_now();
    hb_engine_close(e);
    double closed_in = tu_now() - t0;
    for (unsigned k = 0; k < CLOSE_THREADS; k++)
        ck_assert_int_eq(pthread_join(th[k], NULL), 0);
    alarm(0);
    unsigned ok = 0, closed = 0;
    for (unsigned k = 0; k < CLOSE_THREADS; k++) {
        for (unsigned j = 0; j < CLOSE_JOBS; j++) {
            ck_assert_msg(c[k].submitted[j] == HB_OK, "submit = %s",
                          hb_status_name(c[k].submitted[j]));
            hb_job *job = c[k].job[j];
            hb_status look = hb_job_wait(job, 0);
            ck_assert_msg(look != HB_ERR_TIMEOUT,
                          "thread %u job %u not finished after close", k, j);
            ck_assert_msg(look == c[k].waited[j],
                          "thread %u job %u: waiter got %s, look gets %s", k,
                          j, hb_status_name(c[k].waited[j]),
                          hb_status_name(look));
            ck_assert_msg(look == HB_OK || look == HB_ERR_CLOSED,
                          "thread %u job %u ended %s", k, j,
                          hb_status_name(look));
            if (look == HB_OK) {
                ok++;
                hb_digest *want = tu_oracle(c[k].m[j], CLOSE_MSGS);
                tu_assert_digests(c[k].m[j], CLOSE_MSGS, want, c[k].out[j],
                                  "completed before close");
                free(want);
            } else {
                closed++;
            }
            int fd = -1;
            ck_assert_int_eq(hb_job_fd(job, &fd), HB_OK);
            struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
            ck_assert_msg(poll(&p, 1, 0) == 1, "fd of a closed job not readable");
            ck_assert_int_eq(hb_job_cancel(job), HB_OK); /* after close */
            ck_assert_int_eq(hb_job_wait(job, -1), look);
            hb_job_free(job);
        }
    }
    fprintf(stderr, "%s: close took %.3f s; %u jobs OK, %u closed\n",
            variants[_i].name, closed_in, ok, closed);
    pthread_barrier_destroy(&barrier);
    free(c);
    free(pool);
}
END_TEST

/* Close with jobs nobody waits on; look and free afterwards. */
START_TEST(close_with_unwaited_jobs)
{
    hb_engine *e = open_small_staging(_i);
    enum { N = 20 };
    tu_msgset s[N];
    hb_digest *got[N];
    hb_job *j[N];
    for (int k = 0; k < N; k++) {
        tu_msgset_random(&s[k], 200, 40000, 0xD00u + (uint64_t)k);
        got[k] = tu_digests(s[k].n);
        ck_assert_int_eq(hb_submit(e, s[k].m, s[k].n, got[k], &j[k]), HB_OK);
        if (k % 4 == 0) { /* some with an fd made before close */
            int fd;
            ck_assert_int_eq(hb_job_fd(j[k], &fd), HB_OK);
        }
    }
    alarm(120);
    hb_engine_close(e);
    alarm(0);
    for (int k = 0; k < N; k++) {
        hb_status st = hb_job_wait(j[k], 0);
        ck_assert_msg(st == HB_OK || st == HB_ERR_CLOSED, "job %d: %s", k,
                      hb_status_name(st));
        /* "Does not need the engine (it may be closed)": wait forever too */
        ck_assert_int_eq(hb_job_wait(j[k], -1), st);
        ck_assert_int_eq(hb_job_wait(j[k], 1000), st);
        if (st == HB_OK)
            tu_assert_digests(s[k].m, s[k].n, s[k].want, got[k], "closed");
        int fd;
        ck_assert_int_eq(hb_job_fd(j[k], &fd), HB_OK);
        struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
        ck_assert_int_eq(poll(&p, 1, 0), 1);
        hb_job_free(j[k]);
        free(got[k]);
        tu_msgset_free(&s[k]);
    }
}
END_TEST

/* Close an engine whose jobs are all finished but not freed; and one that
 * never had a job. */
START_TEST(close_idle)
{
    hb_engine *e = open_small_staging(_i);
    tu_msgset s;
    tu_msgset_random(&s, 300, 3000, 0xE00u);
    hb_digest *got = tu_digests(s.n);
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, s.m, s.n, got, &j), HB_OK);
    ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
    alarm(60);
    hb_engine_close(e);
    alarm(0);
    ck_assert_int_eq(hb_job_wait(j, 0), HB_OK);
    ck_assert_int_eq(hb_job_cancel(j), HB_OK);
    ck_assert_int_eq(hb_job_wait(j, 0), HB_OK);
    tu_assert_digests(s.m, s.n, s.want, got, "idle close");
    hb_job_free(j);
    free(got);
    tu_msgset_free(&s);

    e = open_small_staging(_i);
    alarm(60);
    hb_engine_close(e);
    alarm(0);
}
END_TEST

/* ---- (f) close racing submits -------------------------------------- */

#define RACE_THREADS 32
#define RACE_MSGS 6

typedef struct {
    hb_engine *e;
    atomic_int *started;
    uint64_t seed;
    uint8_t *data;
    hb_msg m[RACE_MSGS];
    hb_digest want[RACE_MSGS];
    unsigned calls, ok, closed, bad_status, bad_digest;
    char first_error[160];
} racer;

static void racer_note(racer *r, const char *what, hb_status st)
{
    r->bad_status++;
    if (r->first_error[0] == '\0')
        snprintf(r->first_error, sizeof r->first_error, "%s: %s", what,
                 hb_status_name(st));
}

/* Messages small enough to be hashed inline by hb_sha1_batch and big
 * enough to be queued (and cut into several device batches). */
static void racer_prepare(racer *r)
{
    static const size_t lens[RACE_MSGS] = {0, 55, 64, 1000, 70000, 300000};
    size_t total = 0;
    for (int i = 0; i < RACE_MSGS; i++)
        total += lens[i];
    r->data = malloc(total);
    ck_assert_ptr_nonnull(r->data);
    tu_rng g;
    tu_rng_seed(&g, r->seed);
    tu_rng_fill(&g, r->data, total);
    size_t at = 0;
    for (int i = 0; i < RACE_MSGS; i++) {
        r->m[i] = (hb_msg){r->data + at, lens[i]};
        at += lens[i];
    }
    hb_digest *want = tu_oracle(r->m, RACE_MSGS);
    memcpy(r->want, want, sizeof r->want);
    free(want);
}

/* One call on the engine, chosen by it; returns its status (a job that
 * was submitted is waited for, checked and freed here). */
static hb_status racer_call(racer *r, unsigned it, tu_rng *g)
{
    size_t first = tu_rng_below(g, RACE_MSGS), n = 1 + tu_rng_below(g, RACE_MSGS - first);
    hb_digest out[RACE_MSGS];
    hb_status st;
    hb_job *j = NULL;
    switch (it % 4) {
    case 0:
        st = hb_sha1_batch(r->e, r->m + first, n, out);
        break;
    case 3: {
        hb_stats s;
        return hb_engine_stats(r->e, &s);
    }
    default:
        st = hb_submit(r->e, r->m + first, n, out, &j);
        if (st != HB_OK)
            break;
        if (it % 4 == 2)
            hb_job_cancel(j);
        st = hb_job_wait(j, -1);
        hb_job_free(j);
        if (st == HB_ERR_CANCELLED)
            return HB_OK; /* its own cancel: fine */
        break;
    }
    if (st == HB_OK && memcmp(out, r->want + first, n * sizeof(hb_digest)) != 0)
        r->bad_digest++;
    return st;
}

static void *racer_main(void *arg)
{
    racer *r = arg;
    tu_rng g;
    tu_rng_seed(&g, r->seed ^ 0x5EEDu);
    for (unsigned it = 0;; it++) {
        hb_status st = racer_call(r, it, &g);
        r->calls++;
        if (it == 0)
            atomic_fetch_add(r->started, 1);
        if (st == HB_OK)
            r->ok++;
        else if (st == HB_ERR_CLOSED)
            r->closed++;
        else
            racer_note(r, "call", st);
        if (st == HB_ERR_CLOSED && it % 4 != 3)
            break; /* a job call refused, or its job closed: the engine is done */
    }
    return NULL;
}

START_TEST(close_races_submits)
{
    unsigned rounds = scaled(150);
    racer *r = calloc(RACE_THREADS, sizeof *r);
    ck_assert_ptr_nonnull(r);
    for (int k = 0; k < RACE_THREADS; k++) {
        r[k].seed = 0x7ACEu + (uint64_t)(k * 31 + _i);
        racer_prepare(&r[k]);
    }
    tu_rng g;
    tu_rng_seed(&g, 0xC1053u + (uint64_t)_i);
    unsigned calls = 0, ok = 0, closed = 0, bad_status = 0, bad_digest = 0;
    for (unsigned round = 0; round < rounds; round++) {
        hb_engine *e = open_small_staging(_i);
        atomic_int started = 0;
        pthread_t th[RACE_THREADS];
        for (int k = 0; k < RACE_THREADS; k++) {
            r[k].e = e;
            r[k].started = &started;
            r[k].calls = r[k].ok = r[k].closed = r[k].bad_status = r[k].bad_digest = 0;
            ck_assert_int_eq(pthread_create(&th[k], NULL, racer_main, &r[k]), 0);
        }
        while (atomic_load(&started) < RACE_THREADS / 2)
            sched_yield();
        short_delay(&g, round);
        alarm(120); /* a hang in close or in a racing call kills the test */
        ck_assert_int_eq(hb_testing_shut_down(e), HB_OK);
        for (int k = 0; k < RACE_THREADS; k++)
            ck_assert_int_eq(pthread_join(th[k], NULL), 0);
        alarm(0);
        hb_digest d;
        hb_job *j = NULL;
        hb_stats s;
        ck_assert_int_eq(hb_submit(e, r[0].m, 1, &d, &j), HB_ERR_CLOSED);
        ck_assert_ptr_null(j);
        ck_assert_int_eq(hb_sha1_batch(e, r[0].m, 1, &d), HB_ERR_CLOSED);
        ck_assert_int_eq(hb_engine_stats(e, &s), HB_ERR_CLOSED);
        hb_engine_close(e);
        for (int k = 0; k < RACE_THREADS; k++) {
            calls += r[k].calls;
            ok += r[k].ok;
            closed += r[k].closed;
            bad_status += r[k].bad_status;
            bad_digest += r[k].bad_digest;
            if (r[k].first_error[0] && bad_status < 4)
                fprintf(stderr, "%s round %u thread %d: %s\n", variants[_i].name, round, k,
                        r[k].first_error);
        }
    }
    fprintf(stderr, "%s: %u rounds x %d threads: %u calls, %u OK, %u closed\n",
            variants[_i].name, rounds, RACE_THREADS, calls, ok, closed);
    ck_assert_msg(bad_status == 0, "%u calls answered neither HB_OK nor HB_ERR_CLOSED",
                  bad_status);
    ck_assert_msg(bad_digest == 0, "%u finished jobs had wrong digests", bad_digest);
    ck_assert_uint_ge(closed, RACE_THREADS * rounds);
    for (int k = 0; k < RACE_THREADS; k++)
        free(r[k].data);
    free(r);
}
END_TEST

/* ---- (g) cancel between the chunks of long messages ---------------- */

#define LONG_MSGS 4
#define LONG_LEN ((size_t)256 << 20)
#define LONG_STAGING ((size_t)1 << 20)
#define LONG_RING 3u
#define LONG_THREADS 2u
#define LONG_TRIES 8

/* Variant i with a known ring, staging and pool, for the in-flight bound. */
static hb_engine *open_long(int i)
{
    hb_config cfg;
    variant_config(&cfg, i);
    cfg.staging_bytes = LONG_STAGING;
    cfg.ring_depth = LONG_RING;
    cfg.cpu_threads = LONG_THREADS;
    return tu_open_cfg(&cfg);
}

/* What may still be hashed for a job after its cancel: every launch a
 * device had in flight (its ring) and one more it was about to start,
 * each at most a staging buffer; two CPU pieces (2 MiB each) per pool
 * thread, hashed or verified. */
static uint64_t in_flight_bound(const hb_engine *e)
{
    hb_stats st = stats_of(e);
    unsigned devices = st.ndevices > 0 ? st.ndevices - 1 : 0;
    return (uint64_t)devices * (LONG_RING + 1) * LONG_STAGING +
           (uint64_t)LONG_THREADS * 2 * ((uint64_t)2 << 20);
}

/* Waits until the engine has hashed some of j (it is under way). */
static void wait_until_started(hb_job *j)
{
    uint64_t done = 0, at_cancel = 0;
    while (done == 0 && hb_job_wait(j, 0) == HB_ERR_TIMEOUT) {
        ck_assert_int_eq(hb_testing_job_work(j, &done, &at_cancel), HB_OK);
        usleep(200);
    }
}

/* The engine still hashes right, and nothing is left queued. */
static void check_still_works(hb_engine *e, int i)
{
    tu_msgset s;
    tu_msgset_random(&s, 200, 100000, 0x10Fu + (uint64_t)i);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "after a long cancel");
    ck_assert_uint_eq(stats_of(e).queue_messages, 0);
    free(got);
    tu_msgset_free(&s);
}

/* One try: submit the long job, cancel (or free) it once under way.
 * Returns 1 if the cancel came before the job was all hashed (else it
 * had finished first, and the try proves nothing). */
static int cancel_long_job(int i, const hb_msg *m, int by_free, uint64_t total)
{
    hb_engine *e = open_long(i);
    uint64_t bound = in_flight_bound(e);
    hb_digest out[LONG_MSGS];
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, m, LONG_MSGS, out, &j), HB_OK);
    wait_until_started(j);
    alarm(120);
    ck_assert_int_eq(hb_job_cancel(j), HB_OK); /* hb_job_free: cancel, release */
    alarm(0);
    uint64_t done = 0, at_cancel = 0;
    ck_assert_int_eq(hb_testing_job_work(j, &done, &at_cancel), HB_OK);
    hb_status outcome = hb_job_wait(j, 0);
    if (by_free)
        hb_job_free(j);
    int landed = at_cancel > 0 && at_cancel < total;
    if (landed) {
        uint64_t after = done - at_cancel;
        fprintf(stderr, "%s: %s: %llu KiB of %llu MiB hashed at the cancel, %llu KiB after "
                "(bound %llu KiB)\n", variants[i].name, by_free ? "free" : "cancel",
                (unsigned long long)(at_cancel >> 10), (unsigned long long)(total >> 20),
                (unsigned long long)(after >> 10), (unsigned long long)(bound >> 10));
        ck_assert_msg(outcome == HB_ERR_CANCELLED, "%s: a job cancelled half-way ended %s",
                      variants[i].name, hb_status_name(outcome));
        ck_assert_msg(after <= bound, "%s: %llu bytes hashed for the job after its cancel, "
                      "more than the %llu in flight at most", variants[i].name,
                      (unsigned long long)after, (unsigned long long)bound);
    }
    check_still_works(e, i);
    if (!by_free)
        hb_job_free(j);
    hb_engine_close(e);
    return landed;
}

/* One try with close instead: the running job ends HB_ERR_CLOSED at its
 * next chunk, before it is all hashed. Returns 1 if close came first. */
static int close_during_long_job(int i, const hb_msg *m, uint64_t total)
{
    hb_engine *e = open_long(i);
    hb_digest out[LONG_MSGS];
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, m, LONG_MSGS, out, &j), HB_OK);
    wait_until_started(j);
    uint64_t before = 0, done = 0, at_cancel = 0;
    ck_assert_int_eq(hb_testing_job_work(j, &before, &at_cancel), HB_OK);
    alarm(120);
    hb_engine_close(e);
    alarm(0);
    ck_assert_int_eq(hb_testing_job_work(j, &done, &at_cancel), HB_OK);
    hb_status outcome = hb_job_wait(j, 0);
    hb_job_free(j);
    if (before >= total)
        return 0; /* it was all hashed before close began */
    fprintf(stderr, "%s: close: %llu KiB hashed before it, %llu KiB in all\n",
            variants[i].name, (unsigned long long)(before >> 10),
            (unsigned long long)(done >> 10));
    ck_assert_msg(outcome == HB_ERR_CLOSED || done >= total,
                  "%s: a job half-way at close ended %s", variants[i].name,
                  hb_status_name(outcome));
    return outcome == HB_ERR_CLOSED;
}

START_TEST(cancel_stops_long_messages)
{
    uint8_t *data = malloc(LONG_LEN);
    ck_assert_ptr_nonnull(data);
    tu_rng r;
    tu_rng_seed(&r, 0x1046u);
    tu_rng_fill(&r, data, 1u << 20);
    for (size_t at = 1u << 20; at < LONG_LEN; at += 1u << 20)
        memcpy(data + at, data, 1u << 20);
    hb_msg m[LONG_MSGS];
    for (int k = 0; k < LONG_MSGS; k++)
        m[k] = (hb_msg){data + k * 64, LONG_LEN - (size_t)k * 64};
    uint64_t total = 0;
    for (int k = 0; k < LONG_MSGS; k++)
        total += m[k].len;
    for (int how = 0; how < 3; how++) {
        int landed = 0;
        for (int t = 0; t < LONG_TRIES && !landed; t++)
            landed = how < 2 ? cancel_long_job(_i, m, how, total)
                             : close_during_long_job(_i, m, total);
        ck_assert_msg(landed, "%s: in %d tries the job was always all hashed before its %s",
                      variants[_i].name, LONG_TRIES, how == 2 ? "close" : "cancel");
    }
    free(data);
}
END_TEST

static Suite *cancel_close_suite(void)
{
    Suite *s = suite_create("cancel_close");
    TCase *tc = tcase_create("cancel");
    tcase_set_timeout(tc, 500);
    tcase_add_loop_test(tc, cancel_races_completion, 0, NVARIANTS);
    tcase_add_loop_test(tc, cancel_among_neighbours_threads, 0, NVARIANTS);
    tcase_add_loop_test(tc, cancel_wakes_waiter, 0, NVARIANTS);
    tcase_add_loop_test(tc, free_running_jobs, 0, NVARIANTS);
    suite_add_tcase(s, tc);
    tc = tcase_create("close");
    tcase_set_timeout(tc, 200);
    tcase_add_loop_test(tc, close_while_busy, 0, NVARIANTS);
    tcase_add_loop_test(tc, close_with_unwaited_jobs, 0, NVARIANTS);
    tcase_add_loop_test(tc, close_idle, 0, NVARIANTS);
    suite_add_tcase(s, tc);
    tc = tcase_create("close_race");
    tcase_set_timeout(tc, 400);
    tcase_add_loop_test(tc, close_races_submits, 0, NVARIANTS);
    suite_add_tcase(s, tc);
    tc = tcase_create("cancel_long");
    tcase_set_timeout(tc, 400);
    tcase_add_loop_test(tc, cancel_stops_long_messages, 0, NVARIANTS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(cancel_close_suite());
}
