/*
 * name_escape.c - the escaping core behind sha1sum's output lines
 * (sum_format.c) and the JSON outputs (json.c), and the reverse of
 * sha1sum's escapes for `sum -c` (sum_parse.c).
 *
 * One table says which bytes become a backslash and a letter in which
 * format; JSON also writes other control bytes as \u00XX and checks
 * UTF-8 (overlong forms and surrogates are invalid), replacing each
 * invalid byte by \ufffd. sha1sum passes every other byte through.
 *
 * Owns: those rules. Must not: depend on the locale, print anything but
 * the escaped name, or add the characters around it.
 */
#include <string.h>

#include "name_escape.h"
#include "utf8.h"

#define IN_SHA1SUM 1u
#define IN_JSON 2u

/* Bytes written as a backslash and a letter, and the formats that do. */
static const struct {
    char byte, letter;
    unsigned formats;
} short_escapes[] = {
    {'\\', '\\', IN_SHA1SUM | IN_JSON},
    {'\n', 'n', IN_SHA1SUM | IN_JSON},
    {'\r', 'r', IN_SHA1SUM | IN_JSON},
    {'"', '"', IN_JSON},
    {'\t', 't', IN_JSON},
    {'\b', 'b', IN_JSON},
    {'\f', 'f', IN_JSON},
};

#define N_SHORT (sizeof short_escapes / sizeof short_escapes[0])

static unsigned format_bit(name_esc_format fmt)
{
    return fmt == NAME_ESC_JSON ? IN_JSON : IN_SHA1SUM;
}

/* short_letter: the letter that follows the backslash for byte c in fmt,
 * or 0 when c has no short escape there. */
static char short_letter(unsigned char c, name_esc_format fmt)
{
    for (size_t i = 0; i < N_SHORT; i++)
        if ((unsigned char)short_escapes[i].byte == c &&
            (short_escapes[i].formats & format_bit(fmt)))
            return short_escapes[i].letter;
    return 0;
}

/* json_control: a byte JSON writes as \u00XX (no short escape). */
static int json_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* next_piece: how the bytes at s (n left) are written in fmt: *len bytes
 * as they are (returns 0), or one byte escaped (returns 1). */
static int next_piece(const unsigned char *s, size_t n, name_esc_format fmt, size_t *len)
{
    *len = 1;
    if (short_letter(s[0], fmt) != 0)
        return 1;
    if (fmt != NAME_ESC_JSON)
        return 0;
    if (s[0] < 0x80)
        return json_control(s[0]);
    *len = utf8_seq_len(s, n);
    if (*len == 0) {
        *len = 1;
        return 1;
    }
    return 0;
}

/* put_escaped: the escape of byte c (one next_piece called escaped). */
static void put_escaped(FILE *f, unsigned char c, name_esc_format fmt)
{
    char letter = short_letter(c, fmt);
    if (letter != 0) {
        putc('\\', f);
        putc(letter, f);
    } else if (c < 0x80) {
        fprintf(f, "\\u%04x", (unsigned)c);
    } else {
        fputs("\\ufffd", f);
    }
}

int name_esc_needed(const char *name, size_t len, name_esc_format fmt)
{
    const unsigned char *p = (const unsigned char *)name;
    for (size_t i = 0, k; i < len; i += k)
        if (next_piece(p + i, len - i, fmt, &k))
            return 1;
    return 0;
}

void name_esc_put(FILE *f, const char *name, size_t len, name_esc_format fmt)
{
    const unsigned char *p = (const unsigned char *)name;
    size_t run = 0; /* start of the bytes passed through, not yet written */
    for (size_t i = 0, k; i < len; i += k) {
        if (!next_piece(p + i, len - i, fmt, &k))
            continue;
        fwrite(p + run, 1, i - run, f);
        put_escaped(f, p[i], fmt);
        run = i + k;
    }
    fwrite(p + run, 1, len - run, f);
}

/* sha1sum_byte: the byte that "\\" letter stands for in sha1sum's lines,
 * or -1. */
static int sha1sum_byte(char letter)
{
    for (size_t i = 0; i < N_SHORT; i++)
        if (short_escapes[i].letter == letter && (short_escapes[i].formats & IN_SHA1SUM))
            return (unsigned char)short_escapes[i].byte;
    return -1;
}

int name_unescape_sha1sum(char *s, size_t len, size_t *out)
{
    size_t dst = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\0')
            return -1;
        if (s[i] != '\\') {
            s[dst++] = s[i];
            continue;
        }
        int b = ++i < len ? sha1sum_byte(s[i]) : -1;
        if (b < 0)
            return -1;
        s[dst++] = (char)b;
    }
    *out = dst;
    return 0;
}
