/*
 * json_read.c - a strict RFC 8259 reader: one document parsed whole into
 * a tree of json_value nodes held by one arena (json_read.h).
 *
 * Recursive descent, nesting bounded (JSON_MAX_DEPTH), strings checked to
 * be UTF-8 and decoded (escapes, surrogate pairs; a lone surrogate is an
 * error since it has no UTF-8 form), numbers checked against the grammar.
 * Errors say what was expected, with the line and column (columns count
 * bytes, from 1).
 *
 * A cursor (json_cursor_*) reads one document piece by piece: the caller
 * walks the outer containers, and each value it asks for is parsed whole
 * into a small tree that the next request reuses, so a big document
 * costs a window of its text and one value's tree at a time. The text
 * comes whole or, through a read function, in pieces: before a value is
 * parsed its extent is found (brackets and strings matched) and read in
 * full, so the parser itself never runs out of buffered text early, and
 * its messages and places are the whole-document parser's.
 *
 * Owns: the parser, the tree and its arena, the cursor and its window.
 * Must not: know what a plan or an index holds, print anything, or exit.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "utf8.h"

#define JSON_MAX_DEPTH 256
#define ARENA_BLOCK ((size_t)64 << 10)

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    max_align_t data[]; /* cap bytes */
} arena_block;

struct json_doc {
    arena_block *blocks;
    json_value *root;
};

typedef struct {
    const char *s;
    size_t len, pos;
    json_doc *doc;
    char *err;
    size_t errcap;
    int failed;
    size_t line0, col0; /* the place of s[0] in the document (a cursor's window) */
} parser;

/* arena_alloc: n bytes (aligned) owned by d, or NULL. */
static void *arena_alloc(json_doc *d, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    arena_block *b = d->blocks;
    if (b == NULL || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (b == NULL)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = d->blocks;
        d->blocks = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    return p;
}

/* fail: records the first error at the current position; returns NULL. */
static void *fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void *fail(parser *p, const char *fmt, ...)
{
    if (p->failed)
        return NULL;
    p->failed = 1;
    size_t line = p->line0, col = p->col0;
    for (size_t i = 0; i < p->pos && i < p->len; i++) {
        if (p->s[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    if (p->err == NULL || p->errcap == 0)
        return NULL;
    int k = snprintf(p->err, p->errcap, "line %zu, column %zu: ", line, col);
    if (k > 0 && (size_t)k < p->errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + k, p->errcap - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static void *no_memory(parser *p)
{
    return fail(p, "%s", strerror(ENOMEM));
}

/* skip_ws: past JSON white space (space, tab, newline, carriage return). */
static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

/* peek: the next byte, or -1 at the end. */
static int peek(const parser *p)
{
    return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

/* describe: the byte at the position, for messages. */
static const char *describe(const parser *p, char *buf, size_t cap)
{
    int c = peek(p);
    if (c < 0)
        return "the end of the input";
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02x", (unsigned)c);
    return buf;
}

static json_value *new_value(parser *p, json_kind kind)
{
    json_value *v = arena_alloc(p->doc, sizeof *v);
    if (v == NULL)
        return no_memory(p);
    memset(v, 0, sizeof *v);
    v->kind = kind;
    return v;
}

/* put_utf8: writes code point cp at out; returns its length. */
static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* hex4: the four hex digits at the position (past "\u"), or -1. */
static long hex4(parser *p)
{
    if (p->len - p->pos < 4)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos + (size_t)i];
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    p->pos += 4;
    return v;
}

/* unicode_escape: the code point of "\uXXXX" (a pair for a surrogate)
 * with the position past "\u"; -1 when invalid (reported). */
static long unicode_escape(parser *p)
{
    size_t at = p->pos - 2;
    long hi = hex4(p);
    if (hi < 0) {
        p->pos = at;
        return fail(p, "invalid \\u escape: expected four hex digits"), -1;
    }
    if (hi >= 0xdc00 && hi <= 0xdfff) {
        p->pos = at;
        return fail(p, "invalid \\u escape: a lone low surrogate"), -1;
    }
    if (hi < 0xd800 || hi > 0xdbff)
        return hi;
    long lo = -1;
    if (p->len - p->pos >= 2 && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
        p->pos += 2;
        lo = hex4(p);
    }
    if (lo < 0xdc00 || lo > 0xdfff) {
        p->pos = at;
        return fail(p, "invalid \\u escape: a high surrogate without its low half"), -1;
    }
    return 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
}

/* escape: one escape with the position past the backslash; writes its
 * bytes at out and returns their count, or 0 when invalid (reported). */
static size_t escape(parser *p, char *out)
{
    int c = peek(p);
    p->pos++;
    switch (c) {
    case '"':
    case '\\':
    case '/':
        out[0] = (char)c;
        return 1;
    case 'b':
        out[0] = '\b';
        return 1;
    case 'f':
        out[0] = '\f';
        return 1;
    case 'n':
        out[0] = '\n';
        return 1;
    case 'r':
        out[0] = '\r';
        return 1;
    case 't':
        out[0] = '\t';
        return 1;
    case 'u': {
        long cp = unicode_escape(p);
        return cp < 0 ? 0 : put_utf8(out, (unsigned)cp);
    }
    default:
        p->pos -= 2;
        fail(p, "invalid escape in a string");
        return 0;
    }
}

/* parse_string: a string with the position at its opening quote. */
static json_value *parse_string(parser *p)
{
    size_t start = ++p->pos, end = start;
    /* The decoded text is never longer than the raw one. */
    while (end < p->len && p->s[end] != '"') {
        if (p->s[end] == '\\' && end + 1 < p->len)
            end++;
        end++;
    }
    if (end >= p->len) {
        p->pos = start - 1;
        return fail(p, "a string that is never closed");
    }
    json_value *v = new_value(p, JSON_STRING);
    char *out = v ? arena_alloc(p->doc, end - start + 1) : NULL;
    if (out == NULL)
        return no_memory(p);
    size_t n = 0;
    while (p->s[p->pos] != '"') {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c < 0x20)
            return fail(p, "a control character (0x%02x) in a string: it must be escaped", c);
        if (c == '\\') {
            p->pos++;
            size_t k = escape(p, out + n);
            if (k == 0)
                return NULL;
            n += k;
            continue;
        }
        size_t k = utf8_seq_len((const unsigned char *)p->s + p->pos, p->len - p->pos);
        if (k == 0)
            return fail(p, "a string that is not valid UTF-8");
        memcpy(out + n, p->s + p->pos, k);
        n += k;
        p->pos += k;
    }
    p->pos++;
    out[n] = '\0';
    v->str = out;
    v->len = n;
    return v;
}

/* digits: past one or more decimal digits; 0 when there is none. */
static int digits(parser *p)
{
    size_t at = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
    return p->pos > at;
}

/* parse_number: a number, by RFC 8259's grammar. */
static json_value *parse_number(parser *p)
{
    size_t start = p->pos;
    int neg = peek(p) == '-', integer = 1;
    if (neg)
        p->pos++;
    if (peek(p) == '0')
        p->pos++;
    else if (!digits(p))
        return fail(p, "invalid number: expected a digit");
    if (peek(p) == '.') {
        p->pos++;
        integer = 0;
        if (!digits(p))
            return fail(p, "invalid number: expected a digit after '.'");
    }
    if (peek(p) == 'e' || peek(p) == 'E') {
        p->pos++;
        integer = 0;
        if (peek(p) == '+' || peek(p) == '-')
            p->pos++;
        if (!digits(p))
            return fail(p, "invalid number: expected a digit in the exponent");
    }
    json_value *v = new_value(p, JSON_NUMBER);
    char *text = v ? arena_alloc(p->doc, p->pos - start + 1) : NULL;
    if (text == NULL)
        return no_memory(p);
    memcpy(text, p->s + start, p->pos - start);
    text[p->pos - start] = '\0';
    v->str = text;
    v->len = p->pos - start;
    if (integer && !neg) {
        uint64_t u = 0;
        int fits = 1;
        for (size_t i = 0; i < v->len; i++) {
            unsigned d = (unsigned)(text[i] - '0');
            if (u > (UINT64_MAX - d) / 10)
                fits = 0;
            u = u * 10 + d;
        }
        v->is_uint = fits;
        v->u = fits ? u : 0;
    }
    return v;
}

/* literal: true, false or null. */
static json_value *parse_literal(parser *p)
{
    static const struct {
        const char *word;
        json_kind kind;
    } words[] = {{"true", JSON_TRUE}, {"false", JSON_FALSE}, {"null", JSON_NULL}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if (p->len - p->pos >= n && memcmp(p->s + p->pos, words[i].word, n) == 0) {
            p->pos += n;
            return new_value(p, words[i].kind);
        }
    }
    char b[16];
    return fail(p, "expected a value, found %s", describe(p, b, sizeof b));
}

/* A growing list of children while a container is parsed. */
typedef struct {
    json_value **items, **keys;
    size_t n, cap;
} child_list;

static int child_push(child_list *c, json_value *key, json_value *item)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        json_value **items = realloc(c->items, cap * sizeof *items);
        if (items == NULL)
            return -1;
        c->items = items;
        json_value **keys = realloc(c->keys, cap * sizeof *keys);
        if (keys == NULL)
            return -1;
        c->keys = keys;
        c->cap = cap;
    }
    c->keys[c->n] = key;
    c->items[c->n++] = item;
    return 0;
}

/* child_store: moves the list into v (arena copies); frees the list. */
static json_value *child_store(parser *p, json_value *v, child_list *c, int with_keys)
{
    v->n = c->n;
    if (c->n) {
        v->items = arena_alloc(p->doc, c->n * sizeof *v->items);
        v->keys = with_keys ? arena_alloc(p->doc, c->n * sizeof *v->keys) : NULL;
        if (v->items == NULL || (with_keys && v->keys == NULL))
            v = no_memory(p);
        else {
            memcpy(v->items, c->items, c->n * sizeof *v->items);
            if (with_keys)
                memcpy(v->keys, c->keys, c->n * sizeof *v->keys);
        }
    }
    free(c->items);
    free(c->keys);
    return v;
}

static json_value *parse_value(parser *p, int depth);

/* expect_more: after a member or item: ',' (1), the closer (0), else -1. */
static int expect_more(parser *p, char closer)
{
    skip_ws(p);
    if (peek(p) == ',') {
        p->pos++;
        return 1;
    }
    if (peek(p) == closer) {
        p->pos++;
        return 0;
    }
    char b[16];
    fail(p, "expected ',' or '%c', found %s", closer, describe(p, b, sizeof b));
    return -1;
}

/* parse_container: an array or object with the position at its opener. */
static json_value *parse_container(parser *p, int depth)
{
    int object = peek(p) == '{';
    char closer = object ? '}' : ']';
    if (depth >= JSON_MAX_DEPTH)
        return fail(p, "nested deeper than %d levels", JSON_MAX_DEPTH);
    json_value *v = new_value(p, object ? JSON_OBJECT : JSON_ARRAY);
    if (v == NULL)
        return NULL;
    p->pos++;
    child_list c = {NULL, NULL, 0, 0};
    skip_ws(p);
    int more = 1;
    if (peek(p) == closer) {
        p->pos++;
        more = 0;
    }
    while (more > 0) {
        json_value *key = NULL;
        skip_ws(p);
        if (object) {
            char b[16];
            if (peek(p) != '"') {
                fail(p, "expected a member name (a string), found %s", describe(p, b, sizeof b));
                break;
            }
            if ((key = parse_string(p)) == NULL)
                break;
            skip_ws(p);
            if (peek(p) != ':') {
                fail(p, "expected ':', found %s", describe(p, b, sizeof b));
                break;
            }
            p->pos++;
        }
        json_value *item = parse_value(p, depth + 1);
        if (item == NULL)
            break;
        if (child_push(&c, key, item) != 0) {
            no_memory(p);
            break;
        }
        more = expect_more(p, closer);
    }
    if (more != 0) {
        free(c.items);
        free(c.keys);
        return NULL;
    }
    return child_store(p, v, &c, object);
}

/* parse_value: any value, after white space. */
static json_value *parse_value(parser *p, int depth)
{
    skip_ws(p);
    int c = peek(p);
    if (c == '{' || c == '[')
        return parse_container(p, depth);
    if (c == '"')
        return parse_string(p);
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(p);
    return parse_literal(p);
}

json_doc *json_parse(const char *text, size_t len, char *err, size_t errcap)
{
    if (err && errcap)
        err[0] = '\0';
    json_doc *d = calloc(1, sizeof *d);
    if (d == NULL) {
        if (err && errcap)
            snprintf(err, errcap, "%s", strerror(ENOMEM));
        return NULL;
    }
    parser p = {text, len, 0, d, err, errcap, 0, 1, 1};
    d->root = parse_value(&p, 0);
    if (d->root != NULL) {
        skip_ws(&p);
        if (p.pos < len) {
            char b[16];
            fail(&p, "unexpected %s after the value", describe(&p, b, sizeof b));
        }
    }
    if (p.failed || d->root == NULL) {
        json_free(d);
        return NULL;
    }
    return d;
}

const json_value *json_root(const json_doc *d)
{
    return d ? d->root : NULL;
}

void json_free(json_doc *d)
{
    if (d == NULL)
        return;
    for (arena_block *b = d->blocks, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    free(d);
}

const json_value *json_get(const json_value *v, const char *key)
{
    if (v == NULL || v->kind != JSON_OBJECT)
        return NULL;
    size_t klen = strlen(key);
    for (size_t i = v->n; i-- > 0;) {
        const json_value *k = v->keys[i];
        if (k->len == klen && memcmp(k->str, key, klen) == 0)
            return v->items[i];
    }
    return NULL;
}

/* ---- the cursor --------------------------------------------------------- */

#define WINDOW_START ((size_t)256 << 10)

/* A container the cursor is in. */
typedef struct {
    char closer;
    int first; /* no member or item read yet */
} open_container;

struct json_cursor {
    parser p;          /* p.s[0..p.len): the window; p.doc: keys or values */
    json_read_fn read; /* NULL: the text is whole */
    void *ctx;
    char *buf; /* the window's storage when reading */
    size_t cap;
    int eof;         /* nothing more to read */
    json_doc keys;   /* the last member name */
    json_doc values; /* the last value */
    open_container stack[JSON_MAX_DEPTH];
    size_t depth;
};

/* arena_reset: empties d, keeping one standard block for reuse. */
static void arena_reset(json_doc *d)
{
    arena_block *keep = NULL;
    for (arena_block *b = d->blocks, *next; b != NULL; b = next) {
        next = b->next;
        if (keep == NULL && b->cap == ARENA_BLOCK) {
            keep = b;
            continue;
        }
        free(b);
    }
    if (keep != NULL) {
        keep->used = 0;
        keep->next = NULL;
    }
    d->blocks = keep;
    d->root = NULL;
}

/* read_failed: a read error, said without a place. */
static int read_failed(json_cursor *c, int e)
{
    c->p.failed = 1;
    c->eof = 1;
    if (c->p.err != NULL && c->p.errcap > 0)
        snprintf(c->p.err, c->p.errcap, "%s", strerror(e));
    return -1;
}

/* refill: drops the text before the position (its place carried into
 * line0/col0) and reads more after what is buffered, growing the window
 * when it is full. Returns 0 (c->eof set at the end), or -1. */
static int refill(json_cursor *c)
{
    parser *p = &c->p;
    if (c->read == NULL || c->eof) {
        c->eof = 1;
        return 0;
    }
    for (size_t i = 0; i < p->pos; i++) {
        if (c->buf[i] == '\n') {
            p->line0++;
            p->col0 = 1;
        } else {
            p->col0++;
        }
    }
    if (p->pos > 0)
        memmove(c->buf, c->buf + p->pos, p->len - p->pos);
    p->len -= p->pos;
    p->pos = 0;
    if (p->len == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : WINDOW_START;
        char *b = cap > c->cap ? realloc(c->buf, cap) : NULL;
        if (b == NULL)
            return read_failed(c, ENOMEM);
        c->buf = b;
        c->cap = cap;
    }
    p->s = c->buf;
    for (;;) {
        long k = c->read(c->ctx, c->buf + p->len, c->cap - p->len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return read_failed(c, errno);
        if (k == 0)
            c->eof = 1;
        p->len += (size_t)k;
        return 0;
    }
}

/* fill_past_ws: past white space, with a byte buffered after it unless
 * the input ends. Returns 0 or -1. */
static int fill_past_ws(json_cursor *c)
{
    for (;;) {
        skip_ws(&c->p);
        if (c->p.pos < c->p.len || c->eof)
            return c->p.failed ? -1 : 0;
        if (refill(c) != 0)
            return -1;
    }
}

/* scalar_byte: can byte ch be part of a number or a literal? */
static int scalar_byte(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           ch == '-' || ch == '+' || ch == '.';
}

/* fill_value: buffers the whole of the value at the position (after
 * white space), and a byte after a number or literal, unless the input
 * ends first. Its extent: brackets matched outside strings (any opener
 * with any closer: the parser judges them), a string to its closing
 * quote, a scalar to its first byte that cannot be in one. */
static int fill_value(json_cursor *c)
{
    if (fill_past_ws(c) != 0)
        return -1;
    parser *p = &c->p;
    size_t i = 0, depth = 0; /* i: from p->pos, which a refill moves */
    int in_string = 0, escaped = 0, scalar = -1;
    for (;;) {
        for (; p->pos + i < p->len; i++) {
            char ch = p->s[p->pos + i];
            if (scalar < 0)
                scalar = ch != '"' && ch != '{' && ch != '[';
            if (scalar) {
                if (!scalar_byte(ch))
                    return 0;
            } else if (in_string) {
                if (escaped)
                    escaped = 0;
                else if (ch == '\\')
                    escaped = 1;
                else if (ch == '"') {
                    in_string = 0;
                    if (depth == 0)
                        return 0;
                }
            } else if (ch == '"') {
                in_string = 1;
            } else if (ch == '{' || ch == '[') {
                depth++;
            } else if ((ch == '}' || ch == ']') && --depth == 0) {
                return 0;
            }
        }
        if (c->eof)
            return 0;
        if (refill(c) != 0)
            return -1;
    }
}

/* use_doc: d, emptied, is where the next parse writes. */
static void use_doc(json_cursor *c, json_doc *d)
{
    arena_reset(d);
    c->p.doc = d;
}

json_cursor *json_cursor_new(const char *text, size_t len, json_read_fn read, void *ctx, char *err,
                             size_t errcap)
{
    if (err && errcap)
        err[0] = '\0';
    json_cursor *c = calloc(1, sizeof *c);
    if (c == NULL) {
        if (err && errcap)
            snprintf(err, errcap, "%s", strerror(ENOMEM));
        return NULL;
    }
    c->p = (parser){read ? "" : text, read ? 0 : len, 0, &c->values, err, errcap, 0, 1, 1};
    c->read = read;
    c->ctx = ctx;
    c->eof = read == NULL;
    return c;
}

void json_cursor_free(json_cursor *c)
{
    if (c == NULL)
        return;
    arena_reset(&c->keys);
    arena_reset(&c->values);
    free(c->keys.blocks);
    free(c->values.blocks);
    free(c->buf);
    free(c);
}

int json_cursor_enter(json_cursor *c, json_kind kind)
{
    if (c->p.failed || fill_past_ws(c) != 0)
        return -1;
    char opener = kind == JSON_OBJECT ? '{' : kind == JSON_ARRAY ? '[' : 0;
    if (opener == 0 || peek(&c->p) != opener)
        return 0;
    if (c->depth >= JSON_MAX_DEPTH)
        return fail(&c->p, "nested deeper than %d levels", JSON_MAX_DEPTH), -1;
    c->stack[c->depth++] = (open_container){opener == '{' ? '}' : ']', 1};
    c->p.pos++;
    return 1;
}

/* member_name: a member's name and its ':' (the position at the name). */
static int member_name(json_cursor *c, const char **key, size_t *key_len)
{
    char b[16];
    if (peek(&c->p) != '"')
        return fail(&c->p, "expected a member name (a string), found %s",
                    describe(&c->p, b, sizeof b)),
               -1;
    if (fill_value(c) != 0)
        return -1;
    use_doc(c, &c->keys);
    json_value *k = parse_string(&c->p);
    if (k == NULL || fill_past_ws(c) != 0)
        return -1;
    if (peek(&c->p) != ':')
        return fail(&c->p, "expected ':', found %s", describe(&c->p, b, sizeof b)), -1;
    c->p.pos++;
    if (key != NULL)
        *key = k->str;
    if (key_len != NULL)
        *key_len = k->len;
    return 0;
}

int json_cursor_next(json_cursor *c, const char **key, size_t *key_len)
{
    if (c->p.failed || c->depth == 0 || fill_past_ws(c) != 0)
        return -1;
    open_container *top = &c->stack[c->depth - 1];
    int at_closer = peek(&c->p) == top->closer;
    if (!top->first && !at_closer) {
        char b[16];
        if (peek(&c->p) != ',')
            return fail(&c->p, "expected ',' or '%c', found %s", top->closer,
                        describe(&c->p, b, sizeof b)),
                   -1;
        c->p.pos++;
        if (fill_past_ws(c) != 0)
            return -1;
    } else if (at_closer) {
        c->p.pos++;
        c->depth--;
        return 0;
    }
    top->first = 0;
    if (top->closer == '}')
        return member_name(c, key, key_len) == 0 ? 1 : -1;
    return 1;
}

const json_value *json_cursor_value(json_cursor *c)
{
    if (c->p.failed || fill_value(c) != 0)
        return NULL;
    use_doc(c, &c->values);
    json_value *v = parse_value(&c->p, (int)c->depth);
    return c->p.failed ? NULL : v;
}

int json_cursor_end(json_cursor *c)
{
    if (c->p.failed || fill_past_ws(c) != 0)
        return -1;
    if (c->depth > 0 || c->p.pos < c->p.len) {
        char b[16];
        return fail(&c->p, "unexpected %s after the value", describe(&c->p, b, sizeof b)), -1;
    }
    return 0;
}

int json_cursor_finish(json_cursor *c)
{
    while (c->depth > 0) {
        int k;
        while ((k = json_cursor_next(c, NULL, NULL)) > 0)
            if (json_cursor_value(c) == NULL)
                return -1;
        if (k < 0)
            return -1;
    }
    return json_cursor_end(c);
}
