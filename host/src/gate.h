/*
 * gate.h - the engine's door: API calls inside it, and shutting it.
 *
 * Owns: the count of public calls that are inside an engine, and the
 * protocol that lets hb_engine_close shut the door (no call gets in from
 * then on) and wait until every call already inside has left, so that
 * nothing is destroyed under a caller. Entering and leaving are one atomic
 * operation each while the door is open; only the last call to leave a
 * shut door takes the lock.
 * Must not: know what the calls do, or block an entering call.
 */
#ifndef HB_GATE_H
#define HB_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct {
    atomic_uint_fast64_t word; /* HB_GATE_SHUT bit | calls inside */
    pthread_mutex_t lock;
    pthread_cond_t emptied;
    int drained; /* guarded by lock: shut, and nobody inside any more */
} hb_gate;

void hb_gate_init(hb_gate *g);
void hb_gate_destroy(hb_gate *g);

/* hb_gate_enter: 1 if the caller is now inside (it must hb_gate_leave);
 * 0 if the door is shut (the caller must not touch what it guards). */
int hb_gate_enter(hb_gate *g);

/* hb_gate_leave: the caller is out; it touches nothing guarded afterwards. */
void hb_gate_leave(hb_gate *g);

/* hb_gate_shut: from now on hb_gate_enter answers 0. Returns at once. */
void hb_gate_shut(hb_gate *g);

/* hb_gate_wait_empty: after hb_gate_shut: blocks until every call that was
 * inside has left (the last one to leave wakes it). */
void hb_gate_wait_empty(hb_gate *g);

#endif /* HB_GATE_H */
