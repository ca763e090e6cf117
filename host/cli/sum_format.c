/*
 * sum_format.c - sha1sum's output lines, byte for byte (GNU coreutils
 * 9.1): "HEX  NAME\n"; when NAME holds a backslash, newline or carriage
 * return the line starts with a backslash and those become \\, \n, \r.
 *
 * Owns: that format. Must not: quote names for error messages (quote.c
 * does, with another rule) or decide which lines are printed.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sum.h"

/* put_escaped: name with \ newline CR written as \\ \n \r. */
static void put_escaped(FILE *f, const char *name)
{
    for (const char *p = name; *p != '\0'; p++) {
        switch (*p) {
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        default:
            putc(*p, f);
        }
    }
}

void sum_format_line(FILE *f, const hb_digest d, const char *name)
{
    static const char hex[] = "0123456789abcdef";
    char line[2 * sizeof(hb_digest) + 3];
    int escape = strpbrk(name, "\\\n\r") != NULL;
    for (size_t i = 0; i < sizeof(hb_digest); i++) {
        line[2 * i] = hex[d[i] >> 4];
        line[2 * i + 1] = hex[d[i] & 15];
    }
    line[2 * sizeof(hb_digest)] = ' ';
    line[2 * sizeof(hb_digest) + 1] = ' ';
    line[2 * sizeof(hb_digest) + 2] = '\0';
    if (escape)
        putc('\\', f);
    fputs(line, f);
    if (escape)
        put_escaped(f, name);
    else
        fputs(name, f);
    putc('\n', f);
}
