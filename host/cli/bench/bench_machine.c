/*
 * bench_machine.c - what the benchmark ran on: date, CPU model, cores,
 * SHA-NI, OpenSSL's version, the OS, the load, and every OpenCL device.
 *
 * Owns: gathering those facts once, before measuring.
 * Must not: open engines or print (the report modules print).
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* cpu_model: /proc/cpuinfo's first "model name", or "unknown". */
static void cpu_model(char *out, size_t len)
{
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *v = strchr(line, ':');
        if (v == NULL)
            continue;
        v += strspn(v + 1, " \t") + 1;
        snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    fclose(f);
}

/* devices: every OpenCL device, as hb_devices_list gives them. */
static int devices(bench_machine *m)
{
    size_t count = 0;
    hb_status st = hb_devices_list(NULL, 0, &count);
    if (st == HB_ERR_NO_OPENCL)
        return CLI_EXIT_OK; /* a library built without OpenCL: no devices */
    if (st == HB_OK && count > 0) {
        m->dev = calloc(count, sizeof *m->dev);
        if (m->dev == NULL) {
            cli_error("%s", hb_status_str(HB_ERR_NO_MEMORY));
            return CLI_EXIT_FAILURE;
        }
        size_t total = 0;
        st = hb_devices_list(m->dev, count, &total);
        m->ndev = total < count ? total : count;
    }
    if (st != HB_OK) {
        const char *detail = hb_engine_last_error(NULL);
        cli_error("cannot list OpenCL devices: %s%s%s", hb_status_str(st), detail[0] ? ": " : "",
                  detail);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

int bench_machine_read(bench_machine *m)
{
    memset(m, 0, sizeof *m);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cpu_model(m->cpu_model, sizeof m->cpu_model);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores = cores > 0 ? (unsigned)cores : 1;
    m->cpu_threads = hb_cpu_threads_default();
    m->sha_ni = hb_cpu_has_sha_ni();
    snprintf(m->openssl, sizeof m->openssl, "%s", OpenSSL_version(OPENSSL_VERSION));
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->os, sizeof m->os, "%.40s %.64s %.32s", u.sysname, u.release, u.machine);
    if (getloadavg(m->load, 3) != 3)
        m->load[0] = m->load[1] = m->load[2] = -1;
    return devices(m);
}

void bench_machine_load_end(bench_machine *m)
{
    if (getloadavg(m->load_end, 3) != 3)
        m->load_end[0] = m->load_end[1] = m->load_end[2] = -1;
}

void bench_machine_free(bench_machine *m)
{
    free(m->dev);
    m->dev = NULL;
    m->ndev = 0;
}
