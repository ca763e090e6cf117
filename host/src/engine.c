/*
 * engine.c - the engine: opening, workers, jobs in, stats out, closing.
 *
 * Owns: hb_engine_open/close, hb_submit, hb_sha1_batch, hb_job_cancel,
 * hb_job_free, the stats snapshot, and the choice of backends: one worker
 * thread per OpenCL device the spec selects (with auto and the default
 * spec: every device), plus cpu_threads CPU workers, each backend in the
 * scheduler with its first model (models.c). The CPU workers always take
 * batches a device hands back; they take queued jobs too when the pool is
 * a participant (backend cpu, auto with the default spec, or no device
 * left). A batch small enough that the scheduler gives all of it to the
 * pool is hashed on the caller's thread.
 * Every public call on an engine passes its gate (gate.c): close shuts the
 * gate first, so a call that comes during close answers HB_ERR_CLOSED, and
 * close destroys nothing until the calls already inside have left.
 * Must not: touch OpenCL beyond opening and closing devices, or print.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cpu.h"
#include "devices.h"
#include "engine_internal.h"
#include "sched/models.h"

#define DEFAULT_RING_DEPTH 3u

/* ---- opening ----------------------------------------------------------- */

/* The engine's generator state: the configured seed, else the clocks
 * (any value is a valid splitmix64 state). */
static uint64_t initial_seed(uint64_t seed)
{
    return seed != 0 ? seed : hb_now_ns() ^ (uint64_t)time(NULL) << 32;
}

/* auto with the default spec (or "all"): every device and the pool. */
static int uses_everything(const hb_settings *s)
{
    return s->backend == HB_BACKEND_AUTO && (s->device[0] == '\0' || strcmp(s->device, "all") == 0);
}

static int pool_participates(const hb_engine *e)
{
    return e->settings.backend == HB_BACKEND_CPU || e->ndevices == 0 ||
           uses_everything(&e->settings);
}

/* Whether the devices of spec may pay for their opening: not when the
 * caller said how much work to expect (backend auto, default devices) and finding
 * and opening them took longer, when last measured, than the pool's
 * model predicts for all of it. Then why says so. Devices never
 * measured, or a pool with no cached model, are opened: nothing is
 * known to say otherwise. */
static int worth_opening(const hb_engine *e, const char *spec, char *why, size_t why_size)
{
    const hb_settings *s = &e->settings;
    if (!uses_everything(s) || (s->expected_messages == 0 && s->expected_bytes == 0))
        return 1; /* a spec named is a spec checked: its devices are listed */
    double open_ns = hb_models_open_cost(spec);
    hb_cpu_impl impl = s->cpu_impl;
    double pool_ns = hb_models_pool_time(&hb_backend_cpu, &impl, s->cpu_threads,
                                         s->expected_messages, s->expected_bytes);
    if (!(open_ns > 0) || !(pool_ns > 0))
        return 1;
    unsigned long long n = s->expected_messages, bytes = s->expected_bytes;
    if (open_ns >= pool_ns) {
        snprintf(why, why_size,
                 "(auto: OpenCL not opened: that took %.1f ms, and the pool needs %.3f ms for the "
                 "expected %llu messages, %llu bytes)",
                 open_ns / 1e6, pool_ns / 1e6, n, bytes);
        return 0;
    }
    /* Devices on the pool's cores take turns with it: they pay only where
     * they finish the work, opening included, before the pool alone. */
    double shared_ns = hb_models_shared_devices_time(spec, n, bytes);
    if (!(shared_ns > 0) || open_ns + shared_ns < pool_ns)
        return 1;
    snprintf(why, why_size,
             "(auto: OpenCL not opened: its devices share the pool's cores and need at least "
             "%.3f ms, and %.1f ms to open, where the pool needs %.3f ms for the expected %llu "
             "messages, %llu bytes)",
             shared_ns / 1e6, open_ns / 1e6, pool_ns / 1e6, n, bytes);
    return 0;
}

/* Opens every device the spec selects (up to the stats table's room)
 * that may pay for its opening (why says of one that did not); devices
 * that fail to open are skipped if another one opens. */
static hb_status open_chosen_devices(hb_engine *e, hb_opencl **opened, size_t *nopened, char *why,
                                     size_t why_size)
{
    hb_cl_device *devices;
    size_t count, nchosen;
    *nopened = 0;
    const char *spec = uses_everything(&e->settings) ? "all" : e->settings.device;
    if (!worth_opening(e, spec, why, why_size))
        return HB_OK;
    uint64_t start = hb_now_ns();
    hb_status st = hb_cl_enumerate(&devices, &count);
    if (st != HB_OK)
        return hb_error_set(&e->error, st, "out of memory listing OpenCL devices");
    size_t *chosen = calloc(count ? count : 1, sizeof *chosen);
    if (chosen == NULL) {
        free(devices);
        return hb_error_set(&e->error, HB_ERR_NO_MEMORY, "out of memory");
    }
    st = hb_cl_select(devices, count, spec, chosen, &nchosen, &e->error);
    if (st == HB_OK && nchosen == 0)
        st = hb_error_set(&e->error, HB_ERR_NO_OPENCL, "no OpenCL device");
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
    if (st == HB_OK)
        hb_models_store_open_cost(spec, (double)(hb_now_ns() - start));
    return st;
}

/* open_devices: as open_chosen_devices; with HASHBATCH_DEVICE_CORES, from
 * this thread pinned to the device's cores, so that an OpenCL runtime
 * started now (pocl's threads) runs there; whether it did decides if the
 * pool and CPU devices are apart (cores.h). */
static hb_status open_devices(hb_engine *e, hb_opencl **opened, size_t *nopened, char *why,
                              size_t why_size)
{
    const hb_core_set *device = &e->settings.device_cores;
    if (device->count == 0)
        return open_chosen_devices(e, opened, nopened, why, why_size);
    hb_core_set mine = hb_cores_of_self();
    int pinned = hb_cores_pin_self(device) == 0;
    hb_status st = open_chosen_devices(e, opened, nopened, why, why_size);
    if (pinned)
        hb_cores_pin_self(&mine);
    e->cores_apart = pinned && hb_cl_runtime_within(device);
    return st;
}

static void describe(hb_engine *e, const char *why)
{
    size_t used = 0, room = sizeof e->description;
    const char *sep = "";
    if (e->ndevices > 0)
        used += (size_t)snprintf(e->description, room,
                                 "%sopencl: ", pool_participates(e) ? "scheduled: " : "");
    for (size_t i = 0; i < e->ndevices && used < room; i++, sep = "; ")
        used += (size_t)snprintf(e->description + used, room - used, "%s%s", sep,
                                 e->workers[i].ops->describe(e->workers[i].self));
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
    hb_status st = open_devices(e, opened, nopened, why, why_size);
    if (st == HB_OK)
        return HB_OK;
    if (e->settings.backend == HB_BACKEND_OPENCL || st == HB_ERR_BAD_DEVICE_SPEC)
        return st;
    snprintf(why, why_size, "(auto: OpenCL unusable: %.300s)", hb_error_text(&e->error));
    e->error.text[0] = '\0';
    return HB_OK;
}

static void choose_pool_limits(hb_engine *e)
{
    hb_cost_terms model[HB_COST_CLASSES];
    uint64_t predicted, measured;
    int takes;
    hb_sched_read(&e->sched, e->pool_taker.index, model, &predicted, &measured, &takes);
    e->pool_limits = hb_cpu_take_limits_for(e->settings.cpu_impl, model);
    hb_sched_set_takes(&e->sched, e->pool_taker.index, e->pool_limits.max_messages,
                       e->pool_limits.max_bytes);
    e->pool_limits.share_among = e->settings.cpu_threads;
    e->pool_limits.share_below =
        hb_cpu_take_share_below(e->settings.cpu_impl, e->settings.cpu_threads);
    e->pool_limits.long_share_below = e->pool_limits.long_max * e->settings.cpu_threads;
    e->pool_limits.long_whole_from = hb_cpu_take_whole_from(e);
    e->pool_limits.share = hb_sched_share_for;
    e->pool_limits.taken = hb_sched_taken_for;
    e->pool_limits.share_ctx = &e->pool_taker;
}

/* The scheduler's group of backend i (a device, or the pool past the
 * devices): the pool and OpenCL CPU devices share the host's cores
 * (group 0); every other device is its own. */
static unsigned group_of(const hb_engine *e, const hb_model_seed *seed, size_t i)
{
    int pool = i == e->ndevices;
    int shares = pool || (seed->ops->shares_host_cores(seed->self) && !e->cores_apart);
    return shares ? 0u : (unsigned)i + 1;
}

/* Backend i's entry in the counters and the scheduler. */
static void register_backend(hb_engine *e, size_t i, const hb_model_seed *seed)
{
    char name[96] = "cpu pool";
    int is_pool = i == e->ndevices;
    if (!is_pool)
        snprintf(name, sizeof name, "opencl %u:%u %.60s", seed->device->platform_index,
                 seed->device->device_index, seed->device->name);
    unsigned group = group_of(e, seed, i);
    unsigned k = hb_counters_add(&e->counters, name, is_pool, group == 0);
    unsigned lanes = hb_cpu_impl_describe(e->settings.cpu_impl)->lanes;
    /* the pool learns only from batches that fill its lanes: fewer
     * messages go to OpenSSL one by one, at another cost */
    hb_sched_add(&e->sched, seed->terms, group, is_pool ? e->settings.cpu_threads : 1,
                 is_pool ? pool_participates(e) : 1, is_pool ? lanes : 0);
    memcpy(e->model_keys[k], seed->key, sizeof e->model_keys[k]);
    hb_sched_taker taker = {&e->sched, k};
    if (!is_pool) {
        hb_take_limits take = hb_device_take_limits(e->workers[i].device);
        hb_sched_set_takes(&e->sched, k, take.max_messages, take.max_bytes);
    }
    if (is_pool) {
        e->pool_taker = taker;
    } else {
        e->workers[i].taker = taker;
        e->workers[i].stats_index = k;
    }
}

/* note_partial_calibration: says in the engine's description which
 * backend could not be measured in full within its calibration budget
 * (its model is then conservative, and refined by the batches it runs). */
static void note_partial_calibration(hb_engine *e, size_t i, const hb_model_seed *seed)
{
    if (!seed->calibrated || seed->measured.complete)
        return;
    size_t used = strlen(e->calibration_note), room = sizeof e->calibration_note;
    char name[32] = "cpu pool";
    if (i < e->ndevices)
        snprintf(name, sizeof name, "opencl %u:%u", seed->device->platform_index,
                 seed->device->device_index);
    if (used < room)
        snprintf(e->calibration_note + used, room - used,
                 "%s(%s: %u of %u calibration workloads fitted in full in its %.0f ms "
                 "budget: a conservative model, refined as it runs)",
                 used ? " " : "", name, seed->measured.full, HB_CALIBRATION_WORKLOADS,
                 (double)HB_CALIBRATION_BUDGET_NS * 1e-6);
}

/* start_worker: w's thread, created on its cores when device_cores
 * splits them (the pool on its own, devices' feeders on the devices'),
 * so it never runs a moment elsewhere; 0 or pthread_create's error. */
static int start_worker(hb_engine *e, hb_worker *w)
{
    const hb_core_set *cores = w->device ? &e->settings.device_cores : &e->pool_cores;
    return hb_cores_thread_create(&w->thread, cores,
                                  w->device ? hb_device_worker_main : hb_cpu_worker_main, w);
}

/* Each backend's counters and its place in the scheduler, with its first
 * model (cache or calibration: models.c). Devices first, then the pool. */
static hb_status add_backends(hb_engine *e)
{
    hb_model_seed seeds[HB_STATS_MAX_DEVICES];
    size_t n = e->ndevices + 1;
    for (size_t i = 0; i < n; i++) {
        int is_pool = i == e->ndevices;
        seeds[i] =
            (hb_model_seed){.ops = is_pool ? &hb_backend_cpu : e->workers[i].ops,
                            .self = is_pool ? (void *)&e->settings.cpu_impl : e->workers[i].self,
                            .device = is_pool ? NULL : hb_opencl_info(e->workers[i].device)};
    }
    hb_status st = hb_models_seed(seeds, n, e->settings.calibrate, &e->calibration_ns,
                                  &e->models_from_cache, &e->error);
    if (hb_fault_calibration_slowdown() > 1)
        e->costs_distorted = 1; /* measured on a test clock: keep nothing */
    for (size_t i = 0; st == HB_OK && i < n; i++) {
        register_backend(e, i, &seeds[i]);
        note_partial_calibration(e, i, &seeds[i]);
    }
    return st;
}

static hb_status start_workers(hb_engine *e, hb_opencl **devices, size_t ndevices)
{
    e->nworkers = ndevices + e->settings.cpu_threads;
    e->workers = calloc(e->nworkers, sizeof *e->workers);
    if (e->workers == NULL) {
        for (size_t i = 0; i < ndevices; i++)
            hb_opencl_close(devices[i]);
        return hb_error_set(&e->error, HB_ERR_NO_MEMORY, "out of memory");
    }
    e->ndevices = ndevices;
    for (size_t i = 0; i < ndevices; i++)
        e->workers[i] = (hb_worker){
            .engine = e, .device = devices[i], .ops = &hb_backend_opencl, .self = devices[i]};
    hb_counters_set_devices(&e->counters, (int)ndevices);
    hb_status st = add_backends(e);
    if (st != HB_OK)
        return st;
    for (size_t i = ndevices; i < e->nworkers; i++)
        e->workers[i] = (hb_worker){.engine = e, .stats_index = e->counters.pool_index};
    choose_pool_limits(e);
    hb_queue_init(&e->queue, pool_participates(e));
    e->queue_ready = 1;
    if (ndevices == 0)
        hb_queue_fallbacks_final(&e->queue);
    for (size_t i = 0; i < e->nworkers; i++) {
        hb_worker *w = &e->workers[i];
        if (start_worker(e, w) != 0)
            return hb_error_set(&e->error, HB_ERR_THREAD, "could not start worker thread %zu", i);
        w->started = 1;
    }
    return HB_OK;
}

/* give_pool_its_cores: with device_cores, the pool runs on the other
 * cores, a thread each (unless cpu_threads was given), and why says where
 * each runs, or why CPU devices still share the pool's cores. */
static void give_pool_its_cores(hb_engine *e, size_t ndevices, char *why, size_t why_size)
{
    const hb_core_set *device = &e->settings.device_cores;
    if (device->count == 0)
        return;
    e->pool_cores = hb_cores_pool(device);
    if (!e->settings.cpu_threads_given)
        e->settings.cpu_threads = e->pool_cores.count;
    char pool_text[64], device_text[64];
    hb_cores_text(&e->pool_cores, pool_text, sizeof pool_text);
    hb_cores_text(device, device_text, sizeof device_text);
    size_t used = strlen(why);
    if (ndevices == 0)
        snprintf(why + used, why_size - used, "%s(cores: the pool on %s)", used ? " " : "",
                 pool_text);
    else if (e->cores_apart)
        snprintf(why + used, why_size - used, "%s(cores: the pool on %s, OpenCL on %s)",
                 used ? " " : "", pool_text, device_text);
    else
        snprintf(why + used, why_size - used,
                 "%s(cores: the pool on %s; OpenCL was started earlier in this process on "
                 "other cores than %s, so CPU devices still share the pool's)",
                 used ? " " : "", pool_text, device_text);
}

static hb_engine *engine_alloc(void)
{
    hb_engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    hb_gate_init(&e->gate);
    hb_counters_init(&e->counters, 0);
    hb_sched_init(&e->sched);
    hb_fault_init(&e->faults);
    hb_error_slot_init(&e->error);
    return e;
}

static hb_status open_engine(hb_engine *e, const hb_config *cfg)
{
    hb_status st = hb_settings_resolve(cfg, &e->settings);
    if (st != HB_OK)
        return st;
    e->counters.rng = initial_seed(e->settings.seed);
    hb_opencl *devices[HB_STATS_MAX_DEVICES];
    size_t ndevices;
    char why[400];
    st = choose_devices(e, devices, &ndevices, why, sizeof why);
    if (st == HB_OK)
        give_pool_its_cores(e, ndevices, why, sizeof why);
    if (st == HB_OK) {
        e->backend = ndevices > 0 ? HB_BACKEND_OPENCL : HB_BACKEND_CPU;
        st = start_workers(e, devices, ndevices);
        if (e->calibration_note[0] != '\0') {
            size_t used = strlen(why);
            snprintf(why + used, sizeof why - used, "%s%s", used ? " " : "", e->calibration_note);
        }
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

static double least_of(double a, double b)
{
    return a < b ? a : b;
}

/* For the next open's worth_opening: with every device on the pool's
 * cores, the least of their terms, field by field; zeros when one has
 * hardware of its own. Only the default route's devices ("all"). */
static void store_shared_devices(hb_engine *e)
{
    if (e->ndevices == 0 || !uses_everything(&e->settings))
        return;
    hb_cost_terms least[HB_COST_CLASSES];
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        least[c] = (hb_cost_terms){DBL_MAX, DBL_MAX, DBL_MAX};
    for (size_t i = 0; i < e->ndevices; i++) {
        hb_cost_terms t[HB_COST_CLASSES];
        uint64_t predicted, measured;
        int takes;
        if (!e->workers[i].ops->shares_host_cores(e->workers[i].self) || e->cores_apart) {
            memset(least, 0, sizeof least);
            break;
        }
        hb_sched_read(&e->sched, e->workers[i].stats_index, t, &predicted, &measured, &takes);
        for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
            least[c].fixed_ns = least_of(least[c].fixed_ns, t[c].fixed_ns);
            least[c].ns_per_message = least_of(least[c].ns_per_message, t[c].ns_per_message);
            least[c].ns_per_byte = least_of(least[c].ns_per_byte, t[c].ns_per_byte);
        }
    }
    hb_models_store_shared_devices("all", least);
}

/* What the run taught the models goes to the cache for the next run
 * (backends that learnt nothing keep their cached or measured terms);
 * nothing does after a testing hook distorted the costs. */
static void store_models(hb_engine *e)
{
    if (e->costs_distorted)
        return;
    store_shared_devices(e);
    for (unsigned k = 0; k < e->counters.n; k++) {
        hb_cost_terms terms[HB_COST_CLASSES];
        uint64_t predicted, measured;
        int takes;
        if (!hb_sched_learnt(&e->sched, k))
            continue;
        hb_sched_read(&e->sched, k, terms, &predicted, &measured, &takes);
        hb_models_store(e->model_keys[k], terms);
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
    if (e->queue_ready)
        hb_queue_close(&e->queue);
    hb_gate_wait_empty(&e->gate);
    if (e->queue_ready) {
        join_workers(e, 0, e->ndevices);
        hb_queue_fallbacks_final(&e->queue);
        join_workers(e, e->ndevices, e->nworkers);
        store_models(e);
        hb_queue_destroy(&e->queue);
        e->queue_ready = 0;
    }
    for (size_t i = 0; e->workers != NULL && i < e->ndevices; i++)
        e->workers[i].ops->close(e->workers[i].self);
    free(e->workers);
    e->workers = NULL;
}

void hb_engine_close(hb_engine *e)
{
    if (e == NULL)
        return;
    shut_down(e);
    hb_error_slot_destroy(&e->error);
    hb_fault_destroy(&e->faults);
    hb_sched_destroy(&e->sched);
    hb_counters_destroy(&e->counters);
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
                                       uint64_t *uniform_len, uint64_t *bytes)
{
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "engine is NULL");
    if (n > 0 && (m == NULL || out == NULL))
        return hb_error_set(&e->error, HB_ERR_NULL_ARGUMENT, "%s is NULL with n = %zu",
                            m == NULL ? "messages" : "out", n);
    int same = 1;
    *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].data == NULL && m[i].len > 0)
            return hb_error_set(&e->error, HB_ERR_NULL_ARGUMENT,
                                "message %zu has NULL data and length %zu", i, m[i].len);
        same &= m[i].len == m[0].len;
        *bytes += m[i].len;
    }
    *uniform_len = n > 0 && same ? (uint64_t)m[0].len : HB_LENGTHS_VARY;
    return HB_OK;
}

/* hb_submit once the arguments are known good. */
static hb_status submit_checked(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out,
                                uint64_t uniform_len, uint64_t bytes, hb_job **job)
{
    hb_status st;
    hb_job *j = hb_job_create(m, n, out);
    if (j == NULL)
        return hb_error_set(&e->error, HB_ERR_NO_MEMORY, "hb_submit: out of memory");
    j->uniform_len = uniform_len;
    j->bytes_left = bytes;
    j->completed_counter = &e->jobs_completed;
    j->cancelled_counter = &e->jobs_cancelled;
    hb_counters_submitted(&e->counters);
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
    uint64_t uniform_len, bytes;
    hb_status st = check_batch_arguments(e, m, n, out, &uniform_len, &bytes);
    if (st == HB_OK)
        st = submit_checked(e, m, n, out, uniform_len, bytes, job);
    hb_gate_leave(&e->gate);
    return st;
}

/* While the caller of hb_sha1_batch would only wait, it hashes what of
 * its own job is still queued, when the CPU pool takes jobs: no hand-off to
 * a worker and back. Not when device_cores gave the pool cores of its
 * own: the caller's thread may be on the device's. (Only here, where the
 * engine is known to be open: hb_job_wait may run while the engine
 * closes.) */
static void help_with_own_job(hb_engine *e, hb_job *j)
{
    hb_batch *b;
    if (e->pool_cores.count > 0)
        return;
    while ((b = hb_queue_take_own(&e->queue, j, &e->pool_limits)) != NULL)
        hb_cpu_run_batch(e, b);
}

/* Whether a batch of n messages and bytes is hashed right here, on the
 * caller's thread: when the scheduler would give all of it to the pool
 * (no other backend would finish it sooner, or help: its fixed cost
 * exceeds what the whole batch costs the pool) and it fits one of the
 * pool's takes, so no pool thread could share it either. */
static int inline_pays(hb_engine *e, size_t n, uint64_t bytes)
{
    const hb_take_limits *take = &e->pool_limits;
    uint64_t most_messages, most_bytes;
    if (n > take->max_messages || bytes > take->max_bytes || !hb_queue_cpu_takes_jobs(&e->queue))
        return 0;
    if (n >= take->share_below && take->share_among > 1)
        return 0; /* enough messages to share among the pool's threads */
    return hb_sched_share(&e->sched, e->pool_taker.index, n, bytes, 1, &most_messages,
                          &most_bytes) &&
           most_messages >= n;
}

/* An inline batch runs on the caller's thread, not on the pool's: it adds
 * nothing to the pool's backlog, and teaches the pool's model nothing (a
 * caller's small batch, hot in its cache, says little of what the pool's
 * threads pay for big jobs). */
static int hash_inline(hb_engine *e, const hb_msg *m, size_t n, uint64_t bytes, hb_digest *out)
{
    if (!inline_pays(e, n, bytes))
        return 0;
    uint64_t start = hb_now_ns();
    hb_cpu_hash_checked(e, m, n, out, NULL, NULL);
    hb_counters_inline(&e->counters, n, bytes, hb_now_ns() - start);
    return 1;
}

/* hb_sha1_batch inside the gate: its wait too, so close waits for it (its
 * job ends at once when close withdraws it or stops its batches). */
static hb_status sha1_batch_inside(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out)
{
    uint64_t uniform_len, bytes;
    hb_status st = check_batch_arguments(e, m, n, out, &uniform_len, &bytes);
    if (st != HB_OK || (n > 0 && hash_inline(e, m, n, bytes, out)))
        return st;
    hb_job *j;
    st = submit_checked(e, m, n, out, uniform_len, bytes, &j);
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

static void stats_inside(hb_engine *e, hb_stats *out)
{
    hb_counters_read(&e->counters, out);
    out->jobs_completed += atomic_load(&e->jobs_completed);
    out->jobs_cancelled = atomic_load(&e->jobs_cancelled);
    out->calibration_ns = e->calibration_ns;
    out->models_from_cache = e->models_from_cache;
    for (unsigned k = 0; k < out->ndevices; k++) {
        hb_device_stats *d = &out->device[k];
        hb_sched_read(&e->sched, k, d->model, &d->predicted_ns, &d->measured_ns, &d->takes_jobs);
    }
    hb_queue_depth(&e->queue, &out->queue_messages, &out->queue_jobs);
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
    e->costs_distorted = 1;
    hb_gate_leave(&e->gate);
    return HB_OK;
#else
    (void)e;
    (void)plan;
    return HB_ERR_INVALID_ARGUMENT;
#endif
}

hb_status hb_testing_set_cost_clock(hb_engine *e, unsigned backend, const hb_cost_terms *terms)
{
#ifdef HB_FAULT_INJECTION
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT,
                            "hb_testing_set_cost_clock: engine is NULL");
    if (!hb_gate_enter(&e->gate))
        return refused("hb_testing_set_cost_clock");
    int ok = hb_sched_set_clock(&e->sched, backend, terms);
    e->costs_distorted = 1;
    hb_gate_leave(&e->gate);
    if (!ok)
        return hb_error_set(&e->error, HB_ERR_INVALID_ARGUMENT,
                            "hb_testing_set_cost_clock: no backend %u, or a bad term", backend);
    return HB_OK;
#else
    (void)e;
    (void)backend;
    (void)terms;
    return HB_ERR_INVALID_ARGUMENT;
#endif
}

hb_status hb_testing_force_costs(hb_engine *e, unsigned backend, const hb_cost_terms *terms)
{
#ifdef HB_FAULT_INJECTION
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_testing_force_costs: engine is NULL");
    if (!hb_gate_enter(&e->gate))
        return refused("hb_testing_force_costs");
    int ok = hb_sched_force(&e->sched, backend, terms);
    e->costs_distorted = 1;
    hb_gate_leave(&e->gate);
    if (!ok)
        return hb_error_set(&e->error, HB_ERR_INVALID_ARGUMENT,
                            "hb_testing_force_costs: no backend %u, or a bad term", backend);
    return HB_OK;
#else
    (void)e;
    (void)backend;
    (void)terms;
    return HB_ERR_INVALID_ARGUMENT;
#endif
}
