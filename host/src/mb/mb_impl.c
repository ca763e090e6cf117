/*
 * mb_impl.c - which CPU implementations exist and which this CPU runs.
 *
 * Owns: the table of implementations, the CPU feature checks behind
 * hb_cpu_impl_runnable (cpuid through the compiler's builtins, read
 * once) and the names, also as the public hb_cpu_impl_name and
 * hb_cpu_impl_runs.
 * Must not: read the environment (config.c does, for an engine).
 */
#include "mb/mb_impl.h"

#include <string.h>

static const hb_cpu_impl_desc impls[HB_CPU_IMPL_COUNT] = {
    [HB_CPU_IMPL_SHA_NI] = {"sha-ni", 0, NULL},
    [HB_CPU_IMPL_PORTABLE] = {"portable", 4, hb_mb_blocks_portable},
    [HB_CPU_IMPL_AVX2] = {"avx2", 8, hb_mb_blocks_avx2},
    [HB_CPU_IMPL_AVX512] = {"avx512", 16, hb_mb_blocks_avx512},
};

const hb_cpu_impl_desc *hb_cpu_impl_describe(hb_cpu_impl impl)
{
    return &impls[impl < HB_CPU_IMPL_COUNT ? impl : HB_CPU_IMPL_SHA_NI];
}

int hb_cpu_impl_runnable(hb_cpu_impl impl)
{
    switch (impl) {
    case HB_CPU_IMPL_SHA_NI:
    case HB_CPU_IMPL_PORTABLE:
        return 1;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    case HB_CPU_IMPL_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2");
    case HB_CPU_IMPL_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
    default:
        return 0;
    }
}

hb_status hb_cpu_impl_parse(const char *name, hb_cpu_impl *out)
{
    for (int k = 0; k < HB_CPU_IMPL_COUNT; k++) {
        if (strcmp(name, impls[k].name) == 0) {
            *out = (hb_cpu_impl)k;
            return hb_cpu_impl_runnable(*out) ? HB_OK : HB_ERR_INVALID_ARGUMENT;
        }
    }
    return HB_ERR_INVALID_ARGUMENT;
}

const char *hb_cpu_impl_name(unsigned k)
{
    return k < HB_CPU_IMPL_COUNT ? impls[k].name : NULL;
}

int hb_cpu_impl_runs(const char *name)
{
    hb_cpu_impl impl;
    return name != NULL && hb_cpu_impl_parse(name, &impl) == HB_OK;
}
