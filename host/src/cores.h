/*
 * cores.h - which of the host's cores the CPU pool and the OpenCL runtime
 * run on, when HASHBATCH_DEVICE_CORES gives the runtime cores of its own.
 *
 * Owns: parsing a Linux CPU list ("1", "2-3,6"), the pool's cores (the
 * process's affinity less the device's), and pinning the calling thread.
 * An OpenCL CPU device (pocl) computes on threads its runtime starts when
 * the process first lists devices, and those threads keep the affinity of
 * the thread that started them: devices.c records it, and the engine
 * starts the runtime from a thread pinned to the device's cores.
 * Must not: print, or pin any thread but the caller and those it creates.
 */
#ifndef HB_CORES_H
#define HB_CORES_H

#include <pthread.h>
#include <sched.h>

#include "hashbatch.h"

/* A set of cores; count 0: none given. */
typedef struct {
    cpu_set_t set;
    unsigned count;
} hb_core_set;

/* hb_cores_parse: list ("1", "0,2-3") into *out, checked against the
 * cores this process may run on: HB_ERR_INVALID_ARGUMENT, the reason in
 * the thread's error text naming origin, when it is malformed, names a
 * core outside the process's affinity, or leaves the pool no core. */
hb_status hb_cores_parse(const char *list, const char *origin, hb_core_set *out);

/* hb_cores_from_environment: HASHBATCH_DEVICE_CORES into *out, 1 when it
 * is set and usable (as hb_cores_parse would take it), else 0, quietly:
 * the engine that reads it reports what is wrong with it. */
int hb_cores_from_environment(hb_core_set *out);

/* hb_cores_pool: the process's cores that are not in device. */
hb_core_set hb_cores_pool(const hb_core_set *device);

/* hb_cores_pin_self: the calling thread on cores; 0 on success. */
int hb_cores_pin_self(const hb_core_set *cores);

/* hb_cores_thread_create: pthread_create(thread, fn, arg), the new thread
 * on cores from its first instruction (count 0: wherever it inherits);
 * 0 or pthread_create's error. */
int hb_cores_thread_create(pthread_t *thread, const hb_core_set *cores, void *(*fn)(void *),
                           void *arg);

/* hb_cores_of_self: the calling thread's cores now. */
hb_core_set hb_cores_of_self(void);

/* hb_cores_within: 1 when every core of a is in b. */
int hb_cores_within(const hb_core_set *a, const hb_core_set *b);

/* hb_cores_text: "1" or "0,2-3" into buf. */
void hb_cores_text(const hb_core_set *cores, char *buf, size_t size);

#endif /* HB_CORES_H */
