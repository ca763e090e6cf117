/*
 * config.h - an engine's settings, resolved from hb_config and environment.
 *
 * Owns: defaults, parsing of names, environment overrides, range checks.
 * Must not: open devices or allocate anything beyond the settings struct.
 */
#ifndef HB_CONFIG_H
#define HB_CONFIG_H

#include "cores.h"
#include "hashbatch.h"
#include "mb/mb_impl.h"

#define HB_DEFAULT_STAGING_BYTES ((size_t)16 << 20)
#define HB_MIN_STAGING_BYTES ((size_t)64 << 10)
/* whole device messages re-hashed per thousand under sampled verification,
 * beside the probes of every launch (probe.h), which are the default */
#define HB_DEFAULT_SAMPLE_PER_MILLE 0u
#define HB_DEVICE_SPEC_MAX 256

typedef struct {
    hb_backend_kind backend;
    char device[HB_DEVICE_SPEC_MAX]; /* "" when none was given */
    hb_verify_mode verify;
    unsigned cpu_threads;
    int cpu_threads_given; /* 0: cpu_threads is the default, one per core */
    size_t staging_bytes;
    unsigned ring_depth;
    unsigned sample_per_mille;
    int cpu_fallback;
    uint64_t seed;
    hb_cpu_impl cpu_impl;                       /* the pool's SHA-1 (mb/mb_impl.h) */
    int cpu_impl_given;                         /* 1: named by the config or HASHBATCH_CPU_IMPL, so
                                                   used for every list; 0: measured, and a list
                                                   too short for its lanes may go to another */
    int calibrate;                              /* measure the cost models at open, cache or not */
    uint64_t expected_messages, expected_bytes; /* 0, 0: not known */
    int idle_priority;                          /* the engine's threads at the lowest priority */
    hb_core_set device_cores;                   /* HASHBATCH_DEVICE_CORES (count 0: not given):
                                                 * the OpenCL runtime's cores, the pool on
                                                 * the rest (cores.h) */
} hb_settings;

/* hb_settings_resolve: cfg (NULL: defaults) plus environment overrides,
 * checked. Failures name the bad value in the thread's error text. */
hb_status hb_settings_resolve(const hb_config *cfg, hb_settings *out);

#endif /* HB_CONFIG_H */
