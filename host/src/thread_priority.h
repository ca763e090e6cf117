/*
 * thread_priority.h - the CPU priority of the engine's own threads.
 */
#ifndef HB_THREAD_PRIORITY_H
#define HB_THREAD_PRIORITY_H

/* hb_thread_priority_lowest: the calling thread runs from now on only
 * when no other thread wants its core (Linux SCHED_IDLE; elsewhere, or if
 * that is refused, nice 19). Best effort: a refusal leaves it as it was. */
void hb_thread_priority_lowest(void);

#endif /* HB_THREAD_PRIORITY_H */
