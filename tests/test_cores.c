/*
 * test_cores.c - device_cores (HASHBATCH_DEVICE_CORES): the OpenCL
 * runtime's threads on cores of their own, the CPU pool on the rest, and
 * the scheduler treating an OpenCL CPU device (pocl) as apart from the
 * pool (host/src/cores.c, devices.c, engine.c).
 *
 * Covers: with device_cores "LAST" (the process's last core), an engine on
 * backend auto says where each runs, has one pool thread per remaining
 * core, and its threads are where it says: pocl's threads and the device
 * worker on LAST, the pool's on the others (read from /proc/self/task);
 * the CPU device is reported as not sharing the host's cores; with both
 * backends' models forced equal, a batch of many jobs gives each backend
 * work, every message is hashed exactly once (the counts add up), and
 * every digest is right. An engine opened after this library started the
 * runtime on all cores says CPU devices still share the pool's cores, and
 * schedules them so. A malformed list, a core the process may not use,
 * and a list that leaves the pool no core are refused with
 * HB_ERR_INVALID_ARGUMENT naming the problem. Each test is a fresh
 * process (Check's fork mode), so each starts the runtime anew.
 * Must not: assert timings. Needs two cores and an OpenCL CPU device
 * (pocl); fails, saying so, without them.
 */
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_testing.h"
#include "test_util.h"

/* The process's cores, ascending; the count. */
static int cores_of_process(int *cores, int room)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < room; c++)
        if (CPU_ISSET(c, &set))
            cores[n++] = c;
    ck_assert_msg(n >= 2, "this test needs two cores to give the pool and the device one each; "
                          "the process has %d", n);
    return n;
}

static hb_engine *open_apart(const char *cores, int last)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_AUTO);
    cfg.device_cores = cores;
    cfg.calibrate = 1;
    hb_engine *e = tu_open_cfg(&cfg);
    printf("device_cores %s (last core %d): %s\n", cores, last, hb_engine_describe(e));
    return e;
}

static hb_stats stats_of(const hb_engine *e)
{
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    return st;
}

/* device_index: the first OpenCL device of e's stats, which must be a CPU
 * device (pocl) for these tests to mean anything. */
static unsigned device_index(const hb_engine *e, const hb_stats *st)
{
    for (unsigned k = 0; k < st->ndevices; k++)
        if (!st->device[k].is_cpu)
            return k;
    ck_abort_msg("no OpenCL device opened (pocl's CPU device is needed): %s",
                 hb_engine_describe(e));
    return 0;
}

/* threads_on: how many of this process's threads may run on exactly the
 * one core `core`, and how many on exactly every core but it. */
static void threads_on(int core, int *only_core, int *all_but)
{
    *only_core = *all_but = 0;
    DIR *d = opendir("/proc/self/task");
    ck_assert(d != NULL);
    struct dirent *t;
    while ((t = readdir(d)) != NULL) {
        if (t->d_name[0] == '.')
            continue;
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity((pid_t)atoi(t->d_name), sizeof set, &set) != 0)
            continue; /* the thread ended */
        cpu_set_t mine;
        CPU_ZERO(&mine);
        sched_getaffinity(0, sizeof mine, &mine);
        int count = CPU_COUNT(&set);
        if (getenv("TEST_CORES_DEBUG"))
            printf("thread %s: %d cores, core %d %s\n", t->d_name, count, core,
                   CPU_ISSET(core, &set) ? "in" : "out");
        if (count == 1 && CPU_ISSET(core, &set))
            ++*only_core;
        else if (!CPU_ISSET(core, &set) && count == CPU_COUNT(&mine) - 1)
            ++*all_but;
    }
    closedir(d);
}

START_TEST(test_threads_where_it_says)
{
    int cores[CPU_SETSIZE];
    int n = cores_of_process(cores, CPU_SETSIZE);
    int last = cores[n - 1];
    char list[16];
    snprintf(list, sizeof list, "%d", last);
    hb_engine *e = open_apart(list, last);
    char want[64];
    snprintf(want, sizeof want, ", OpenCL on %d)", last);
    ck_assert_msg(strstr(hb_engine_describe(e), want) != NULL, "no '%s' in: %s", want,
                  hb_engine_describe(e));
    hb_stats st = stats_of(e);
    unsigned k = device_index(e, &st);
    ck_assert_msg(!st.device[k].shares_host_cores,
                  "the CPU device on its own core is reported as sharing the pool's");
    int only_last, all_but_last;
    threads_on(last, &only_last, &all_but_last);
    printf("threads on core %d only: %d; on every other core: %d\n", last, only_last,
           all_but_last);
    /* pocl's compute threads and the device worker; the pool, a thread
     * per other core */
    ck_assert_int_ge(only_last, 2);
    ck_assert_int_eq(all_but_last, n - 1);
    hb_engine_close(e);
}
END_TEST

START_TEST(test_both_work_exactly_once)
{
    int cores[CPU_SETSIZE];
    int n = cores_of_process(cores, CPU_SETSIZE);
    char list[16];
    snprintf(list, sizeof list, "%d", cores[n - 1]);
    hb_engine *e = open_apart(list, cores[n - 1]);
    hb_stats st = stats_of(e);
    unsigned dev = device_index(e, &st);
    hb_cost_terms t[HB_COST_CLASSES];
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        t[c] = (hb_cost_terms){1000, 10, 1.0}; /* equal: each takes a share */
    for (unsigned k = 0; k < st.ndevices; k++)
        ck_assert_int_eq(hb_testing_force_costs(e, k, t), HB_OK);
    tu_msgset s;
    tu_msgset_random(&s, 40000, 4096, 0xc0e5);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "pool and device on disjoint cores");
    st = stats_of(e);
    uint64_t messages = 0;
    for (unsigned k = 0; k < st.ndevices; k++) {
        printf("%s: %llu messages\n", st.device[k].name,
               (unsigned long long)st.device[k].messages);
        messages += st.device[k].messages;
    }
    unsigned pool = dev == 0 ? 1 : 0;
    ck_assert_msg(st.device[dev].messages > 0, "the device got no work");
    ck_assert_msg(st.device[pool].messages > 0, "the pool got no work");
    ck_assert_uint_eq(messages, s.n); /* each message once */
    ck_assert_uint_eq(st.fallbacks, 0);
    ck_assert_uint_eq(st.device_errors, 0);
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

START_TEST(test_runtime_started_elsewhere)
{
    int cores[CPU_SETSIZE];
    int n = cores_of_process(cores, CPU_SETSIZE);
    hb_device_info infos[16];
    size_t count = 0;
    ck_assert_int_eq(hb_devices_list(infos, 16, &count), HB_OK); /* started on every core */
    char spec[16];
    snprintf(spec, sizeof spec, "%d", cores[n - 1]);
    hb_engine *e = open_apart(spec, cores[n - 1]);
    ck_assert_msg(strstr(hb_engine_describe(e), "so CPU devices still share the pool's") != NULL,
                  "no word that the runtime started elsewhere: %s", hb_engine_describe(e));
    hb_stats st = stats_of(e);
    unsigned k = device_index(e, &st);
    ck_assert_msg(st.device[k].shares_host_cores,
                  "a device whose threads run on every core is reported apart");
    hb_engine_close(e);
}
END_TEST

static const char *const BAD[] = {"x", "1-", "0,,1", "4096", "-1"};

START_TEST(test_bad_lists_refused)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.device_cores = BAD[_i];
    hb_engine *e = NULL;
    hb_status st = hb_engine_open(&e, &cfg);
    ck_assert_msg(st == HB_ERR_INVALID_ARGUMENT, "'%s': %s", BAD[_i], hb_status_name(st));
    ck_assert_msg(strstr(hb_engine_last_error(NULL), BAD[_i]) != NULL, "'%s' not named: %s", BAD[_i],
                  hb_engine_last_error(NULL));
}
END_TEST

START_TEST(test_every_core_refused)
{
    int cores[CPU_SETSIZE];
    int n = cores_of_process(cores, CPU_SETSIZE);
    char all[64];
    snprintf(all, sizeof all, "%d-%d", cores[0], cores[n - 1]);
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.device_cores = all;
    hb_engine *e = NULL;
    ck_assert_int_eq(hb_engine_open(&e, &cfg), HB_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(hb_engine_last_error(NULL), "leaves the CPU pool no core") != NULL, "%s",
                  hb_engine_last_error(NULL));
}
END_TEST

static Suite *cores_suite(void)
{
    Suite *s = suite_create("cores");
    TCase *tc = tcase_create("cores");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_threads_where_it_says);
    tcase_add_test(tc, test_both_work_exactly_once);
    tcase_add_test(tc, test_runtime_started_elsewhere);
    tcase_add_loop_test(tc, test_bad_lists_refused, 0, (int)(sizeof BAD / sizeof BAD[0]));
    tcase_add_test(tc, test_every_core_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    unsetenv("HASHBATCH_DEVICE_CORES"); /* each test says what it wants */
    setenv("HASHBATCH_MODEL_CACHE", "off", 1);
    return tu_run_suite(cores_suite());
}
