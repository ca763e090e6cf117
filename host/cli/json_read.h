/*
 * json_read.h - reading JSON (RFC 8259) for the commands that take what
 * another run wrote: `link`/`remove` read a dedup plan (`dedup --json`),
 * `dedup --merge` reads scan indexes (JSON lines).
 *
 * A document is parsed whole into a tree of json_value nodes that one
 * arena owns; strings are decoded (escapes, \uXXXX with surrogate pairs)
 * into NUL-terminated UTF-8 with their length kept (a string may hold
 * U+0000). Numbers keep their text and, when they are integers that fit,
 * an int64/uint64 value.
 *
 * A big document (a plan of a million files) can also be read piece by
 * piece through a cursor: the caller enters the containers it expects and
 * asks for the values inside them one at a time, each parsed into a small
 * tree that the next request reuses.
 *
 * Owns: the parser, the tree and the cursor. Must not: know what a plan
 * or an index holds (act/ and dedup/ do), print anything, or exit.
 */
#ifndef HB_CLI_JSON_READ_H
#define HB_CLI_JSON_READ_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    JSON_NULL,
    JSON_FALSE,
    JSON_TRUE,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_kind;

typedef struct json_value json_value;

struct json_value {
    json_kind kind;
    /* JSON_STRING: the decoded bytes (NUL-terminated), len bytes.
     * JSON_NUMBER: the number's text as written. */
    const char *str;
    size_t len;
    int is_uint; /* JSON_NUMBER: an integer in 0..UINT64_MAX (u holds it) */
    uint64_t u;
    /* JSON_ARRAY: items[0..n); JSON_OBJECT: keys[i] (JSON_STRING) -> items[i]. */
    json_value **items;
    json_value **keys;
    size_t n;
};

typedef struct json_doc json_doc;

/* json_parse: parses text[0..len) as one JSON value (surrounding white
 * space allowed). Returns the document (free with json_free) or NULL;
 * then err (at least 160 bytes) says what was wrong and where ("line 3,
 * column 7: expected ',' or '}'"). Nesting deeper than 256 levels is an
 * error, so is anything after the value. */
json_doc *json_parse(const char *text, size_t len, char *err, size_t errcap);

/* json_root: the document's value. */
const json_value *json_root(const json_doc *d);

/* json_free: releases the document and every value in it (NULL: nothing). */
void json_free(json_doc *d);

/* json_get: the member named key of object v, or NULL (not an object,
 * or no such member; the last one when a key repeats). */
const json_value *json_get(const json_value *v, const char *key);

/* ---- reading piece by piece ------------------------------------------- */

typedef struct json_cursor json_cursor;

/* A source of text for a cursor: up to cap bytes into buf; returns their
 * count, 0 at the end, or -1 with errno set (EINTR: called again). */
typedef long (*json_read_fn)(void *ctx, char *buf, size_t cap);

/* json_cursor_new: a cursor over one document: text[0..len) (read NULL;
 * text must outlive the cursor), or what read(ctx, ...) gives (text
 * NULL), held a window at a time. err (at least 160 bytes) receives the
 * first error: the whole-document parser's message and place ("line 3,
 * column 7: expected ',' or '}'"), or a read error's strerror. Returns
 * NULL when out of memory (err says so). */
json_cursor *json_cursor_new(const char *text, size_t len, json_read_fn read, void *ctx, char *err,
                             size_t errcap);

/* json_cursor_free: releases the cursor and its last key and value. */
void json_cursor_free(json_cursor *c);

/* json_cursor_enter: when the next value (after white space) is of kind
 * (JSON_OBJECT or JSON_ARRAY), enters it: returns 1. Returns 0, with
 * nothing read, when it is anything else (json_cursor_value then reads
 * it, or reports what is wrong in it), -1 on an error. */
int json_cursor_enter(json_cursor *c, json_kind kind);

/* json_cursor_next: in the container entered last: 1 when a member or an
 * item follows (for an object, its name is read: *key (NUL-terminated,
 * valid until the next call) and *key_len, either may be NULL; its value
 * is next), 0 when the container ends (it is left), -1 on an error. */
int json_cursor_next(json_cursor *c, const char **key, size_t *key_len);

/* json_cursor_value: parses the next value whole (an item, a member's
 * value, or the document when nothing was entered). Returns it, valid
 * until the next call on c, or NULL on an error. */
const json_value *json_cursor_value(json_cursor *c);

/* json_cursor_end: after the outermost container was left (or its value
 * read): only white space until the end? 0, else -1 with the error. */
int json_cursor_end(json_cursor *c);

/* json_cursor_finish: reads the rest of the document for its syntax
 * alone: every container still open to its end, then json_cursor_end.
 * Call it between items or members (a caller that found something wrong
 * in a value it read, to report a syntax error further on first, as
 * json_parse would). Returns 0, or -1 with the error. */
int json_cursor_finish(json_cursor *c);

#endif /* HB_CLI_JSON_READ_H */
