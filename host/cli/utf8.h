/*
 * utf8.h - telling valid UTF-8 (utf8.c): the escaping of names, the JSON
 * reader, and the JSON writers that add a name's hex when it is not UTF-8
 * all ask the same question.
 *
 * Owns: what counts as valid (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF). Must not: escape, decode or print.
 */
#ifndef HB_CLI_UTF8_H
#define HB_CLI_UTF8_H

#include <stddef.h>

/* utf8_seq_len: the length of the valid UTF-8 sequence that starts s
 * (n > 0 bytes left), or 0 when none does. */
size_t utf8_seq_len(const unsigned char *s, size_t n);

/* utf8_valid: is the NUL-terminated s valid UTF-8 throughout? */
int utf8_valid(const char *s);

#endif /* HB_CLI_UTF8_H */
