/*
 * name_escape.h - the one escaping core for names in the CLI's output
 * formats: sha1sum's lines (\\, \n, \r) and JSON string literals (RFC
 * 8259: quotes, backslashes, control characters; invalid UTF-8 becomes
 * U+FFFD), and undoing sha1sum's escapes when checksum lines are read.
 *
 * Owns: which bytes each format escapes and how. Must not: add what
 * surrounds a name (sha1sum's leading backslash, JSON's quotes: the
 * callers do) or quote names for a shell (quote.c does, another rule).
 */
#ifndef HB_CLI_NAME_ESCAPE_H
#define HB_CLI_NAME_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* The formats names are escaped for. */
typedef enum {
    NAME_ESC_SHA1SUM, /* \ newline CR as \\ \n \r; every other byte as is */
    NAME_ESC_JSON     /* the inside of a JSON string literal */
} name_esc_format;

/* name_esc_needed: does name[0, len) hold a byte that fmt escapes? (For
 * JSON, invalid UTF-8 counts.) */
int name_esc_needed(const char *name, size_t len, name_esc_format fmt);

/* name_esc_put: writes name[0, len) to f with fmt's escapes. */
void name_esc_put(FILE *f, const char *name, size_t len, name_esc_format fmt);

/* name_unescape_sha1sum: undoes NAME_ESC_SHA1SUM on s[0, len) in place,
 * as sha1sum -c does; *out is the new length (nothing is written past
 * it). Returns 0, or -1 when s holds a NUL, a backslash at its end or
 * one before anything but \, n or r (s is then partly rewritten). */
int name_unescape_sha1sum(char *s, size_t len, size_t *out);

#endif /* HB_CLI_NAME_ESCAPE_H */
