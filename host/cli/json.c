/*
 * json.c - JSON string literals for the --json outputs.
 *
 * Owns: the quotes around a JSON string literal; what goes between them
 * (RFC 8259 escapes, U+FFFD for invalid UTF-8) is name_escape.c's.
 * Must not: escape bytes itself, depend on the locale, or print anything
 * but the literal it is given.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "name_escape.h"

void json_put_string(FILE *f, const char *s, size_t maxlen)
{
    fputc('"', f);
    name_esc_put(f, s, strnlen(s, maxlen), NAME_ESC_JSON);
    fputc('"', f);
}
