/*
 * json.c - JSON string literals for the --json outputs.
 *
 * Owns: escaping text into a valid JSON string (RFC 8259): quotes,
 * backslashes and control characters escaped, valid UTF-8 passed through,
 * invalid bytes replaced by U+FFFD. Must not: depend on the locale, or
 * print anything but the literal it is given.
 */
#include <stdio.h>

#include "cli.h"

/* utf8_len: length of the valid UTF-8 sequence at s (n bytes left), or 0
 * when it is not one (overlong forms and surrogates included). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    unsigned cp = c & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* put_ascii: one ASCII byte, escaped as JSON needs. */
static void put_ascii(FILE *f, unsigned char c)
{
    switch (c) {
    case '"':
        fputs("\\\"", f);
        break;
    case '\\':
        fputs("\\\\", f);
        break;
    case '\n':
        fputs("\\n", f);
        break;
    case '\r':
        fputs("\\r", f);
        break;
    case '\t':
        fputs("\\t", f);
        break;
    case '\b':
        fputs("\\b", f);
        break;
    case '\f':
        fputs("\\f", f);
        break;
    default:
        if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", (unsigned)c);
        else
            fputc(c, f);
    }
}

void json_put_string(FILE *f, const char *s, size_t maxlen)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (n < maxlen && p[n] != '\0')
        n++;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(p + i, n - i);
        if (k == 0) {
            fputs("\\ufffd", f);
            i++;
        } else if (k == 1) {
            put_ascii(f, p[i++]);
        } else {
            fwrite(p + i, 1, k, f);
            i += k;
        }
    }
    fputc('"', f);
}
