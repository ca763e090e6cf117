/*
 * test_jobs.c - the asynchronous job API: hb_submit, hb_job_wait,
 * hb_job_fd, hb_job_free, on every backend, against OpenSSL.
 *
 * Covers: submit/wait (one job, several jobs in flight waited out of
 * order); a job of n = 0 finished at once; wait with timeout 0 on a large
 * job (HB_ERR_TIMEOUT, later HB_OK); short timed waits until done (a timed
 * out wait waited at least its timeout); huge timeouts do not overflow into
 * "timed out"; the eventfd of hb_job_fd (readable only once the job is
 * done, readable at once for a finished job, stays readable, one fd per
 * job); several threads waiting on one job all wake with HB_OK; NULL
 * arguments; stats.jobs_completed counted before the waiter wakes; a
 * small job is not held up behind a long message submitted before it
 * (the long one held by a test gate, HB_FAULT_HOLD_LONG, until the small
 * one is done: ordered by events, not by time).
 * Backends: cpu, opencl, and auto with device "all" (devices and the pool
 * side by side).
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hb_testing.h"
#include "service_util.h"

/* ---- a large job: one buffer cut into messages ------------------------ */

#define BIG_BYTES ((size_t)256 << 20)

typedef struct {
    uint8_t *data;
    hb_msg *m;
    size_t n;
    hb_digest *want;
    hb_digest *got;
} big_job;

/* nmsg messages covering BIG_BYTES (nmsg 1: one 256 MiB message). */
static void big_job_make(big_job *b, size_t nmsg, uint64_t seed)
{
    tu_rng r;
    tu_rng_seed(&r, seed);
    b->data = malloc(BIG_BYTES);
    ck_assert_ptr_nonnull(b->data);
    tu_rng_fill(&r, b->data, BIG_BYTES);
    b->n = nmsg;
    b->m = calloc(nmsg, sizeof *b->m);
    ck_assert_ptr_nonnull(b->m);
    size_t each = BIG_BYTES / nmsg;
    for (size_t i = 0; i < nmsg; i++)
        b->m[i] = (hb_msg){b->data + i * each, each - (i % 7)};
    b->want = tu_oracle(b->m, nmsg);
    b->got = tu_digests(nmsg);
}

static void big_job_free(big_job *b)
{
    free(b->data);
    free(b->m);
    free(b->want);
    free(b->got);
}

static int fd_readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
    int rc = poll(&p, 1, timeout_ms);
    ck_assert_msg(rc >= 0, "poll failed");
    ck_assert_msg((p.revents & (POLLERR | POLLNVAL)) == 0,
                  "poll: revents 0x%x on the job's fd", (unsigned)p.revents);
    return rc == 1 && (p.revents & POLLIN);
}

/* ---- submit / wait -------------------------------------------------- */

START_TEST(submit_wait_one)
{
    hb_engine *e = open_variant_checked(_i);
    tu_msgset s;
    tu_msgset_random(&s, 3000, 5000, 0x1000u + (uint64_t)_i);
    hb_digest *got = tu_digests(s.n);
    hb_job *j = NULL;
    ck_assert_int_eq(hb_submit(e, s.m, s.n, got, &j), HB_OK);
    ck_assert_ptr_nonnull(j);
    hb_status st = hb_job_wait(j, -1);
    ck_assert_msg(st == HB_OK, "wait = %s: %s", hb_status_name(st),
                  hb_engine_last_error(e));
    tu_assert_digests(s.m, s.n, s.want, got, variants[_i].name);
    /* a finished job answers again, the same */
    ck_assert_int_eq(hb_job_wait(j, 0), HB_OK);
    ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
    ck_assert_int_eq(hb_job_cancel(j), HB_OK); /* finished: stays HB_OK */
    ck_assert_int_eq(hb_job_wait(j, 0), HB_OK);
    hb_job_free(j);
    hb_stats st2 = stats_of(e);
    ck_assert_uint_eq(st2.jobs_submitted, 1);
    ck_assert_uint_eq(st2.jobs_completed, 1);
    ck_assert_uint_eq(st2.messages, s.n);
    ck_assert_uint_eq(st2.bytes, s.total_bytes);
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

#define NJOBS 12

START_TEST(submit_many_wait_out_of_order)
{
    hb_engine *e = open_variant_checked(_i);
    tu_msgset s[NJOBS];
    hb_digest *got[NJOBS];
    hb_job *j[NJOBS];
    for (int k = 0; k < NJOBS; k++) {
        /* sizes vary: 1 message to 2000, short and long */
        size_t n = k % 3 == 0 ? 1 : (size_t)(k * 150);
        tu_msgset_random(&s[k], n, k % 2 ? 300 : 70000,
                         0x2000u + (uint64_t)(k * 10 + _i));
        got[k] = tu_digests(n);
        memset(got[k], 0xEE, n * sizeof(hb_digest));
        ck_assert_int_eq(hb_submit(e, s[k].m, n, got[k], &j[k]), HB_OK);
    }
    /* wait newest first, then check all */
    for (int k = NJOBS - 1; k >= 0; k--)
        ck_assert_int_eq(hb_job_wait(j[k], -1), HB_OK);
    uint64_t msgs = 0, bytes = 0;
    for (int k = 0; k < NJOBS; k++) {
        tu_assert_digests(s[k].m, s[k].n, s[k].want, got[k],
                          variants[_i].name);
        msgs += s[k].n;
        bytes += s[k].total_bytes;
    }
    hb_stats st = stats_of(e);
    ck_assert_uint_eq(st.jobs_completed, NJOBS);
    ck_assert_uint_eq(st.messages, msgs);
    ck_assert_uint_eq(st.bytes, bytes);
    ck_assert_uint_eq(st.queue_messages, 0);
    ck_assert_uint_eq(st.queue_jobs, 0);
    for (int k = 0; k < NJOBS; k++) {
        hb_job_free(j[k]);
        free(got[k]);
        tu_msgset_free(&s[k]);
    }
    hb_engine_close(e);
}
END_TEST

START_TEST(zero_message_job)
{
    hb_engine *e = open_variant_checked(_i);
    hb_job *j = NULL;
    ck_assert_int_eq(hb_submit(e, NULL, 0, NULL, &j), HB_OK);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(hb_job_wait(j, 0), HB_OK); /* finished at once */
    int fd = -1;
    ck_assert_int_eq(hb_job_fd(j, &fd), HB_OK);
    ck_assert_int_ge(fd, 0);
    ck_assert_msg(fd_readable(fd, 0), "fd of an n = 0 job not readable");
    hb_job_free(j);

    /* n = 0 with non-NULL pointers is the same */
    hb_msg m = {"x", 1};
    hb_digest d;
    ck_assert_int_eq(hb_submit(e, &m, 0, &d, &j), HB_OK);
    ck_assert_int_eq(hb_job_wait(j, 0), HB_OK);
    hb_job_free(j);

    /* one message of length 0 with NULL data is allowed */
    hb_msg empty = {NULL, 0};
    uint8_t want[20];
    tu_sha1(NULL, 0, want);
    memset(d, 0, sizeof d);
    ck_assert_int_eq(hb_submit(e, &empty, 1, &d, &j), HB_OK);
    ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
    ck_assert_msg(memcmp(d, want, 20) == 0, "SHA-1(\"\") wrong");
    hb_job_free(j);

    hb_stats st = stats_of(e);
    ck_assert_uint_eq(st.jobs_submitted, 3);
    ck_assert_uint_eq(st.jobs_completed, 3);
    ck_assert_uint_eq(st.messages, 1);
    hb_engine_close(e);
}
END_TEST

/* ---- timeouts ------------------------------------------------------- */

/* One 256 MiB message: SHA-1 of one message is sequential, so it takes
 * a good fraction of a second on any backend; a look (timeout 0) right
 * after submit cannot see it done. */
START_TEST(wait_timeout_zero_then_ok)
{
    hb_engine *e = open_variant_checked(_i);
    big_job b;
    big_job_make(&b, 1, 0x3000u);
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, b.m, b.n, b.got, &j), HB_OK);
    hb_status st = hb_job_wait(j, 0);
    ck_assert_msg(st == HB_ERR_TIMEOUT,
                  "look at a 256 MiB job right after submit = %s",
                  hb_status_name(st));
    ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
    ck_assert_int_eq(hb_job_wait(j, 0), HB_OK);
    tu_assert_digests(b.m, b.n, b.want, b.got, "256 MiB");
    hb_job_free(j);
    big_job_free(&b);
    hb_engine_close(e);
}
END_TEST

START_TEST(wait_short_timeouts_until_done)
{
    hb_engine *e = open_variant_checked(_i);
    big_job b;
    big_job_make(&b, 64, 0x3100u + (uint64_t)_i);
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, b.m, b.n, b.got, &j), HB_OK);
    const int64_t timeout = 2000000; /* 2 ms */
    unsigned timeouts = 0;
    hb_status st;
    double begin = tu_now();
    for (;;) {
        double t0 = tu_now();
        st = hb_job_wait(j, timeout);
        double waited = tu_now() - t0;
        if (st != HB_ERR_TIMEOUT)
            break;
        /* a timed-out wait waited its whole timeout (lower bound only) */
        ck_assert_msg(waited >= 0.0019,
                      "wait(2 ms) timed out after %.6f s", waited);
        timeouts++;
        ck_assert_msg(tu_now() - begin < 240, "job never finished");
    }
    ck_assert_msg(st == HB_OK, "wait = %s", hb_status_name(st));
    fprintf(stderr, "%s: %u timed-out 2 ms waits before done\n",
            variants[_i].name, timeouts);
    tu_assert_digests(b.m, b.n, b.want, b.got, "64 x 4 MiB");
    hb_job_free(j);
    big_job_free(&b);
    hb_engine_close(e);
}
END_TEST

/* Timeouts near INT64_MAX must mean "very long", not overflow into the
 * past (an immediate HB_ERR_TIMEOUT); any negative timeout is forever. */
START_TEST(wait_huge_and_negative_timeouts)
{
    hb_engine *e = open_variant_checked(_i);
    tu_msgset s;
    tu_msgset_random(&s, 2000, 20000, 0x3200u);
    const int64_t timeouts[] = {INT64_MAX, INT64_MAX - 1, (int64_t)1 << 62,
                                INT64_MIN, -2, 999999999, 1000000000};
    for (size_t t = 0; t < sizeof timeouts / sizeof timeouts[0]; t++) {
        hb_digest *got = tu_digests(s.n);
        hb_job *j;
        ck_assert_int_eq(hb_submit(e, s.m, s.n, got, &j), HB_OK);
        hb_status st;
        do
            st = hb_job_wait(j, timeouts[t]);
        while (st == HB_ERR_TIMEOUT && timeouts[t] < 2000000000);
        ck_assert_msg(st == HB_OK, "wait(%lld) = %s", (long long)timeouts[t],
                      hb_status_name(st));
        tu_assert_digests(s.m, s.n, s.want, got, "timeouts");
        hb_job_free(j);
        free(got);
    }
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

/* ---- hb_job_fd ------------------------------------------------------ */

START_TEST(fd_readable_only_when_done)
{
    hb_engine *e = open_variant_checked(_i);
    big_job b;
    big_job_make(&b, 16, 0x4000u + (uint64_t)_i);
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, b.m, b.n, b.got, &j), HB_OK);
    int fd = -1, fd2 = -1;
    ck_assert_int_eq(hb_job_fd(j, &fd), HB_OK);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(hb_job_fd(j, &fd2), HB_OK);
    ck_assert_int_eq(fd, fd2); /* one descriptor per job */
    /* readable implies done, whenever we look */
    if (fd_readable(fd, 0))
        ck_assert_msg(hb_job_wait(j, 0) != HB_ERR_TIMEOUT,
                      "fd readable but the job is not done");
    unsigned polls = 0;
    while (!fd_readable(fd, 5)) {
        ck_assert_msg(++polls < 48000, "fd never became readable");
    }
    ck_assert_msg(hb_job_wait(j, 0) == HB_OK,
                  "fd readable but wait(0) = %s",
                  hb_status_name(hb_job_wait(j, 0)));
    tu_assert_digests(b.m, b.n, b.want, b.got, "fd job");
    /* it stays readable */
    ck_assert(fd_readable(fd, 0));
    ck_assert(fd_readable(fd, 0));
    hb_job_free(j);
    big_job_free(&b);
    hb_engine_close(e);
}
END_TEST

/* The other order: wait first, then the fd must already be readable. */
START_TEST(fd_after_wait_readable)
{
    hb_engine *e = open_variant_checked(_i);
    big_job b;
    big_job_make(&b, 32, 0x4100u + (uint64_t)_i);
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, b.m, b.n, b.got, &j), HB_OK);
    int fd = -1;
    ck_assert_int_eq(hb_job_fd(j, &fd), HB_OK); /* made while running */
    ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
    ck_assert_msg(fd_readable(fd, 0), "wait returned OK, fd not readable");
    tu_assert_digests(b.m, b.n, b.want, b.got, "fd job");
    hb_job_free(j);
    big_job_free(&b);
    hb_engine_close(e);
}
END_TEST

START_TEST(fd_of_finished_job)
{
    hb_engine *e = open_variant_checked(_i);
    tu_msgset s;
    tu_msgset_random(&s, 100, 1000, 0x4200u);
    hb_digest *got = tu_digests(s.n);
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, s.m, s.n, got, &j), HB_OK);
    ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
    int fd = -1;
    ck_assert_int_eq(hb_job_fd(j, &fd), HB_OK); /* made after the end */
    ck_assert_msg(fd_readable(fd, 0), "fd made after the end not readable");
    ck_assert(fd_readable(fd, 0));
    tu_assert_digests(s.m, s.n, s.want, got, "fd after");
    hb_job_free(j);
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

/* Many jobs each with an fd, polled together like an event loop would:
 * every fd becomes readable, and a readable fd always means done. */
#define NPOLL 24
START_TEST(fd_event_loop)
{
    hb_engine *e = open_variant_checked(_i);
    tu_msgset s[NPOLL];
    hb_digest *got[NPOLL];
    hb_job *j[NPOLL];
    struct pollfd p[NPOLL];
    for (int k = 0; k < NPOLL; k++) {
        tu_msgset_random(&s[k], (size_t)(1 + k * 37), 9000,
                         0x4300u + (uint64_t)k);
        got[k] = tu_digests(s[k].n);
        ck_assert_int_eq(hb_submit(e, s[k].m, s[k].n, got[k], &j[k]), HB_OK);
        int fd;
        ck_assert_int_eq(hb_job_fd(j[k], &fd), HB_OK);
        p[k] = (struct pollfd){.fd = fd, .events = POLLIN, .revents = 0};
    }
    int left = NPOLL;
    double begin = tu_now();
    while (left > 0) {
        int rc = poll(p, NPOLL, 100);
        ck_assert_int_ge(rc, 0);
        for (int k = 0; k < NPOLL; k++) {
            if (p[k].fd < 0 || !(p[k].revents & POLLIN))
                continue;
            ck_assert_msg(hb_job_wait(j[k], 0) == HB_OK,
                          "job %d: fd readable, wait(0) not OK", k);
            tu_assert_digests(s[k].m, s[k].n, s[k].want, got[k], "poll");
            p[k].fd = -1; /* poll ignores negative fds */
            left--;
        }
        ck_assert_msg(tu_now() - begin < 240, "%d fds never readable", left);
    }
    for (int k = 0; k < NPOLL; k++) {
        hb_job_free(j[k]);
        free(got[k]);
        tu_msgset_free(&s[k]);
    }
    hb_engine_close(e);
}
END_TEST

/* ---- several waiters ------------------------------------------------ */

#define NWAITERS 8

typedef struct {
    hb_job *job;
    int timed; /* 1: short timed waits in a loop; 0: wait forever */
    hb_status result;
    unsigned timeouts;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    if (w->timed) {
        while ((w->result = hb_job_wait(w->job, 1000000)) == HB_ERR_TIMEOUT)
            w->timeouts++;
    } else {
        w->result = hb_job_wait(w->job, -1);
    }
    return NULL;
}

START_TEST(many_waiters_one_job)
{
    hb_engine *e = open_variant_checked(_i);
    big_job b;
    big_job_make(&b, 128, 0x5000u + (uint64_t)_i);
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, b.m, b.n, b.got, &j), HB_OK);
    pthread_t t[NWAITERS];
    waiter w[NWAITERS];
    for (int k = 0; k < NWAITERS; k++) {
        w[k] = (waiter){.job = j, .timed = k % 2, .result = HB_ERR_INTERNAL,
                        .timeouts = 0};
        ck_assert_int_eq(pthread_create(&t[k], NULL, waiter_main, &w[k]), 0);
    }
    alarm(240); /* watchdog: a waiter that never wakes kills the test */
    for (int k = 0; k < NWAITERS; k++)
        ck_assert_int_eq(pthread_join(t[k], NULL), 0);
    alarm(0);
    for (int k = 0; k < NWAITERS; k++)
        ck_assert_msg(w[k].result == HB_OK, "waiter %d got %s", k,
                      hb_status_name(w[k].result));
    tu_assert_digests(b.m, b.n, b.want, b.got, "many waiters");
    hb_stats st = stats_of(e);
    ck_assert_uint_eq(st.jobs_completed, 1);
    hb_job_free(j);
    big_job_free(&b);
    hb_engine_close(e);
}
END_TEST

/* ---- jobs_completed is counted before the waiter wakes --------------- */

START_TEST(jobs_completed_before_wake)
{
    hb_engine *e = open_variant_checked(_i);
    tu_msgset s;
    tu_msgset_random(&s, 64, 3000, 0x6000u);
    hb_digest *got = tu_digests(s.n);
    for (uint64_t k = 1; k <= 200; k++) {
        hb_job *j;
        size_t n = 1 + (size_t)(k % s.n);
        ck_assert_int_eq(hb_submit(e, s.m, n, got, &j), HB_OK);
        ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
        hb_stats st = stats_of(e);
        ck_assert_msg(st.jobs_completed == k,
                      "after %llu waits jobs_completed = %llu",
                      (unsigned long long)k,
                      (unsigned long long)st.jobs_completed);
        ck_assert_uint_eq(st.jobs_submitted, k);
        tu_assert_digests(s.m, n, s.want, got, "sequential");
        hb_job_free(j);
    }
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

/* ---- NULL arguments ------------------------------------------------- */

START_TEST(null_arguments)
{
    hb_engine *e = open_variant_checked(_i);
    hb_msg m[2] = {{"abc", 3}, {"de", 2}};
    hb_digest out[2];
    hb_job *j = (hb_job *)(uintptr_t)1; /* must be set to NULL on failure */

    ck_assert_int_eq(hb_submit(e, m, 2, out, NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_submit(NULL, m, 2, out, &j), HB_ERR_NULL_ARGUMENT);
    ck_assert_ptr_null(j);
    j = (hb_job *)(uintptr_t)1;
    ck_assert_int_eq(hb_submit(e, NULL, 2, out, &j), HB_ERR_NULL_ARGUMENT);
    ck_assert_ptr_null(j);
    j = (hb_job *)(uintptr_t)1;
    ck_assert_int_eq(hb_submit(e, m, 2, NULL, &j), HB_ERR_NULL_ARGUMENT);
    ck_assert_ptr_null(j);
    hb_msg bad[3] = {{"a", 1}, {"b", 1}, {NULL, 5}};
    hb_digest out3[3];
    j = (hb_job *)(uintptr_t)1;
    ck_assert_int_eq(hb_submit(e, bad, 3, out3, &j), HB_ERR_NULL_ARGUMENT);
    ck_assert_ptr_null(j);
    ck_assert_msg(strstr(hb_engine_last_error(e), "2") != NULL,
                  "last error does not name message 2: %s",
                  hb_engine_last_error(e));

    ck_assert_int_eq(hb_job_wait(NULL, 0), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_job_wait(NULL, -1), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_job_wait(NULL, 1000), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_job_cancel(NULL), HB_ERR_NULL_ARGUMENT);
    int fd = 12345;
    ck_assert_int_eq(hb_job_fd(NULL, &fd), HB_ERR_NULL_ARGUMENT);
    hb_job_free(NULL);

    /* a real job: hb_job_fd(j, NULL) is refused too */
    ck_assert_int_eq(hb_submit(e, m, 2, out, &j), HB_OK);
    ck_assert_int_eq(hb_job_fd(j, NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
    uint8_t want[20];
    tu_sha1("abc", 3, want);
    ck_assert(memcmp(out[0], want, 20) == 0);
    tu_sha1("de", 2, want);
    ck_assert(memcmp(out[1], want, 20) == 0);
    hb_job_free(j);

    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(NULL, &st), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_engine_stats(e, NULL), HB_ERR_NULL_ARGUMENT);
    st = stats_of(e);
    ck_assert_uint_eq(st.jobs_completed, 1);
    hb_engine_close(e);
}
END_TEST

/* A long message streams through in chunks without holding short jobs
 * up: a small job submitted while a 256 MiB message is being hashed
 * finishes while the long one is still unfinished. Ordered by events, not
 * by time: a test gate (HB_FAULT_HOLD_LONG) stops the long message after
 * its first piece, and is lifted only once the small job is done, so the
 * long job cannot finish first however the threads are scheduled; a small
 * job that waited behind the long one would never finish (the bounded
 * wait fails the test then, after a minute, instead of hanging). */
#define OVERTAKE_WAIT_MS 60000
#define OVERTAKE_WAIT_NS ((int64_t)OVERTAKE_WAIT_MS * 1000000)

static void hold_long_messages(hb_engine *e, int on)
{
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.kind = HB_FAULT_HOLD_LONG;
    ck_assert_int_eq(hb_testing_set_fault(e, on ? &plan : NULL), HB_OK);
}

/* Waits until j's first piece is hashed (its work shows in the counts). */
static uint64_t wait_for_first_piece(hb_job *j, const char *what)
{
    uint64_t bytes = 0, at_cancel = 0;
    for (int ms = 0; ms < OVERTAKE_WAIT_MS; ms++) {
        ck_assert_int_eq(hb_testing_job_work(j, &bytes, &at_cancel), HB_OK);
        if (bytes > 0)
            return bytes;
        struct timespec t = {0, 1000000};
        nanosleep(&t, NULL);
    }
    ck_abort_msg("%s: the long job did no work in %d s", what, OVERTAKE_WAIT_MS / 1000);
    return 0;
}

START_TEST(short_job_overtakes_long)
{
    hb_engine *e = open_variant_checked(_i);
    big_job big;
    big_job_make(&big, 1, 0x10a9);
    uint8_t small_data[10][100];
    hb_msg small[10];
    for (size_t i = 0; i < 10; i++) {
        memset(small_data[i], (int)i, sizeof small_data[i]);
        small[i] = (hb_msg){small_data[i], sizeof small_data[i] - i};
    }
    hb_digest *small_want = tu_oracle(small, 10), small_got[10];
    hb_job *long_job, *short_job;
    hold_long_messages(e, 1);
    ck_assert_int_eq(hb_submit(e, big.m, big.n, big.got, &long_job), HB_OK);
    uint64_t started = wait_for_first_piece(long_job, variants[_i].name);
    ck_assert_int_eq(hb_submit(e, small, 10, small_got, &short_job), HB_OK);
    hb_status short_status = hb_job_wait(short_job, OVERTAKE_WAIT_NS);
    ck_assert_msg(short_status == HB_OK,
                  "%s: the small job submitted while the 256 MiB one was held after %llu bytes "
                  "did not finish (%s): it waits behind the long one",
                  variants[_i].name, (unsigned long long)started, hb_status_name(short_status));
    uint64_t held_at = 0, at_cancel = 0;
    ck_assert_int_eq(hb_testing_job_work(long_job, &held_at, &at_cancel), HB_OK);
    ck_assert_int_eq(hb_job_wait(long_job, 0), HB_ERR_TIMEOUT); /* the gate held it */
    ck_assert_uint_lt(held_at, BIG_BYTES);
    hold_long_messages(e, 0);
    ck_assert_int_eq(hb_job_wait(long_job, -1), HB_OK);
    ck_assert_int_eq(tu_count_mismatches(small, 10, small_want, small_got, "small"), 0);
    ck_assert_int_eq(tu_count_mismatches(big.m, big.n, big.want, big.got, "long"), 0);
    fprintf(stderr, "%s: the small job finished while the long one was held at %llu of %zu bytes\n",
            variants[_i].name, (unsigned long long)held_at, BIG_BYTES);
    hb_job_free(short_job);
    hb_job_free(long_job);
    free(small_want);
    big_job_free(&big);
    hb_engine_close(e);
}
END_TEST

static Suite *jobs_suite(void)
{
    Suite *s = suite_create("jobs");
    TCase *tc = tcase_create("jobs");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, submit_wait_one, 0, NVARIANTS);
    tcase_add_loop_test(tc, submit_many_wait_out_of_order, 0, NVARIANTS);
    tcase_add_loop_test(tc, zero_message_job, 0, NVARIANTS);
    tcase_add_loop_test(tc, wait_timeout_zero_then_ok, 0, NVARIANTS);
    tcase_add_loop_test(tc, wait_short_timeouts_until_done, 0, NVARIANTS);
    tcase_add_loop_test(tc, wait_huge_and_negative_timeouts, 0, NVARIANTS);
    tcase_add_loop_test(tc, fd_readable_only_when_done, 0, NVARIANTS);
    tcase_add_loop_test(tc, fd_after_wait_readable, 0, NVARIANTS);
    tcase_add_loop_test(tc, fd_of_finished_job, 0, NVARIANTS);
    tcase_add_loop_test(tc, fd_event_loop, 0, NVARIANTS);
    tcase_add_loop_test(tc, many_waiters_one_job, 0, NVARIANTS);
    tcase_add_loop_test(tc, jobs_completed_before_wake, 0, NVARIANTS);
    tcase_add_loop_test(tc, null_arguments, 0, NVARIANTS);
    tcase_add_loop_test(tc, short_job_overtakes_long, 0, NVARIANTS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(jobs_suite());
}
