/*
 * gate.c - counting calls in and out of an engine (see gate.h).
 *
 * Owns: the gate word. The shut bit and the count live in one atomic word,
 * so "shut" and "inside" cannot miss each other: an entry is a
 * compare-and-swap that fails once the bit is set, and after it is set the
 * count only falls. Exactly one party sets `drained`: hb_gate_shut when
 * nobody was inside, else the call whose leaving takes the count to 0; it
 * does so under the lock and touches nothing afterwards, so the waiter may
 * destroy the gate as soon as it sees the flag.
 * Must not: sleep in hb_gate_enter or hb_gate_leave while the door is open.
 */
#include "gate.h"

#define HB_GATE_SHUT ((uint_fast64_t)1 << 63)
#define HB_GATE_COUNT (HB_GATE_SHUT - 1)

void hb_gate_init(hb_gate *g)
{
    atomic_init(&g->word, 0);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->emptied, NULL);
    g->drained = 0;
}

void hb_gate_destroy(hb_gate *g)
{
    pthread_cond_destroy(&g->emptied);
    pthread_mutex_destroy(&g->lock);
}

int hb_gate_enter(hb_gate *g)
{
    uint_fast64_t word = atomic_load(&g->word);
    do {
        if (word & HB_GATE_SHUT)
            return 0;
    } while (!atomic_compare_exchange_weak(&g->word, &word, word + 1));
    return 1;
}

static void mark_drained(hb_gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->drained = 1;
    pthread_cond_broadcast(&g->emptied);
    pthread_mutex_unlock(&g->lock);
}

void hb_gate_leave(hb_gate *g)
{
    uint_fast64_t before = atomic_fetch_sub(&g->word, 1);
    if ((before & HB_GATE_SHUT) && (before & HB_GATE_COUNT) == 1)
        mark_drained(g); /* the last one out of a shut door */
}

void hb_gate_shut(hb_gate *g)
{
    uint_fast64_t before = atomic_fetch_or(&g->word, HB_GATE_SHUT);
    if (before & HB_GATE_SHUT)
        return;
    if ((before & HB_GATE_COUNT) == 0)
        mark_drained(g); /* nobody inside: nobody will leave */
}

void hb_gate_wait_empty(hb_gate *g)
{
    pthread_mutex_lock(&g->lock);
    while (!g->drained)
        pthread_cond_wait(&g->emptied, &g->lock);
    pthread_mutex_unlock(&g->lock);
}
