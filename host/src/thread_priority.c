/*
 * thread_priority.c - the CPU priority of the engine's own threads.
 *
 * Owns: lowering the calling thread's priority (hb_config.idle_priority).
 * Why SCHED_IDLE and not a nice value: a Ruby thread that calls
 * Thread.pass gives its core away (sched_yield) on every call, and under
 * the kernel's fair scheduler it then waits a whole slice behind any busy
 * thread of normal weight: measured on a 2-core Zen 5, such a loop beside
 * `sha1_many` of 200,000 x 2 KB on the CPU pool ran 85-300 times per batch
 * of 80-130 ms in 4 of 6 calls (against about 200,000 times while
 * sleeping as long); the same loop beside two `openssl speed` processes
 * ran 70 times per 100 ms, so the cores, not the GVL, are what it lacks.
 * With the pool at nice 19 its worst call saw 3,300; with SCHED_IDLE,
 * 15,000 (bench/ruby/ticker_share.rb).
 * Must not: raise the priority (that needs privileges), or touch threads
 * other than the caller.
 */
#include "thread_priority.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

void hb_thread_priority_lowest(void)
{
#ifdef SCHED_IDLE
    struct sched_param none = {0};
    if (sched_setscheduler(0, SCHED_IDLE, &none) == 0)
        return;
#endif
#ifdef SYS_gettid
    /* on Linux setpriority(PRIO_PROCESS, tid) applies to one thread */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
#else
    (void)setpriority(PRIO_PROCESS, 0, 19);
#endif
}
