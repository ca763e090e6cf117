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
 * Owns: the parser and the tree. Must not: know what a plan or an index
 * holds (act/ and dedup/ do), print anything, or exit.
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

#endif /* HB_CLI_JSON_READ_H */
