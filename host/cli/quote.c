/*
 * quote.c - file names in error messages, quoted as coreutils' quotef()
 * does (gnulib's shell-escape style): a name is printed as it is unless a
 * shell would need quotes to read it back; then it is put in '...' (or
 * "..." when it holds a ' and nothing special inside double quotes), and
 * unprintable bytes become $'\n', $'\377' segments.
 *
 * Owns: that quoting. Must not: be used for sha1sum's output lines or
 * JSON, whose escaping is a different rule (name_escape.c).
 */
#include <stdio.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#include "cli.h"

/* Scan results for one name. */
typedef struct {
    int needs_quotes;
    int has_squote;
    int has_unprintable;
    int dquote_unsafe; /* has a byte special inside "..." */
} quote_scan;

/* is_shell_special: does ASCII byte c at index i force quoting? */
static int is_shell_special(unsigned char c, size_t i, size_t len)
{
    if (strchr(" !\"$&'()*:;<=>?[\\^`|", c) != NULL)
        return 1;
    if ((c == '#' || c == '~') && i == 0)
        return 1;
    if ((c == '{' || c == '}') && len == 1)
        return 1;
    return 0;
}

/* printable_len: length of the printable character at s (n bytes left),
 * or 0 when the byte at s must be escaped. */
static size_t printable_len(const char *s, size_t n)
{
    unsigned char c = (unsigned char)*s;
    if (c < 0x80)
        return (c >= 0x20 && c < 0x7f) ? 1 : 0;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    wchar_t wc;
    size_t k = mbrtowc(&wc, s, n, &st);
    if (k == (size_t)-1 || k == (size_t)-2 || k == 0 || !iswprint((wint_t)wc))
        return 0;
    return k;
}

static quote_scan scan_name(const char *name, size_t len)
{
    quote_scan q = {len == 0, 0, 0, 0};
    for (size_t i = 0; i < len;) {
        size_t k = printable_len(name + i, len - i);
        if (k == 0) {
            q.needs_quotes = q.has_unprintable = 1;
            i++;
            continue;
        }
        unsigned char c = (unsigned char)name[i];
        if (k == 1 && is_shell_special(c, i, len))
            q.needs_quotes = 1;
        if (c == '\'')
            q.has_squote = 1;
        if (k == 1 && strchr("$`\\\"!", c) != NULL)
            q.dquote_unsafe = 1;
        i += k;
    }
    return q;
}

/* put_escape: byte c as it appears inside $'...'. */
static void put_escape(FILE *f, unsigned char c)
{
    static const char from[] = "\a\b\f\n\r\t\v";
    static const char to[] = "abfnrtv";
    const char *p = c ? strchr(from, c) : NULL;
    if (p != NULL)
        fprintf(f, "\\%c", to[p - from]);
    else
        fprintf(f, "\\%03o", (unsigned)c);
}

/* put_single_quoted: name in '...' with $'..' segments for the
 * unprintable bytes and '\'' for single quotes. */
static void put_single_quoted(FILE *f, const char *name, size_t len)
{
    int in_dollar = 0; /* inside a $'...' segment */
    fputc('\'', f);
    for (size_t i = 0; i < len;) {
        size_t k = printable_len(name + i, len - i);
        if (k == 0) {
            if (!in_dollar)
                fputs("'$'", f);
            in_dollar = 1;
            put_escape(f, (unsigned char)name[i]);
            i++;
            continue;
        }
        if (in_dollar) {
            fputs("''", f); /* close $'...', reopen '...' */
            in_dollar = 0;
        }
        if (name[i] == '\'')
            fputs("'\\''", f);
        else
            fwrite(name + i, 1, k, f);
        i += k;
    }
    fputc('\'', f);
}

void cli_quote_name(FILE *f, const char *name)
{
    size_t len = strlen(name);
    quote_scan q = scan_name(name, len);
    if (!q.needs_quotes)
        fputs(name, f);
    else if (q.has_squote && !q.has_unprintable && !q.dquote_unsafe)
        fprintf(f, "\"%s\"", name);
    else
        put_single_quoted(f, name, len);
}
