/*
 * machine_key.c - the machine's name in cache keys (see machine_key.h).
 *
 * Owns: reading the host name and the CPU's model name.
 * Must not: print.
 */
#include "machine_key.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hashbatch.h"

/* The CPU's model name, from /proc/cpuinfo ("" where there is none). */
static void cpu_model(char *out, size_t size)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
            snprintf(out, size, "%s", colon + 2);
            break;
        }
    }
    if (f != NULL)
        fclose(f);
}

void hb_key_sanitize(char *key)
{
    for (char *c = key; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = ' ';
}

size_t hb_machine_key(char *out, size_t size)
{
    char host[128] = "", cpu[256];
    if (size == 0)
        return 0;
    gethostname(host, sizeof host - 1);
    cpu_model(cpu, sizeof cpu);
    int used = snprintf(out, size, "hashbatch %d.%d.%d | host %s | cpu %s | ", HB_VERSION_MAJOR,
                        HB_VERSION_MINOR, HB_VERSION_PATCH, host, cpu);
    hb_key_sanitize(out);
    return used > 0 && (size_t)used < size ? (size_t)used : strlen(out);
}
