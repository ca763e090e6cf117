/*
 * sum_format.c - sha1sum's output lines, byte for byte (GNU coreutils
 * 9.1): "HEX  NAME", "HEX *NAME" (-b), "SHA1 (NAME) = HEX" (--tag). When
 * NAME holds a backslash, newline or carriage return the line starts with
 * a backslash and those become \\, \n, \r; with -z lines end in NUL and
 * nothing is escaped.
 *
 * Owns: those formats and when a name is escaped. Must not: escape bytes
 * itself (name_escape.c holds the rule), quote names for error messages
 * (quote.c does, with another rule) or decide which lines are printed.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "name_escape.h"
#include "sum.h"

int sum_needs_escape(const char *name)
{
    return name_esc_needed(name, strlen(name), NAME_ESC_SHA1SUM);
}

void sum_put_name(FILE *f, const char *name, int escape)
{
    if (escape)
        name_esc_put(f, name, strlen(name), NAME_ESC_SHA1SUM);
    else
        fputs(name, f);
}

void sum_hex(char out[41], const hb_digest d)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(hb_digest); i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[2 * sizeof(hb_digest)] = '\0';
}

void sum_format_line(FILE *f, const hb_digest d, const char *name, const sum_style *s)
{
    char hex[41];
    int escape = !s->zero && sum_needs_escape(name);
    sum_hex(hex, d);
    if (escape)
        putc('\\', f);
    if (s->tag) {
        fputs("SHA1 (", f);
        sum_put_name(f, name, escape);
        fputs(") = ", f);
        fputs(hex, f);
    } else {
        fputs(hex, f);
        putc(' ', f);
        putc(s->binary ? '*' : ' ', f);
        sum_put_name(f, name, escape);
    }
    putc(s->zero ? '\0' : '\n', f);
}
