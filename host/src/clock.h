/*
 * clock.h - the library's one notion of time: CLOCK_MONOTONIC readings,
 * deadlines for timed waits, and condition variables that wait on it.
 *
 * Owns: hb_now_ns, hb_thread_cpu_ns, hb_deadline_after,
 * hb_cond_init_monotonic, hb_cpu_relax.
 * Must not: read the wall clock (CLOCK_REALTIME jumps when it is set).
 */
#ifndef HB_CLOCK_H
#define HB_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* hb_now_ns: CLOCK_MONOTONIC in nanoseconds. */
uint64_t hb_now_ns(void);

/* hb_thread_cpu_ns: the calling thread's CPU time in nanoseconds: what a
 * piece of work cost it, without the time it waited for a core. */
uint64_t hb_thread_cpu_ns(void);

/* hb_deadline_after: the CLOCK_MONOTONIC time timeout_ns (>= 0; negative is
 * taken as 0) from now, for pthread_cond_timedwait on a condition variable
 * made by hb_cond_init_monotonic. */
struct timespec hb_deadline_after(int64_t timeout_ns);

/* hb_cond_init_monotonic: initialises *c to time its waits on
 * CLOCK_MONOTONIC. Returns pthread_cond_init's result. */
int hb_cond_init_monotonic(pthread_cond_t *c);

/* hb_cpu_relax: one pause in a spin-wait (kinder to the core's other
 * hardware thread and to the memory bus than an empty loop). */
static inline void hb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#endif
