/*
 * cores.c - the pool's and the OpenCL runtime's cores (cores.h).
 *
 * Owns: CPU lists, the pool's share of the process's cores, pinning the
 * calling thread and threads it creates.
 * Must not: print, or pin any thread but the caller and those it creates.
 */
#include "cores.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static hb_core_set counted(const cpu_set_t *set)
{
    hb_core_set c;
    c.set = *set;
    c.count = (unsigned)CPU_COUNT(set);
    return c;
}

hb_core_set hb_cores_of_self(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        CPU_ZERO(&set);
    return counted(&set);
}

/* parse_range: "a" or "a-b" at *p into [lo, hi]; 1, or 0 when malformed. */
static int parse_range(const char **p, unsigned long *lo, unsigned long *hi)
{
    char *end;
    if (!isdigit((unsigned char)**p))
        return 0;
    *lo = strtoul(*p, &end, 10);
    *hi = *lo;
    if (*end == '-') {
        if (!isdigit((unsigned char)end[1]))
            return 0;
        *hi = strtoul(end + 1, &end, 10);
    }
    *p = end;
    return *lo <= *hi && *hi < CPU_SETSIZE;
}

/* parse_list: list into *out; 1, or 0 when it is not a CPU list. */
static int parse_list(const char *list, hb_core_set *out)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    const char *p = list;
    for (;;) {
        unsigned long lo, hi;
        if (!parse_range(&p, &lo, &hi))
            return 0;
        for (unsigned long c = lo; c <= hi; c++)
            CPU_SET(c, &set);
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return 0;
    }
    *out = counted(&set);
    return 1;
}

/* usable: 1 when device is within this process's cores and leaves the
 * pool at least one. */
static int usable(const hb_core_set *device)
{
    hb_core_set mine = hb_cores_of_self();
    return hb_cores_within(device, &mine) && hb_cores_pool(device).count > 0;
}

hb_status hb_cores_parse(const char *list, const char *origin, hb_core_set *out)
{
    hb_core_set device;
    if (!parse_list(list, &device))
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "%s: '%s' is not a CPU list (expected cores such as 1 or 0,2-3)",
                            origin, list);
    hb_core_set mine = hb_cores_of_self();
    if (!hb_cores_within(&device, &mine))
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "%s: '%s' names a core this process may not run on", origin, list);
    if (hb_cores_pool(&device).count == 0)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "%s: '%s' leaves the CPU pool no core", origin, list);
    *out = device;
    return HB_OK;
}

int hb_cores_from_environment(hb_core_set *out)
{
    const char *list = getenv("HASHBATCH_DEVICE_CORES");
    return list != NULL && parse_list(list, out) && usable(out);
}

hb_core_set hb_cores_pool(const hb_core_set *device)
{
    hb_core_set mine = hb_cores_of_self();
    cpu_set_t pool;
    CPU_ZERO(&pool);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine.set) && !CPU_ISSET(c, &device->set))
            CPU_SET(c, &pool);
    return counted(&pool);
}

int hb_cores_pin_self(const hb_core_set *cores)
{
    return sched_setaffinity(0, sizeof cores->set, &cores->set);
}

int hb_cores_thread_create(pthread_t *thread, const hb_core_set *cores, void *(*fn)(void *),
                           void *arg)
{
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc != 0)
        return rc;
    if (cores->count > 0)
        pthread_attr_setaffinity_np(&attr, sizeof cores->set, &cores->set);
    rc = pthread_create(thread, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}

int hb_cores_within(const hb_core_set *a, const hb_core_set *b)
{
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &a->set) && !CPU_ISSET(c, &b->set))
            return 0;
    return 1;
}

void hb_cores_text(const hb_core_set *cores, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && used < size; c++) {
        if (!CPU_ISSET(c, &cores->set) || (c > 0 && CPU_ISSET(c - 1, &cores->set)))
            continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &cores->set))
            last++;
        int n = last > c ? snprintf(buf + used, size - used, "%s%d-%d", used ? "," : "", c, last)
                         : snprintf(buf + used, size - used, "%s%d", used ? "," : "", c);
        used += n > 0 ? (size_t)n : 0;
    }
}
