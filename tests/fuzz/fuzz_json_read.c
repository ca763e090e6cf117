/*
 * fuzz_json_read.c - libFuzzer target: the CLI's JSON reader
 * (json_read.c), which reads dedup plans and scan indexes.
 *
 * Input: the document, as is.
 * Checks: no crash or sanitizer report; a rejected document leaves an
 * error message with its place ("line L, column C: ..."); every accepted
 * string is NUL-terminated at its length; an accepted document, written
 * back out canonically (every string escaped byte by byte), parses again
 * to the same tree (kinds, numbers' text, strings' bytes, members in
 * order), and writing that tree gives the same bytes.
 * Must not: take the reader's word for what it read: the second parse is
 * judged against the first, node by node.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "json_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...) FUZZ_CHECK("fuzz_json_read", cond, __VA_ARGS__)

/* put_string: s[0..n) as a JSON string, bytes >= 0x80 raw, the rest of
 * what is not printable ASCII as \u00XX. */
static void put_string(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* put_value: v written out canonically. */
static void put_value(FILE *f, const json_value *v)
{
    switch (v->kind) {
    case JSON_NULL:
        fputs("null", f);
        break;
    case JSON_FALSE:
        fputs("false", f);
        break;
    case JSON_TRUE:
        fputs("true", f);
        break;
    case JSON_NUMBER:
        fwrite(v->str, 1, v->len, f);
        break;
    case JSON_STRING:
        CHECK(v->str[v->len] == '\0', "a string is NUL-terminated at its length");
        put_string(f, v->str, v->len);
        break;
    case JSON_ARRAY:
    case JSON_OBJECT:
        fputc(v->kind == JSON_ARRAY ? '[' : '{', f);
        for (size_t i = 0; i < v->n; i++) {
            if (i)
                fputc(',', f);
            if (v->kind == JSON_OBJECT) {
                CHECK(v->keys[i]->kind == JSON_STRING, "a key is a string");
                put_string(f, v->keys[i]->str, v->keys[i]->len);
                fputc(':', f);
            }
            put_value(f, v->items[i]);
        }
        fputc(v->kind == JSON_ARRAY ? ']' : '}', f);
        break;
    }
}

/* same: are trees a and b equal, node by node? */
static int same(const json_value *a, const json_value *b)
{
    if (a->kind != b->kind || a->n != b->n)
        return 0;
    if (a->kind == JSON_NUMBER || a->kind == JSON_STRING) {
        if (a->len != b->len || memcmp(a->str, b->str, a->len) != 0)
            return 0;
        return a->is_uint == b->is_uint && a->u == b->u;
    }
    for (size_t i = 0; i < a->n; i++) {
        if (a->kind == JSON_OBJECT && !same(a->keys[i], b->keys[i]))
            return 0;
        if (!same(a->items[i], b->items[i]))
            return 0;
    }
    return 1;
}

/* serialise: v's canonical text; *n set. Caller frees. */
static char *serialise(const json_value *v, size_t *n)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, n);
    CHECK(f != NULL, "open_memstream");
    put_value(f, v);
    CHECK(fclose(f) == 0, "memstream");
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    json_doc *d = json_parse((const char *)data, size, err, sizeof err);
    if (d == NULL) {
        CHECK(strncmp(err, "line ", 5) == 0 && strstr(err, ", column ") != NULL,
              "a rejection says where: '%s'", err);
        return 0;
    }
    size_t n1, n2;
    char *t1 = serialise(json_root(d), &n1);
    json_doc *d2 = json_parse(t1, n1, err, sizeof err);
    CHECK(d2 != NULL, "the canonical text parses again: %s", err);
    CHECK(same(json_root(d), json_root(d2)), "the second parse gives the same tree");
    char *t2 = serialise(json_root(d2), &n2);
    CHECK(n1 == n2 && memcmp(t1, t2, n1) == 0, "writing the tree again gives the same bytes");
    free(t1);
    free(t2);
    json_free(d2);
    json_free(d);
    return 0;
}
