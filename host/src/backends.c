/*
 * backends.c - the two tables of backend.h over their modules.
 *
 * Owns: the adapters from the one signature to backend_opencl.c's and
 * backend_cpu.c's own calls.
 * Must not: add behaviour: each entry forwards.
 */
#include "backend.h"

#include "backend_cpu.h"
#include "backend_opencl.h"
#include "mb/mb_impl.h"

static hb_status opencl_hash(void *self, const hb_msg *m, size_t n, hb_digest *out,
                             hb_error_slot *err)
{
    uint64_t launches = 0;
    return hb_opencl_hash(self, m, n, out, NULL, &launches, err);
}

static const char *opencl_describe(const void *self)
{
    return hb_opencl_describe(self);
}

static int opencl_shares_host_cores(const void *self)
{
    return hb_opencl_info(self)->type == HB_DEVICE_CPU;
}

static void opencl_close(void *self)
{
    hb_opencl_close(self);
}

const hb_backend_ops hb_backend_opencl = {"opencl", opencl_hash, opencl_describe,
                                          opencl_shares_host_cores, opencl_close};

static hb_status cpu_hash(void *self, const hb_msg *m, size_t n, hb_digest *out, hb_error_slot *err)
{
    (void)err; /* the CPU does not fail */
    const hb_cpu_impl *impl = self;
    hb_cpu_hash_watched(*impl, m, NULL, n, out, NULL, NULL);
    return HB_OK;
}

static const char *cpu_describe(const void *self)
{
    const hb_cpu_impl *impl = self;
    return hb_cpu_impl_describe(*impl)->name;
}

static int cpu_shares_host_cores(const void *self)
{
    (void)self;
    return 1;
}

static void cpu_close(void *self)
{
    (void)self;
}

const hb_backend_ops hb_backend_cpu = {"cpu", cpu_hash, cpu_describe, cpu_shares_host_cores,
                                       cpu_close};
