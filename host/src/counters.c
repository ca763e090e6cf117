/*
 * counters.c - the engine's counters and quarantine (counters.h).
 *
 * Owns: the counting under one lock (inline work in atomics: many caller
 * threads come that way at once) and the order of a quarantine.
 * Must not: hold its lock while calling the scheduler or the queue.
 */
#include "counters.h"

#include <stdio.h>
#include <string.h>

#include "prng.h"

void hb_counters_init(hb_counters *c, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    c->rng = seed;
}

void hb_counters_destroy(hb_counters *c)
{
    pthread_mutex_destroy(&c->lock);
}

unsigned hb_counters_add(hb_counters *c, const char *name, int is_cpu, int shares_host_cores)
{
    hb_device_stats *s = &c->device[c->n];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->is_cpu = is_cpu;
    s->shares_host_cores = shares_host_cores;
    if (is_cpu)
        c->pool_index = c->n;
    return c->n++;
}

void hb_counters_set_devices(hb_counters *c, int devices)
{
    atomic_store(&c->devices_alive, devices);
}

void hb_counters_submitted(hb_counters *c)
{
    pthread_mutex_lock(&c->lock);
    c->stats.jobs_submitted++;
    pthread_mutex_unlock(&c->lock);
}

void hb_counters_batch(hb_counters *c, unsigned index, const hb_batch *b, uint64_t busy_ns,
                       uint64_t launches)
{
    pthread_mutex_lock(&c->lock);
    hb_device_stats *d = &c->device[index];
    d->busy_ns += busy_ns;
    d->launches += launches;
    c->stats.device_launches += launches;
    if (b != NULL) {
        d->messages += b->n;
        d->bytes += b->bytes;
        d->batches++;
        c->stats.messages += b->n;
        c->stats.bytes += b->bytes;
        c->stats.batches++;
        if (d->is_cpu)
            c->stats.cpu_bytes += b->bytes;
        else
            c->stats.device_bytes += b->bytes;
    }
    pthread_mutex_unlock(&c->lock);
}

void hb_counters_inline(hb_counters *c, size_t n, uint64_t bytes, uint64_t busy_ns)
{
    atomic_fetch_add(&c->inline_work.busy_ns, busy_ns);
    atomic_fetch_add(&c->inline_work.messages, n);
    atomic_fetch_add(&c->inline_work.bytes, bytes);
    atomic_fetch_add(&c->inline_work.calls, 1);
}

void hb_counters_verify(hb_counters *c, size_t checked, uint64_t bytes, size_t mismatches)
{
    pthread_mutex_lock(&c->lock);
    c->stats.verified += checked;
    c->stats.verified_bytes += bytes;
    c->stats.verify_mismatches += mismatches;
    pthread_mutex_unlock(&c->lock);
}

void hb_counters_moved(hb_counters *c, uint64_t bytes)
{
    pthread_mutex_lock(&c->lock);
    c->stats.cpu_moved_bytes += bytes;
    pthread_mutex_unlock(&c->lock);
}

void hb_counters_fallback(hb_counters *c)
{
    pthread_mutex_lock(&c->lock);
    c->stats.fallbacks++;
    pthread_mutex_unlock(&c->lock);
}

void hb_counters_device_error(hb_counters *c, unsigned index, size_t handed_back)
{
    pthread_mutex_lock(&c->lock);
    c->device[index].errors++;
    c->stats.device_errors++;
    c->stats.fallbacks += handed_back;
    pthread_mutex_unlock(&c->lock);
}

void hb_counters_quarantine(hb_counters *c, unsigned index, hb_sched *s, hb_queue *q)
{
    pthread_mutex_lock(&c->lock);
    int already = c->device[index].quarantined;
    c->device[index].quarantined = 1;
    c->stats.quarantined += !already;
    pthread_mutex_unlock(&c->lock);
    if (already)
        return;
    hb_sched_retire(s, index);
    hb_queue_poke(q);
    if (atomic_fetch_sub(&c->devices_alive, 1) == 1) { /* no device left */
        hb_sched_set_takes_jobs(s, c->pool_index);
        hb_queue_let_cpu_take_jobs(q);
    }
}

uint64_t hb_counters_next_random(hb_counters *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t x = hb_prng_next(&c->rng);
    pthread_mutex_unlock(&c->lock);
    return x;
}

/* Batches hb_sha1_batch hashed on its caller's thread count as the pool's. */
static void add_inline_work(hb_counters *c, hb_stats *out)
{
    uint64_t calls = atomic_load(&c->inline_work.calls);
    uint64_t messages = atomic_load(&c->inline_work.messages);
    uint64_t bytes = atomic_load(&c->inline_work.bytes);
    hb_device_stats *pool = &out->device[c->pool_index];
    pool->busy_ns += atomic_load(&c->inline_work.busy_ns);
    pool->messages += messages;
    pool->bytes += bytes;
    pool->batches += calls;
    out->jobs_submitted += calls;
    out->jobs_completed += calls;
    out->messages += messages;
    out->bytes += bytes;
    out->cpu_bytes += bytes;
    out->batches += calls;
}

void hb_counters_read(hb_counters *c, hb_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    out->ndevices = c->n;
    memcpy(out->device, c->device, sizeof out->device);
    pthread_mutex_unlock(&c->lock);
    add_inline_work(c, out);
}
