/*
 * backend.h - one table of operations over every kind of backend.
 *
 * Owns: hb_backend_ops, the calls the engine, the models and the
 * calibration make on a backend without knowing its kind, each with the
 * same shape (the backend's own state first), as BLAKE3 dispatches over
 * its SIMD paths and redis' rio over its streams: hash a batch whole and
 * synchronously, describe it, say whether it runs on the host's cores,
 * close it. Two tables: hb_backend_opencl (self: an hb_opencl) and
 * hb_backend_cpu (self: the hb_cpu_impl the pool hashes with).
 * The workers that keep a backend busy (worker_device.c, worker_cpu.c)
 * sit above the backends and are not in the table.
 * Must not: hold state of its own.
 */
#ifndef HB_BACKEND_H
#define HB_BACKEND_H

#include "error.h"
#include "hashbatch.h"

typedef struct {
    const char *kind; /* "opencl", "cpu" */
    /* hash: out[i] = SHA-1(m[i]) for i < n on this backend, before this
     * returns; HB_OK or the backend's error (err says why). */
    hb_status (*hash)(void *self, const hb_msg *m, size_t n, hb_digest *out, hb_error_slot *err);
    /* describe: one line, static for the backend's life. */
    const char *(*describe)(const void *self);
    /* shares_host_cores: 1 when it computes on the host's own cores (the
     * pool, an OpenCL CPU device such as pocl). */
    int (*shares_host_cores)(const void *self);
    /* close: releases what open made (nothing, for the pool). */
    void (*close)(void *self);
} hb_backend_ops;

extern const hb_backend_ops hb_backend_opencl;
extern const hb_backend_ops hb_backend_cpu;

#endif /* HB_BACKEND_H */
