/*
 * fuzz_quote.c - libFuzzer target: the CLI's two ways of writing a name
 * that may hold any byte: escaping (name_escape.c: sha1sum's \\ \n \r, and
 * JSON string literals through json_put_string) and shell quoting for
 * messages (quote.c: coreutils' quotef style, '...', "..." and $'...').
 *
 * Input: one flags byte (bit 0: the C.UTF-8 locale, else C, for the
 * quoting's idea of a printable character), then the name (up to its
 * first NUL: names are C strings).
 * Checks, each against a decoder written here, not the CLI's:
 *  - sha1sum: the escaped name holds no newline or CR, escaping is needed
 *    exactly when the name holds \ newline or CR, and
 *    name_unescape_sha1sum gives the name back;
 *  - JSON: the literal is quotes around bytes that are all printable or
 *    UTF-8 (no raw control byte, no lone quote or backslash), it decodes
 *    to valid UTF-8, and that is the name with each byte that starts no
 *    well-formed UTF-8 sequence (Unicode table 3-7) replaced by U+FFFD;
 *  - shell: the quoted name holds no control byte, is the name itself
 *    when it is not quoted, and a POSIX shell's reading of it (with
 *    bash's $'...') gives the name back.
 * Must not: share code with what it checks.
 */
#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "cli.h"
#include "name_escape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define CHECK(cond, ...) FUZZ_CHECK("fuzz_quote", cond, __VA_ARGS__)

/* A growing byte string. */
typedef struct {
    char *p;
    size_t n, cap;
} bytes;

static void put(bytes *b, const void *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        CHECK(b->p != NULL, "realloc");
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void put_byte(bytes *b, unsigned char c)
{
    put(b, &c, 1);
}

/* capture: what fn writes for name, as bytes (NUL-terminated). */
#define CAPTURE(out, call)                                                                         \
    do {                                                                                           \
        size_t n_ = 0;                                                                             \
        FILE *f = open_memstream(&(out).p, &n_);                                                   \
        CHECK(f != NULL, "open_memstream");                                                        \
        call;                                                                                      \
        CHECK(fclose(f) == 0, "memstream");                                                        \
        (out).n = (out).cap = n_;                                                                  \
    } while (0)

/* ---- sha1sum escaping ---------------------------------------------- */

static void check_sha1sum(const char *name, size_t len)
{
    bytes e = {0};
    CAPTURE(e, name_esc_put(f, name, len, NAME_ESC_SHA1SUM));
    CHECK(memchr(e.p, '\n', e.n) == NULL && memchr(e.p, '\r', e.n) == NULL,
          "an escaped name holds no newline or CR");
    int special = strpbrk(name, "\\\n\r") != NULL;
    CHECK(name_esc_needed(name, len, NAME_ESC_SHA1SUM) == special, "needed iff \\ newline CR");
    CHECK(special || (e.n == len && memcmp(e.p, name, len) == 0), "nothing to escape: as is");
    size_t out;
    CHECK(name_unescape_sha1sum(e.p, e.n, &out) == 0, "an escaped name unescapes");
    CHECK(out == len && memcmp(e.p, name, len) == 0, "unescape(escape(name)) == name");
    free(e.p);
}

/* ---- JSON ------------------------------------------------------------ */

/* wellformed_len: the length of the well-formed UTF-8 sequence at s (n
 * bytes left), by the ranges of Unicode's table 3-7, or 0. */
static size_t wellformed_len(const unsigned char *s, size_t n)
{
    static const struct {
        unsigned char first_lo, first_hi, second_lo, second_hi, len;
    } rows[] = {
        {0x00, 0x7f, 0, 0, 1},       {0xc2, 0xdf, 0x80, 0xbf, 2}, {0xe0, 0xe0, 0xa0, 0xbf, 3},
        {0xe1, 0xec, 0x80, 0xbf, 3}, {0xed, 0xed, 0x80, 0x9f, 3}, {0xee, 0xef, 0x80, 0xbf, 3},
        {0xf0, 0xf0, 0x90, 0xbf, 4}, {0xf1, 0xf3, 0x80, 0xbf, 4}, {0xf4, 0xf4, 0x80, 0x8f, 4},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        if (s[0] < rows[r].first_lo || s[0] > rows[r].first_hi)
            continue;
        size_t len = rows[r].len;
        if (len > n)
            return 0;
        if (len > 1 && (s[1] < rows[r].second_lo || s[1] > rows[r].second_hi))
            return 0;
        for (size_t i = 2; i < len; i++)
            if (s[i] < 0x80 || s[i] > 0xbf)
                return 0;
        return len;
    }
    return 0;
}

/* put_utf8: code point cp as UTF-8. */
static void put_utf8(bytes *b, unsigned cp)
{
    if (cp < 0x80) {
        put_byte(b, (unsigned char)cp);
    } else if (cp < 0x800) {
        put_byte(b, (unsigned char)(0xc0 | cp >> 6));
        put_byte(b, (unsigned char)(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        put_byte(b, (unsigned char)(0xe0 | cp >> 12));
        put_byte(b, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
        put_byte(b, (unsigned char)(0x80 | (cp & 0x3f)));
    } else {
        put_byte(b, (unsigned char)(0xf0 | cp >> 18));
        put_byte(b, (unsigned char)(0x80 | ((cp >> 12) & 0x3f)));
        put_byte(b, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
        put_byte(b, (unsigned char)(0x80 | (cp & 0x3f)));
    }
}

/* json_decode: the bytes of the literal s[0, n) (quotes included), as an
 * RFC 8259 reader gets them; aborts on anything a reader would refuse. */
static bytes json_decode(const unsigned char *s, size_t n)
{
    bytes out = {0};
    put(&out, "", 0);
    CHECK(n >= 2 && s[0] == '"' && s[n - 1] == '"', "a literal is in quotes");
    for (size_t i = 1; i < n - 1; i++) {
        CHECK(s[i] >= 0x20 && s[i] != 0x7f, "no raw control byte in a literal");
        CHECK(s[i] != '"', "no lone quote inside a literal");
        if (s[i] != '\\') {
            put_byte(&out, s[i]);
            continue;
        }
        CHECK(++i < n - 1, "an escape is complete");
        static const char letter[] = "\"\\/bfnrt";
        static const char value[] = "\"\\/\b\f\n\r\t";
        if (s[i] != 'u') {
            const char *simple = strchr(letter, s[i]);
            CHECK(s[i] != '\0' && simple != NULL, "a known escape: \\%c", s[i]);
            put_byte(&out, (unsigned char)value[simple - letter]);
            continue;
        }
        CHECK(i + 4 <= n - 2, "\\u has four digits");
        char hex[5] = {(char)s[i + 1], (char)s[i + 2], (char)s[i + 3], (char)s[i + 4], 0};
        char *end;
        unsigned cp = (unsigned)strtoul(hex, &end, 16);
        CHECK(*end == '\0', "\\u digits are hex");
        CHECK(cp < 0xd800 || cp > 0xdfff, "no surrogate escapes are written");
        put_utf8(&out, cp);
        i += 4;
    }
    return out;
}

static void check_json(const char *name, size_t len)
{
    bytes lit = {0};
    CAPTURE(lit, json_put_string(f, name, len));
    bytes got = json_decode((const unsigned char *)lit.p, lit.n);
    bytes want = {0};
    put(&want, "", 0);
    const unsigned char *u = (const unsigned char *)name;
    int clean = 1;
    for (size_t i = 0; i < len;) {
        size_t k = wellformed_len(u + i, len - i);
        if (k == 0) {
            put(&want, "\xef\xbf\xbd", 3);
            clean = 0;
            i++;
        } else {
            put(&want, u + i, k);
            i += k;
        }
    }
    CHECK(got.n == want.n && memcmp(got.p, want.p, got.n) == 0,
          "JSON decodes to the name, invalid bytes as U+FFFD");
    for (size_t i = 0; i < got.n;) {
        size_t k = wellformed_len((const unsigned char *)got.p + i, got.n - i);
        CHECK(k > 0, "the decoded literal is valid UTF-8");
        i += k;
    }
    int plain = clean && strpbrk(name, "\"\\") == NULL;
    for (size_t i = 0; i < len && plain; i++)
        plain = u[i] >= 0x20 && u[i] != 0x7f;
    CHECK(name_esc_needed(name, len, NAME_ESC_JSON) == !plain, "JSON: needed iff escaped");
    free(lit.p);
    free(got.p);
    free(want.p);
}

/* ---- shell quoting ------------------------------------------------- */

/* ansi_c: one $'...' segment from s[*i] (after the $'), into out. */
static void ansi_c(const char *s, size_t n, size_t *i, bytes *out)
{
    static const char from[] = "abfnrtv\\'\"";
    static const char to[] = "\a\b\f\n\r\t\v\\'\"";
    for (; *i < n && s[*i] != '\''; (*i)++) {
        if (s[*i] != '\\') {
            put_byte(out, (unsigned char)s[*i]);
            continue;
        }
        CHECK(++*i < n, "an escape in $'...' is complete");
        const char *p = strchr(from, s[*i]);
        if (p != NULL && s[*i] != '\0') {
            put_byte(out, (unsigned char)to[p - from]);
            continue;
        }
        unsigned v = 0;
        int digits = 0;
        while (digits < 3 && *i < n && s[*i] >= '0' && s[*i] <= '7') {
            v = v * 8 + (unsigned)(s[(*i)++] - '0');
            digits++;
        }
        CHECK(digits > 0 && v < 256, "an octal escape in $'...'");
        put_byte(out, (unsigned char)v);
        (*i)--;
    }
    CHECK(*i < n, "$'...' is closed");
}

/* shell_read: the word a POSIX shell (with bash's $'...') reads from s. */
static bytes shell_read(const char *s, size_t n)
{
    bytes out = {0};
    put(&out, "", 0);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '$' && i + 1 < n && s[i + 1] == '\'') {
            i += 2;
            ansi_c(s, n, &i, &out);
        } else if (s[i] == '\'') {
            for (i++; i < n && s[i] != '\''; i++)
                put_byte(&out, (unsigned char)s[i]);
            CHECK(i < n, "'...' is closed");
        } else if (s[i] == '"') {
            for (i++; i < n && s[i] != '"'; i++) {
                if (s[i] == '\\' && i + 1 < n && strchr("$`\"\\", s[i + 1]) != NULL)
                    i++;
                CHECK(s[i] != '$' && s[i] != '`', "nothing expands inside \"...\"");
                put_byte(&out, (unsigned char)s[i]);
            }
            CHECK(i < n, "\"...\" is closed");
        } else if (s[i] == '\\') {
            CHECK(++i < n, "a backslash escapes something");
            put_byte(&out, (unsigned char)s[i]);
        } else {
            CHECK(strchr(" \t\n|&;<>()$`\\\"*?[", s[i]) == NULL &&
                      !((s[i] == '#' || s[i] == '~') && i == 0),
                  "a byte outside quotes that a shell would read otherwise: %c", s[i]);
            put_byte(&out, (unsigned char)s[i]);
        }
    }
    return out;
}

static void check_shell(const char *name, size_t len)
{
    bytes q = {0};
    CAPTURE(q, cli_quote_name(f, name));
    for (size_t i = 0; i < q.n; i++)
        CHECK((unsigned char)q.p[i] >= 0x20 && q.p[i] != 0x7f, "no control byte in a quoted name");
    int quoted = q.n != len || memcmp(q.p, name, len) != 0;
    CHECK(len > 0 || quoted, "an empty name is quoted");
    bytes back = shell_read(q.p, q.n);
    CHECK(back.n == len && memcmp(back.p, name, len) == 0, "the shell reads the name back");
    free(back.p);
    free(q.p);
}

static locale_t c_locale, utf8_locale;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    c_locale = newlocale(LC_CTYPE_MASK, "C", (locale_t)0);
    utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (utf8_locale == (locale_t)0)
        utf8_locale = c_locale;
    CHECK(c_locale != (locale_t)0, "the C locale");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t len = strnlen((const char *)data + 1, size - 1);
    char *name = malloc(len + 1);
    CHECK(name != NULL, "malloc");
    memcpy(name, data + 1, len);
    name[len] = '\0';
    check_sha1sum(name, len);
    check_json(name, len);
    uselocale((data[0] & 1) ? utf8_locale : c_locale);
    check_shell(name, len);
    uselocale(LC_GLOBAL_LOCALE);
    free(name);
    return 0;
}
