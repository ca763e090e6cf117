/*
 * cpu_impls.c - which CPU implementations of SHA-1 this machine runs.
 *
 * Owns: answering the per-implementation test reruns (run_with_cpu_impl.sh)
 * and anyone curious: prints "runnable NAME" for each implementation this
 * CPU can run and "default NAME" for the one an engine takes when none is
 * asked for (measured, mb_costs.h). With one argument NAME, exits 0 if NAME
 * runs here and is not the default, 3 if it is the default, 4 if it cannot
 * run here, 2 if there is no such implementation.
 * Must not: hash anything but the measurement the default needs.
 */
#include <stdio.h>
#include <string.h>

#include "mb/mb_costs.h"
#include "mb/mb_impl.h"

int main(int argc, char **argv)
{
    hb_cpu_impl chosen = hb_cpu_impl_default();
    if (argc == 1) {
        for (int k = 0; k < HB_CPU_IMPL_COUNT; k++)
            if (hb_cpu_impl_runnable((hb_cpu_impl)k))
                printf("runnable %s\n", hb_cpu_impl_describe((hb_cpu_impl)k)->name);
        printf("default %s\n", hb_cpu_impl_describe(chosen)->name);
        return 0;
    }
    for (int k = 0; k < HB_CPU_IMPL_COUNT; k++) {
        if (strcmp(argv[1], hb_cpu_impl_describe((hb_cpu_impl)k)->name) != 0)
            continue;
        if (!hb_cpu_impl_runnable((hb_cpu_impl)k))
            return 4;
        return (hb_cpu_impl)k == chosen ? 3 : 0;
    }
    fprintf(stderr, "cpu_impls: no CPU implementation is called '%s'\n", argv[1]);
    return 2;
}
