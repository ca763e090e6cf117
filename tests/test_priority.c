/*
 * test_priority.c - hb_config.idle_priority: the engine's own threads run
 * at the lowest CPU priority (SCHED_IDLE), the caller's thread does not,
 * digests stay right, and the setting's values and HASHBATCH_PRIORITY are
 * checked.
 *
 * The evidence is the scheduling policy of each thread of this process,
 * read from /proc/self/task/TID/stat (field 41), before and after an
 * engine opens: never a time or a CPU share.
 */
#include <check.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

#define POOL_THREADS 3u

/* thread_policy: the scheduling policy of thread tid, or -1. */
static int thread_policy(const char *tid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t got = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[got] = '\0';
    char *p = strrchr(line, ')'); /* the name may hold spaces and parens */
    if (p == NULL)
        return -1;
    /* after ") ": field 3 (state) onwards; policy is field 41 */
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok != NULL; tok = strtok(NULL, " "))
        if (++field == 41)
            return atoi(tok);
    return -1;
}

/* count_policy: how many threads of this process have policy. */
static unsigned count_policy(int policy)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_msg(d != NULL, "cannot list /proc/self/task");
    unsigned n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && thread_policy(e->d_name) == policy)
            n++;
    closedir(d);
    return n;
}

/* idle_threads_once_started: the count of SCHED_IDLE threads once at
 * least want are (a worker lowers its own priority when it starts, which
 * may be after hb_engine_open returns), or what there are after 60 s. */
static unsigned idle_threads_once_started(unsigned want)
{
    unsigned n = count_policy(SCHED_IDLE);
    for (int ms = 0; n < want && ms < 60000; ms++) {
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
        n = count_policy(SCHED_IDLE);
    }
    return n;
}

static hb_engine *open_pool(int idle)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.cpu_threads = POOL_THREADS;
    cfg.idle_priority = idle;
    return tu_open_cfg(&cfg);
}

/* hash_some: a batch on e, every digest checked against OpenSSL. */
static void hash_some(hb_engine *e)
{
    enum { N = 257 };
    static unsigned char data[N * 97];
    hb_msg m[N];
    hb_digest out[N];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 131u + 7u);
    for (size_t i = 0; i < N; i++)
        m[i] = (hb_msg){data + i * 97, i % 97};
    tu_batch(e, m, N, out);
    for (size_t i = 0; i < N; i++) {
        uint8_t want[20];
        tu_sha1(m[i].data, m[i].len, want);
        ck_assert_msg(memcmp(want, out[i], 20) == 0, "digest %zu wrong", i);
    }
}

START_TEST(test_idle_engine_threads_only)
{
    ck_assert_int_eq(count_policy(SCHED_IDLE), 0);
    hb_engine *e = open_pool(1);
    hash_some(e);
    unsigned idle = idle_threads_once_started(POOL_THREADS);
    ck_assert_msg(idle >= POOL_THREADS, "%u threads at SCHED_IDLE, want the %u of the pool", idle,
                  POOL_THREADS);
    ck_assert_int_eq(sched_getscheduler(0), SCHED_OTHER); /* the caller keeps its own */
    hb_engine_close(e);
    ck_assert_int_eq(count_policy(SCHED_IDLE), 0); /* they were the engine's */
}
END_TEST

START_TEST(test_normal_by_default)
{
    hb_config cfg;
    hb_config_init(&cfg);
    ck_assert_int_eq(cfg.idle_priority, 0);
    hb_engine *e = open_pool(0);
    hash_some(e);
    ck_assert_int_eq(count_policy(SCHED_IDLE), 0);
    hb_engine_close(e);
}
END_TEST

START_TEST(test_environment_sets_it)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.cpu_threads = POOL_THREADS;
    cfg.use_environment = 1;
    setenv("HASHBATCH_PRIORITY", "idle", 1);
    hb_engine *e = tu_open_cfg(&cfg);
    unsetenv("HASHBATCH_PRIORITY");
    ck_assert_uint_ge(idle_threads_once_started(POOL_THREADS), POOL_THREADS);
    hash_some(e);
    hb_engine_close(e);
    ck_assert_int_eq(count_policy(SCHED_IDLE), 0);
}
END_TEST

START_TEST(test_bad_values_refused)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.idle_priority = 2;
    hb_engine *e = NULL;
    ck_assert_int_eq(hb_engine_open(&e, &cfg), HB_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(e);
    ck_assert_ptr_nonnull(strstr(hb_engine_last_error(NULL), "idle_priority"));

    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.use_environment = 1;
    setenv("HASHBATCH_PRIORITY", "low", 1);
    hb_status st = hb_engine_open(&e, &cfg);
    unsetenv("HASHBATCH_PRIORITY");
    ck_assert_int_eq(st, HB_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(hb_engine_last_error(NULL), "HASHBATCH_PRIORITY"));
    ck_assert_ptr_nonnull(strstr(hb_engine_last_error(NULL), "'low'"));
}
END_TEST

static Suite *priority_suite(void)
{
    Suite *s = suite_create("priority");
    TCase *tc = tcase_create("policy");
    tcase_add_test(tc, test_idle_engine_threads_only);
    tcase_add_test(tc, test_normal_by_default);
    tcase_add_test(tc, test_environment_sets_it);
    tcase_add_test(tc, test_bad_values_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(priority_suite());
}
