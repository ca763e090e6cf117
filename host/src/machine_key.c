/*
 * machine_key.c - the machine's name in cache keys (see machine_key.h).
 *
 * Owns: reading the host name and the CPU's model name and generation.
 * Must not: print.
 */
#include "machine_key.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hashbatch.h"

/* field_value: the value of /proc/cpuinfo's line "NAME<tabs>: VALUE"
 * (newline cut), or NULL when line is another field. */
static const char *field_value(char *line, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(line, name, n) != 0)
        return NULL;
    char *colon = line + n + strspn(line + n, " \t");
    if (*colon != ':')
        return NULL; /* another field: "model name" is not "model" */
    colon[strcspn(colon, "\n")] = '\0';
    return colon[1] == ' ' ? colon + 2 : colon + 1;
}

/* The first CPU's model name, vendor, family, model and stepping from
 * /proc/cpuinfo: one brand string ("AMD EPYC" in a VM) covers CPUs of
 * different generations, whose costs differ. "" where there is none. */
static void cpu_model(char *out, size_t size)
{
    static const char *const names[] = {"model name", "vendor_id", "cpu family", "model",
                                        "stepping"};
    enum { NFIELDS = sizeof names / sizeof names[0] };
    char values[NFIELDS][128] = {{0}};
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f != NULL && fgets(line, sizeof line, f) != NULL && line[0] != '\n')
        for (size_t i = 0; i < NFIELDS; i++) {
            const char *v = values[i][0] ? NULL : field_value(line, names[i]);
            if (v != NULL)
                snprintf(values[i], sizeof values[i], "%s", v);
        }
    if (f != NULL)
        fclose(f);
    if (!values[0][0] && !values[1][0])
        return;
    int n = snprintf(out, size, "%s (%s family %s model %s stepping %s)", values[0], values[1],
                     values[2], values[3], values[4]);
    if (n < 0)
        out[0] = '\0'; /* an encoding error: no name rather than half of one */
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
