/*
 * sum_parse.c - one checksum line of `hashbatch sum -c`, split as GNU
 * sha1sum 9.1 splits it (split_3 and bsd_split_3 in coreutils'
 * digest.c, lengths included): "HEX  NAME", "HEX *NAME", the BSD
 * "SHA1 (NAME) = HEX", leading blanks, and a leading backslash that
 * marks an escaped name (\\, \n, \r, undone by name_escape.c).
 *
 * Owns: the split of a line into digest and name, and the one piece of
 * state that spans lines (whether "HEX NAME" lines with one blank are
 * in use). Must not: read files, print, or decide what a bad line does
 * to the exit status (sum_check.c does).
 */
#include <ctype.h>
#include <string.h>

#include "name_escape.h"
#include "sum.h"

#define MIN_LINE_LEN (SUM_HEX_LEN + 2) /* digest, blank, a one-byte name */
#define ISWHITE(c) ((c) == ' ' || (c) == '\t')

void sum_parser_init(sum_parser *p)
{
    p->bsd_reversed = -1;
}

/* unescape: the name s[0, len) unescaped in place and NUL-terminated;
 * 0 when it holds a bad escape or a NUL. */
static int unescape(char *s, size_t len)
{
    size_t out;
    if (name_unescape_sha1sum(s, len, &out) != 0)
        return 0;
    if (out < len)
        s[out] = '\0';
    return 1;
}

/* hex_digits: exactly SUM_HEX_LEN hex digits, then the end of the string. */
static int hex_digits(const char *s)
{
    for (int i = 0; i < SUM_HEX_LEN; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return s[SUM_HEX_LEN] == '\0';
}

/* split_bsd: "NAME) = HEX" after "SHA1 (": the name ends at the last ')'. */
static int split_bsd(char *s, size_t len, char **hex, char **name, int escaped)
{
    if (len == 0)
        return 0;
    size_t i = len - 1;
    while (i && s[i] != ')')
        i--;
    if (s[i] != ')')
        return 0;
    *name = s;
    if (escaped && !unescape(s, i))
        return 0;
    s[i++] = '\0';
    while (ISWHITE(s[i]))
        i++;
    if (s[i] != '=')
        return 0;
    i++;
    while (ISWHITE(s[i]))
        i++;
    *hex = &s[i];
    return hex_digits(*hex);
}

int sum_parse_line(sum_parser *p, char *s, size_t len, char **hex, char **name)
{
    int escaped = 0;
    size_t i = 0;
    while (ISWHITE(s[i]))
        i++;
    if (s[i] == '\\') {
        i++;
        escaped = 1;
    }
    if (strncmp(s + i, "SHA1", 4) == 0) {
        i += 4;
        if (s[i] == ' ')
            i++;
        if (s[i] != '(')
            return 0;
        i++;
        return split_bsd(s + i, len - i, hex, name, escaped);
    }
    if (len - i < MIN_LINE_LEN + (s[i] == '\\'))
        return 0;
    *hex = &s[i];
    i += SUM_HEX_LEN;
    if (!ISWHITE(s[i]))
        return 0;
    s[i++] = '\0';
    if (!hex_digits(*hex))
        return 0;
    if (len - i == 1 || (s[i] != ' ' && s[i] != '*')) {
        if (p->bsd_reversed == 0)
            return 0;
        p->bsd_reversed = 1;
    } else if (p->bsd_reversed != 1) {
        p->bsd_reversed = 0;
        i++;
    }
    *name = &s[i];
    return escaped ? unescape(&s[i], len - i) : 1;
}
