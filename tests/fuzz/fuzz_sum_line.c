/*
 * fuzz_sum_line.c - libFuzzer target: the checksum files of `hashbatch
 * sum -c`, read by the CLI's own record reader (sum_lines.c: newline or,
 * with -z, NUL records, bounded length) and line parser (sum_parse.c:
 * "HEX  NAME", "HEX *NAME", "HEX NAME", the BSD "SHA1 (NAME) = HEX",
 * escaped names).
 *
 * Input: one flags byte (bit 0: -z records), then the checksum file.
 * Checks: no crash or sanitizer report; every record is at most
 * SUM_LINE_MAX bytes, NUL-terminated, without its delimiter; and every
 * line the parser accepts, with a name a file could have (not empty),
 * re-serialised by the sum formatter (sum_format_line) in each style
 * (plain, -b, --tag; escaped, and with -z unescaped) parses back, with a
 * fresh parser, to the same name and the same digest.
 * Must not: take the parser's word for what it read: the round trip is
 * judged against the first parse, byte for byte.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "sum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...) FUZZ_CHECK("fuzz_sum_line", cond, __VA_ARGS__)

/* hex_value: the digest a parsed line names (40 hex digits, any case). */
static void hex_value(const char *hex, hb_digest out)
{
    for (int i = 0; i < 20; i++) {
        char pair[3] = {hex[2 * i], hex[2 * i + 1], '\0'};
        out[i] = (uint8_t)strtoul(pair, NULL, 16);
    }
}

/* format: sum_format_line's bytes for (d, name) in style s, its end
 * removed (a newline, or the NUL with -z); *len set. Caller frees. */
static char *format(const hb_digest d, const char *name, const sum_style *s, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    CHECK(f != NULL, "open_memstream");
    sum_format_line(f, d, name, s);
    CHECK(fclose(f) == 0, "memstream");
    CHECK(n > 0 && buf[n - 1] == (s->zero ? '\0' : '\n'), "a line ends in its delimiter");
    buf[--n] = '\0';
    *len = n;
    return buf;
}

/* round_trip: the accepted (name, hex) through every style and back. */
static void round_trip(const char *name, const char *hex)
{
    hb_digest d;
    hex_value(hex, d);
    for (int style = 0; style < 6; style++) {
        sum_style s = {style % 3 == 2, style >= 3, style % 3 == 1};
        size_t len;
        char *line = format(d, name, &s, &len);
        if (!s.zero)
            CHECK(memchr(line, '\n', len) == NULL && memchr(line, '\r', len) == NULL,
                  "an escaped line holds no newline or CR");
        sum_parser p;
        sum_parser_init(&p);
        char *hex2 = NULL, *name2 = NULL;
        int ok = sum_parse_line(&p, line, len, &hex2, &name2);
        CHECK(ok, "style %d: the formatter's line for a parsed name parses: [%s]", style, line);
        CHECK(strcmp(name2, name) == 0, "style %d: same name back", style);
        for (int i = 0; i < SUM_HEX_LEN; i++)
            CHECK(tolower((unsigned char)hex2[i]) == tolower((unsigned char)hex[i]),
                  "style %d: same digest back", style);
        free(line);
    }
}

/* one_line: parses a record (the parser of this file keeps its state);
 * an accepted line goes round the formatter. */
static void one_line(sum_parser *p, const char *rec, size_t len)
{
    char *copy = malloc(len + 1);
    CHECK(copy != NULL, "malloc");
    memcpy(copy, rec, len + 1);
    char *hex = NULL, *name = NULL;
    if (sum_parse_line(p, copy, len, &hex, &name)) {
        CHECK(strlen(hex) == SUM_HEX_LEN, "a parsed digest has 40 digits");
        for (int i = 0; i < SUM_HEX_LEN; i++)
            CHECK(isxdigit((unsigned char)hex[i]), "a parsed digest is hex");
        /* The formatter writes the name as a C string: a name that holds
         * a NUL (cut short) is what sum -c hashes too; empty names are
         * no file's. */
        if (name[0] != '\0')
            round_trip(name, hex);
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int zero = data[0] & 1;
    FILE *f = fmemopen((void *)(data + 1), size - 1, "r");
    CHECK(f != NULL, "fmemopen");
    sum_lines l;
    CHECK(sum_lines_init(&l, f, zero) == 0, "sum_lines_init");
    sum_parser p;
    sum_parser_init(&p);
    sum_record k;
    while ((k = sum_lines_next(&l)) != SUM_REC_END) {
        CHECK(k != SUM_REC_ERROR, "a memory stream does not fail");
        if (k != SUM_REC_LINE)
            continue;
        CHECK(l.len > 0 && l.len <= SUM_LINE_MAX, "a record's length: %zu", l.len);
        CHECK(l.buf[l.len] == '\0', "a record is NUL-terminated");
        if (zero)
            CHECK(memchr(l.buf, '\0', l.len) == NULL, "a -z record holds no NUL");
        else
            CHECK(memchr(l.buf, '\n', l.len) == NULL, "a line holds no newline");
        CHECK(l.buf[0] != '#', "comments are skipped");
        one_line(&p, l.buf, l.len);
    }
    sum_lines_free(&l);
    fclose(f);
    return 0;
}
