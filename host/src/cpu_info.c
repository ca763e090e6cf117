/*
 * cpu_info.c - what the host CPU offers: SHA extensions, online cores.
 *
 * Owns: hb_cpu_has_sha_ni and hb_cpu_threads_default.
 * Must not: cache anything that can change (cores come and go).
 */
#include "hashbatch.h"

#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

int hb_cpu_has_sha_ni(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
        return 0;
    return (ebx >> 29) & 1u; /* CPUID.(EAX=7,ECX=0):EBX.SHA[bit 29] */
#else
    return 0;
#endif
}

unsigned hb_cpu_threads_default(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
}
