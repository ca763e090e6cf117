/*
 * models.h - each backend's first cost model, from the cache or measured.
 *
 * Owns: the model cache keys (library version, host, CPU model, and for
 * a device its platform, name, driver and shape; for the pool its CPU
 * implementation), the choice between the cache and a calibration at
 * open, and storing what the run refined at close.
 * Must not: start threads, or fail an engine open over the cache (a bad
 * cache is a missing one).
 */
#ifndef HB_MODELS_H
#define HB_MODELS_H

#include <stdint.h>

#include "backend.h"
#include "devices.h"
#include "error.h"
#include "hashbatch.h"
#include "sched/calibrate.h"

#define HB_MODEL_KEY_BYTES 512

/* What open needs to know for each backend's model. */
typedef struct {
    const hb_backend_ops *ops;
    void *self;
    const hb_device_info *device; /* NULL: not an OpenCL device */
    char key[HB_MODEL_KEY_BYTES];
    hb_cost_terms terms[HB_COST_CLASSES];
    int calibrated;                 /* 1: measured at this open, not cached */
    hb_calibration_report measured; /* then, what fitted in its budget */
} hb_model_seed;

/* hb_models_seed: fills each seed's key and terms: from the cache file
 * when it has fresh terms for the key (unless force), else by calibrating
 * the backend within its budget (calibrate.h), then stored. *calibration_ns is the time spent measuring
 * (0 when everything came from the cache: *from_cache 1). Fails only when
 * a device fails its calibration launches (HB_ERR_DEVICE, err says why)
 * or memory runs out. */
hb_status hb_models_seed(hb_model_seed *seeds, size_t n, int force, uint64_t *calibration_ns,
                         int *from_cache, hb_error_slot *err);

/* hb_models_store: the refined terms of one backend, for its key. */
void hb_models_store(const char *key, const hb_cost_terms terms[HB_COST_CLASSES]);

/* hb_models_open_cost: how long finding and opening the OpenCL devices
 * of spec ("all", "gpu", "0:0" ...) took (ns) when last measured, from
 * the model cache; 0 when not known. Keyed by spec, not by device: the
 * point is to know it before the platforms are even listed (loading
 * pocl is most of its cost). */
double hb_models_open_cost(const char *spec);

/* hb_models_store_open_cost: finding and opening spec's devices took ns. */
void hb_models_store_open_cost(const char *spec, double ns);

/* hb_models_store_shared_devices: the cheapest terms of spec's devices
 * when all of them run on the pool's cores (pocl's CPU device), each
 * field the least any device has; all zero when one of them has hardware
 * of its own (a GPU), for which nothing is weighed. */
void hb_models_store_shared_devices(const char *spec, const hb_cost_terms terms[HB_COST_CLASSES]);

/* hb_models_shared_devices_time: what spec's devices, all on the pool's
 * cores, would take at the least for n messages holding bytes, by those
 * cached terms (one launch's fixed cost, then every message and byte);
 * 0 when not known or when a device has hardware of its own. */
double hb_models_shared_devices_time(const char *spec, uint64_t n, uint64_t bytes);

/* hb_models_pool_time: what the CPU pool (implementation impl, threads
 * side by side) would take for n messages holding bytes, by its model in
 * the cache (its fixed cost, then the work spread over the threads); 0
 * when the cache holds no model for it. */
double hb_models_pool_time(const hb_backend_ops *pool_ops, void *pool_self, unsigned threads,
                           uint64_t n, uint64_t bytes);

#endif /* HB_MODELS_H */
