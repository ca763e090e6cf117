/*
 * engine.c - the engine: opening, workers, jobs in, stats out, closing.
 *
 * Owns: hb_engine_open/close, hb_submit, hb_sha1_batch, hb_job_cancel,
 * hb_job_free, the stats, and the choice of workers: one thread per OpenCL
 * device the spec selects, plus cpu_threads CPU workers. The CPU workers
 * always take batches a device hands back; they take queued jobs too when
 * the pool is a participant (backend cpu, auto with device "all", or no
 * device left).
 * Every public call on an engine passes its gate (gate.c): close shuts the
 * gate first, so a call that comes during close answers HB_ERR_CLOSED, and
 * close destroys nothing until the calls already inside have left.
 * Must not: touch OpenCL beyond opening and closing devices, or print.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cpu.h"
#include "devices.h"
#include "engine_internal.h"
#include "prng.h"

#define DEFAULT_RING_DEPTH 3u
#define INLINE_MESSAGES_MAX 64u
#define INLINE_BYTES_MAX ((uint64_t)64 << 10)

/* ---- opening ----------------------------------------------------------- */

/* The engine's generator state: the configured seed, else the clocks
 * (any value is a valid splitmix64 state). */
static uint64_t initial_seed(uint64_t seed)
{
    return seed != 0 ? seed : hb_now_ns() ^ (uint64_t)time(NULL) << 32;
}

static hb_device_stats *add_stats_entry(hb_engine *e, const char *name, int is_cpu)
{
    hb_device_stats *s = &e->device_stats[e->ndevice_stats++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->is_cpu = is_cpu;
    return s;
}

static int pool_participates(const hb_engine *e)
{
    return e->settings.backend == HB_BACKEND_CPU || e->ndevices == 0 ||
           (e->settings.backend == HB_BACKEND_AUTO && strcmp(e->settings.device, "all") == 0);
}

/* Opens every device the spec selects (up to the stats table's room);
 * devices that fail to open are skipped if another one opens. */
static hb_status open_devices(hb_engine *e, hb_opencl **opened, size_t *nopened)
{
    hb_cl_device *devices;
    size_t count, nchosen;
    *nopened = 0;
    hb_status st = hb_cl_enumerate(&devices, &count);
    if (st != HB_OK)
        return hb_error_set(&e->error, st, "out of memory listing OpenCL devices");
    size_t *chosen = calloc(count ? count : 1, sizeof *chosen);
    if (chosen == NULL) {
        free(devices);
        return hb_error_set(&e->error, HB_ERR_NO_MEMORY, "out of memory");
    }
    st = hb_cl_select(devices, count, e->settings.device, chosen, &nchosen, &e->error);
    hb_status first_failure = HB_OK;
    for (size_t k = 0; st == HB_OK && k < nchosen && *nopened < HB_STATS_MAX_DEVICES - 1; k++) {
        unsigned ring = e->settings.ring_depth ? e->settings.ring_depth : DEFAULT_RING_DEPTH;
        hb_status one = hb_opencl_open(&opened[*nopened], &devices[chosen[k]],
                                       e->settings.staging_bytes, ring, &e->error);
        if (one == HB_OK)
            ++*nopened;
        else if (first_failure == HB_OK)
            first_failure = one;
    }
    free(chosen);
    free(devices);
    if (st == HB_OK && *nopened == 0)
        st = first_failure;
    return st;
}

static void describe(hb_engine *e, const char *why)
{
    size_t used = 0, room = sizeof e->description;
    const char *sep = "";
    if (e->ndevices > 0)
        used += (size_t)snprintf(e->description, room, "opencl: ");
    for (size_t i = 0; i < e->ndevices && used < room; i++, sep = "; ")
        used += (size_t)snprintf(e->description + used, room - used, "%s%s", sep,
                                 hb_opencl_describe(e->workers[i].device));
    const hb_cpu_impl_desc *impl = hb_cpu_impl_describe(e->settings.cpu_impl);
    char how[64] = "OpenSSL";
    if (impl->lanes > 0)
        snprintf(how, sizeof how, "%s multi-buffer (%u lanes) and OpenSSL", impl->name,
                 impl->lanes);
    if (used < room)
        snprintf(e->description + used, room - used, "%scpu: %s, %u thread%s, SHA-NI %s%s%s",
                 e->ndevices ? (pool_participates(e) ? " + " : "; fallback ") : "", how,
                 e->settings.cpu_threads, e->settings.cpu_threads == 1 ? "" : "s",
                 hb_cpu_has_sha_ni() ? "yes" : "no", why[0] ? " " : "", why);
}

/* Which devices to open: none for cpu (whose device spec must still be
 * good: it is checked, then ignored); opencl must have one; auto falls
 * back to the pool, saying why, unless the spec itself is bad. */
static hb_status choose_devices(hb_engine *e, hb_opencl **opened, size_t *nopened, char *why,
                                size_t why_size)
{
    *nopened = 0;
    why[0] = '\0';
    if (e->settings.backend == HB_BACKEND_CPU)
        return hb_cl_check_spec(e->settings.device, &e->error);
    hb_status st = open_devices(e, opened, nopened);
    if (st == HB_OK)
        return HB_OK;
    if (e->settings.backend == HB_BACKEND_OPENCL || st == HB_ERR_BAD_DEVICE_SPEC)
        return st;
    snprintf(why, why_size, "(auto: OpenCL unusable: %.300s)", hb_error_text(&e->error));
    e->error.text[0] = '\0';
    return HB_OK;
}

/* With the pool taking jobs beside OpenCL devices that run on the host's
 * own cores (pocl), one pool thread per such device gives its core to it,
 * unless the caller chose the thread count. */
static unsigned cpu_workers_for(const hb_engine *e, hb_opencl **devices, size_t ndevices)
{
    unsigned threads = e->settings.cpu_threads;
    int shares_cores = e->settings.backend == HB_BACKEND_AUTO &&
                       strcmp(e->settings.device, "all") == 0 && !e->settings.cpu_threads_given;
    for (size_t i = 0; shares_cores && i < ndevices && threads > 1; i++)
        if (hb_opencl_info(devices[i])->type == HB_DEVICE_CPU)
            threads--;
    return threads;
}

/* With device "all" and a pocl device sharing the pool's cores, the pool
 * leaves jobs of more messages than this to the device: pocl hashed them
 * at about twice the rate of the pool's OpenSSL, one message at a time,
 * per core (bench/RESULTS.md), so a pool thread taking part only slowed
 * it. Smaller jobs, whose few lanes leave pocl's vectors mostly empty,
 * both take. A fixed rule, and no longer right with the pool's
 * multi-buffer lanes: on the Intel machine with 2 cores, 65,536 x 4 KiB
 * under "all" ran at 8.0 GB/s with it and 10.3 without, 1,000,000 x 64 B
 * at 69 and 57 M msg/s, the best single backends at 12.7 GB/s (cpu) and
 * 68 M msg/s (pocl). The measured cost model (issue 13) replaces it. */
#define POOL_CROWD_ABOVE 256u

static void choose_pool_limits(hb_engine *e, hb_opencl **devices, size_t ndevices)
{
    e->pool_limits = hb_cpu_take_limits_for(e->settings.cpu_impl);
    e->pool_limits.share_among = e->settings.cpu_threads;
    e->pool_limits.share_below =
        hb_cpu_take_share_below(e->settings.cpu_impl, e->settings.cpu_threads);
    int all = e->settings.backend == HB_BACKEND_AUTO && strcmp(e->settings.device, "all") == 0;
    for (size_t i = 0; all && i < ndevices; i++)
        if (hb_opencl_info(devices[i])->type == HB_DEVICE_CPU)
            e->pool_limits.crowd_above = POOL_CROWD_ABOVE;
}

static hb_status start_workers(hb_engine *e, hb_opencl **devices, size_t ndevices)
{
    e->settings.cpu_threads = cpu_workers_for(e, devices, ndevices);
    choose_pool_limits(e, devices, ndevices);
    e->nworkers = ndevices + e->settings.cpu_threads;
    e->workers = calloc(e->nworkers, sizeof *e->workers);
    if (e->workers == NULL) {
        for (size_t i = 0; i < ndevices; i++)
            hb_opencl_close(devices[i]);
        return hb_error_set(&e->error, HB_ERR_NO_MEMORY, "out of memory");
    }
    e->ndevices = ndevices;
    atomic_store(&e->devices_alive, (int)ndevices);
    atomic_store(&e->devices_done, ndevices == 0);
    for (size_t i = 0; i < ndevices; i++) {
        const hb_device_info *info = hb_opencl_info(devices[i]);
        char name[96];
        snprintf(name, sizeof name, "opencl %u:%u %.60s", info->platform_index, info->device_index,
                 info->name);
        e->workers[i] = (hb_worker){.engine = e, .device = devices[i]};
        e->workers[i].stats_index = e->ndevice_stats;
        add_stats_entry(e, name, 0);
    }
    unsigned cpu_index = e->ndevice_stats;
    e->cpu_stats_index = cpu_index;
    add_stats_entry(e, "cpu pool (OpenSSL)", 1);
    for (size_t i = ndevices; i < e->nworkers; i++)
        e->workers[i] = (hb_worker){.engine = e, .stats_index = cpu_index};
    hb_queue_init(&e->queue, pool_participates(e));
    for (size_t i = 0; i < e->nworkers; i++) {
        hb_worker *w = &e->workers[i];
        if (pthread_create(&w->thread, NULL, w->device ? hb_device_worker_main : hb_cpu_worker_main,
                           w) != 0)
            return hb_error_set(&e->error, HB_ERR_THREAD, "could not start worker thread %zu", i);
        w->started = 1;
    }
    return HB_OK;
}

static hb_engine *engine_alloc(void)
{
    hb_engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    hb_gate_init(&e->gate);
    pthread_mutex_init(&e->stats_lock, NULL);
    hb_fault_init(&e->faults);
    hb_error_slot_init(&e->error);
    return e;
}

static hb_status open_engine(hb_engine *e, const hb_config *cfg)
{
    hb_status st = hb_settings_resolve(cfg, &e->settings);
    if (st != HB_OK)
        return st;
    e->rng = initial_seed(e->settings.seed);
    hb_opencl *devices[HB_STATS_MAX_DEVICES];
    size_t ndevices;
    char why[400];
    st = choose_devices(e, devices, &ndevices, why, sizeof why);
    if (st == HB_OK) {
        e->backend = ndevices > 0 ? HB_BACKEND_OPENCL : HB_BACKEND_CPU;
        st = start_workers(e, devices, ndevices);
        describe(e, why);
    }
    if (st != HB_OK)
        hb_error_copy_to_thread(&e->error);
    return st;
}

hb_status hb_engine_open(hb_engine **out, const hb_config *cfg)
{
    if (out == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_engine_open: out is NULL");
    *out = NULL;
    hb_engine *e = engine_alloc();
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NO_MEMORY, "hb_engine_open: out of memory");
    hb_status st = open_engine(e, cfg);
    if (st != HB_OK) {
        hb_engine_close(e);
        return st;
    }
    *out = e;
    return HB_OK;
}

/* ---- closing ------------------------------------------------------------ */

static void join_workers(hb_engine *e, size_t first, size_t end)
{
    for (size_t i = first; i < end; i++)
        if (e->workers[i].started) {
            pthread_join(e->workers[i].thread, NULL);
            e->workers[i].started = 0;
        }
}

/* Everything close does but free the engine's memory: the gate is shut
 * (later calls answer HB_ERR_CLOSED), queued jobs are withdrawn, the calls
 * inside leave (their jobs end), then the workers stop. */
static void shut_down(hb_engine *e)
{
    if (e->shut_down)
        return;
    e->shut_down = 1;
    hb_gate_shut(&e->gate);
    if (e->workers != NULL)
        hb_queue_close(&e->queue);
    hb_gate_wait_empty(&e->gate);
    if (e->workers != NULL) {
        join_workers(e, 0, e->ndevices);
        pthread_mutex_lock(&e->queue.lock);
        atomic_store(&e->devices_done, 1);
        pthread_cond_broadcast(&e->queue.cpu_work);
        pthread_mutex_unlock(&e->queue.lock);
        join_workers(e, e->ndevices, e->nworkers);
        for (size_t i = 0; i < e->ndevices; i++)
            hb_opencl_close(e->workers[i].device);
        hb_queue_destroy(&e->queue);
        free(e->workers);
        e->workers = NULL;
    }
}

void hb_engine_close(hb_engine *e)
{
    if (e == NULL)
        return;
    shut_down(e);
    hb_error_slot_destroy(&e->error);
    hb_fault_destroy(&e->faults);
    pthread_mutex_destroy(&e->stats_lock);
    hb_gate_destroy(&e->gate);
    free(e);
}

hb_status hb_testing_shut_down(hb_engine *e)
{
#ifdef HB_FAULT_INJECTION
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_testing_shut_down: engine is NULL");
    shut_down(e);
    return HB_OK;
#else
    (void)e;
    return HB_ERR_INVALID_ARGUMENT;
#endif
}

/* The answer of a call that found the gate shut: the engine is closing
 * (its error slot may be going away: the thread's own slot says it). */
static hb_status refused(const char *call)
{
    return hb_error_set(NULL, HB_ERR_CLOSED, "%s: the engine is closed", call);
}

/* ---- jobs --------------------------------------------------------------- */

/* Checks a batch's arguments; *uniform_len is every message's length, or
 * HB_LENGTHS_VARY (the queue takes from such a job by arithmetic). */
static hb_status check_batch_arguments(hb_engine *e, const hb_msg *m, size_t n, const void *out,
                                       uint64_t *uniform_len)
{
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "engine is NULL");
    if (n > 0 && (m == NULL || out == NULL))
        return hb_error_set(&e->error, HB_ERR_NULL_ARGUMENT, "%s is NULL with n = %zu",
                            m == NULL ? "messages" : "out", n);
    int same = 1;
    for (size_t i = 0; i < n; i++) {
        if (m[i].data == NULL && m[i].len > 0)
            return hb_error_set(&e->error, HB_ERR_NULL_ARGUMENT,
                                "message %zu has NULL data and length %zu", i, m[i].len);
        same &= m[i].len == m[0].len;
    }
    *uniform_len = n > 0 && same ? (uint64_t)m[0].len : HB_LENGTHS_VARY;
    return HB_OK;
}

/* hb_submit once the arguments are known good. */
static hb_status submit_checked(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out,
                                uint64_t uniform_len, hb_job **job)
{
    hb_status st;
    hb_job *j = hb_job_create(m, n, out);
    if (j == NULL)
        return hb_error_set(&e->error, HB_ERR_NO_MEMORY, "hb_submit: out of memory");
    j->uniform_len = uniform_len;
    j->completed_counter = &e->jobs_completed;
    j->cancelled_counter = &e->jobs_cancelled;
    pthread_mutex_lock(&e->stats_lock);
    e->stats.jobs_submitted++;
    pthread_mutex_unlock(&e->stats_lock);
    if (n == 0) {
        hb_job_add_finished(j, 0, HB_OK);
        hb_job_release(j); /* the engine's reference: it never queued */
    } else if ((st = hb_queue_push(&e->queue, j)) != HB_OK) {
        hb_job_release(j);
        hb_job_release(j);
        return hb_error_set(&e->error, st, "hb_submit: the engine is closing");
    }
    *job = j;
    return HB_OK;
}

hb_status hb_submit(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out, hb_job **job)
{
    if (job != NULL)
        *job = NULL;
    if (e == NULL || job == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_submit: %s is NULL",
                            e == NULL ? "engine" : "job");
    if (!hb_gate_enter(&e->gate))
        return refused("hb_submit");
    uint64_t uniform_len;
    hb_status st = check_batch_arguments(e, m, n, out, &uniform_len);
    if (st == HB_OK)
        st = submit_checked(e, m, n, out, uniform_len, job);
    hb_gate_leave(&e->gate);
    return st;
}

/* While the caller of hb_sha1_batch would only wait, it hashes what of
 * its own job is still queued, when the CPU pool takes jobs: no hand-off to
 * a worker and back. (Only here, where the engine is known to be open:
 * hb_job_wait may run while the engine closes.) */
static void help_with_own_job(hb_engine *e, hb_job *j)
{
    hb_batch *b;
    while ((b = hb_queue_take_own(&e->queue, j, &e->pool_limits)) != NULL)
        hb_cpu_run_batch(e, b);
}

/* A small batch on an engine whose CPU pool takes jobs is hashed right
 * here: queueing it would cost more than hashing it. */
static int hash_inline(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out)
{
    if (n > INLINE_MESSAGES_MAX || !hb_queue_cpu_takes_jobs(&e->queue))
        return 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        if ((bytes += m[i].len) > INLINE_BYTES_MAX)
            return 0;
    uint64_t start = hb_now_ns();
    hb_cpu_hash_checked(e, m, n, out, NULL);
    /* atomics, not the stats lock: many threads come this way at once */
    atomic_fetch_add(&e->inline_work.busy_ns, hb_now_ns() - start);
    atomic_fetch_add(&e->inline_work.messages, n);
    atomic_fetch_add(&e->inline_work.bytes, bytes);
    atomic_fetch_add(&e->inline_work.calls, 1);
    atomic_fetch_add(&e->jobs_completed, 1);
    return 1;
}

/* hb_sha1_batch inside the gate: its wait too, so close waits for it (its
 * job ends at once when close withdraws it or stops its batches). */
static hb_status sha1_batch_inside(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out)
{
    uint64_t uniform_len;
    hb_status st = check_batch_arguments(e, m, n, out, &uniform_len);
    if (st != HB_OK || hash_inline(e, m, n, out))
        return st;
    hb_job *j;
    st = submit_checked(e, m, n, out, uniform_len, &j);
    if (st != HB_OK)
        return st;
    help_with_own_job(e, j);
    st = hb_job_wait(j, -1);
    hb_job_free(j);
    return st;
}

hb_status hb_sha1_batch(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out)
{
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_sha1_batch: engine is NULL");
    if (!hb_gate_enter(&e->gate))
        return refused("hb_sha1_batch");
    hb_status st = sha1_batch_inside(e, m, n, out);
    hb_gate_leave(&e->gate);
    return st;
}

/* A job knows the queue it was put in (not the engine). Cancel holds the
 * job's lock while it withdraws what was not handed out and asks workers
 * to drop the rest at their next chunk; then it waits for them.
 * Why the queue is still there even while its engine closes: j is not
 * done (checked under j->lock), and it cannot become done while we hold
 * that lock; close destroys the queue only after every job of the engine
 * is done (withdrawn by hb_queue_close, delivered by the joined workers,
 * or ended by a call that close waited for). */
hb_status hb_job_cancel(hb_job *j)
{
    if (j == NULL)
        return HB_ERR_NULL_ARGUMENT;
    pthread_mutex_lock(&j->lock);
    if (!j->done) {
        hb_job_stop_locked(j, HB_ERR_CANCELLED);
        if (j->queue != NULL)
            hb_job_abandon_locked(j, hb_queue_withdraw(j->queue, j), HB_ERR_CANCELLED);
    }
    pthread_mutex_unlock(&j->lock);
    hb_job_wait_done(j); /* what was handed out stops at its next chunk */
    return HB_OK;
}

void hb_job_free(hb_job *j)
{
    if (j == NULL)
        return;
    hb_job_cancel(j);
    hb_job_release(j);
}

/* ---- stats -------------------------------------------------------------- */

void hb_engine_count_batch(hb_engine *e, const hb_worker *w, const hb_batch *b, uint64_t busy_ns,
                           uint64_t launches)
{
    pthread_mutex_lock(&e->stats_lock);
    hb_device_stats *d = &e->device_stats[w->stats_index];
    d->busy_ns += busy_ns;
    d->launches += launches;
    e->stats.device_launches += launches;
    if (b != NULL) {
        d->messages += b->n;
        d->bytes += b->bytes;
        d->batches++;
        e->stats.messages += b->n;
        e->stats.bytes += b->bytes;
        e->stats.batches++;
        if (w->device)
            e->stats.device_bytes += b->bytes;
        else
            e->stats.cpu_bytes += b->bytes;
    }
    pthread_mutex_unlock(&e->stats_lock);
}

void hb_engine_count_verify(hb_engine *e, size_t checked, size_t mismatches)
{
    pthread_mutex_lock(&e->stats_lock);
    e->stats.verified += checked;
    e->stats.verify_mismatches += mismatches;
    pthread_mutex_unlock(&e->stats_lock);
}

void hb_engine_count_fallback(hb_engine *e)
{
    pthread_mutex_lock(&e->stats_lock);
    e->stats.fallbacks++;
    pthread_mutex_unlock(&e->stats_lock);
}

void hb_engine_count_device_error(hb_engine *e, hb_worker *w, size_t batches_handed_back)
{
    pthread_mutex_lock(&e->stats_lock);
    e->device_stats[w->stats_index].errors++;
    e->stats.device_errors++;
    e->stats.fallbacks += batches_handed_back;
    pthread_mutex_unlock(&e->stats_lock);
}

void hb_engine_quarantine(hb_engine *e, hb_worker *w)
{
    pthread_mutex_lock(&e->stats_lock);
    int already = e->device_stats[w->stats_index].quarantined;
    e->device_stats[w->stats_index].quarantined = 1;
    e->stats.quarantined += !already;
    pthread_mutex_unlock(&e->stats_lock);
    if (!already && atomic_fetch_sub(&e->devices_alive, 1) == 1) {
        pthread_mutex_lock(&e->queue.lock);
        atomic_store(&e->queue.cpu_takes_jobs, 1);
        e->pool_limits.crowd_above = 0; /* no device left: the pool takes all */
        pthread_cond_broadcast(&e->queue.cpu_work);
        pthread_mutex_unlock(&e->queue.lock);
    }
}

uint64_t hb_engine_next_random(hb_engine *e)
{
    pthread_mutex_lock(&e->stats_lock);
    uint64_t x = hb_prng_next(&e->rng);
    pthread_mutex_unlock(&e->stats_lock);
    return x;
}

/* Batches hb_sha1_batch hashed on its caller's thread count as the pool's. */
static void add_inline_work(hb_engine *e, hb_stats *out)
{
    uint64_t calls = atomic_load(&e->inline_work.calls);
    uint64_t messages = atomic_load(&e->inline_work.messages);
    uint64_t bytes = atomic_load(&e->inline_work.bytes);
    hb_device_stats *pool = &out->device[e->cpu_stats_index];
    pool->busy_ns += atomic_load(&e->inline_work.busy_ns);
    pool->messages += messages;
    pool->bytes += bytes;
    pool->batches += calls;
    out->jobs_submitted += calls;
    out->messages += messages;
    out->bytes += bytes;
    out->cpu_bytes += bytes;
    out->batches += calls;
}

static void stats_inside(hb_engine *engine, hb_stats *out)
{
    const hb_engine *e = engine;
    pthread_mutex_lock(&engine->stats_lock);
    *out = e->stats;
    out->jobs_completed = atomic_load(&engine->jobs_completed);
    out->jobs_cancelled = atomic_load(&engine->jobs_cancelled);
    out->ndevices = e->ndevice_stats;
    memcpy(out->device, e->device_stats, sizeof out->device);
    pthread_mutex_unlock(&engine->stats_lock);
    add_inline_work(engine, out);
    hb_queue_depth(&engine->queue, &out->queue_messages, &out->queue_jobs);
}

hb_status hb_engine_stats(const hb_engine *e, hb_stats *out)
{
    if (e == NULL || out == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_engine_stats: %s is NULL",
                            e == NULL ? "engine" : "out");
    hb_engine *engine = (hb_engine *)e;
    if (!hb_gate_enter(&engine->gate))
        return refused("hb_engine_stats");
    stats_inside(engine, out);
    hb_gate_leave(&engine->gate);
    return HB_OK;
}

/* ---- questions ---------------------------------------------------------- */

/* The questions only read what open set (or the error slot, which has a
 * lock); they pass the gate so that none reads memory close is freeing. A
 * closing engine answers for the calling thread or with a fixed text. */
const char *hb_engine_last_error(const hb_engine *e)
{
    hb_engine *engine = (hb_engine *)e;
    if (e == NULL || !hb_gate_enter(&engine->gate))
        return hb_error_text(NULL);
    const char *text = hb_error_text(&e->error);
    hb_gate_leave(&engine->gate);
    return text;
}

const char *hb_engine_describe(const hb_engine *e)
{
    hb_engine *engine = (hb_engine *)e;
    if (e == NULL)
        return "(no engine)";
    if (!hb_gate_enter(&engine->gate))
        return "(engine closed)";
    const char *text = e->description;
    hb_gate_leave(&engine->gate);
    return text;
}

hb_backend_kind hb_engine_backend(const hb_engine *e)
{
    hb_engine *engine = (hb_engine *)e;
    if (e == NULL || !hb_gate_enter(&engine->gate))
        return HB_BACKEND_CPU;
    hb_backend_kind kind = e->backend;
    hb_gate_leave(&engine->gate);
    return kind;
}

hb_status hb_testing_set_fault(hb_engine *e, const hb_fault_plan *plan)
{
#ifdef HB_FAULT_INJECTION
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_testing_set_fault: engine is NULL");
    if (!hb_gate_enter(&e->gate))
        return refused("hb_testing_set_fault");
    hb_fault_configure(&e->faults, plan);
    hb_gate_leave(&e->gate);
    return HB_OK;
#else
    (void)e;
    (void)plan;
    return HB_ERR_INVALID_ARGUMENT;
#endif
}
