/*
 * clock.c - monotonic time, deadlines and monotonic condition variables
 * (see clock.h), shared by jobs, files jobs and the engine.
 */
#include "clock.h"

#define NS_PER_S 1000000000

uint64_t hb_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * NS_PER_S + (uint64_t)t.tv_nsec;
}

uint64_t hb_thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * NS_PER_S + (uint64_t)t.tv_nsec;
}

struct timespec hb_deadline_after(int64_t timeout_ns)
{
    if (timeout_ns < 0)
        timeout_ns = 0;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int64_t ns = (int64_t)t.tv_nsec + timeout_ns % NS_PER_S;
    t.tv_sec += (time_t)(timeout_ns / NS_PER_S + ns / NS_PER_S);
    t.tv_nsec = (long)(ns % NS_PER_S);
    return t;
}

int hb_cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}
