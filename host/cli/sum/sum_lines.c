/*
 * sum_lines.c - the records of a checksum file for `hashbatch sum -c`, in
 * bounded memory: lines ending in newline (or, with -z, records ending
 * in NUL), with sha1sum's rules for what a line is: '#' lines are
 * comments, the end is removed (without -z also one carriage return
 * before it, as sha1sum does for CRLF files; with -z a name is every
 * byte up to the NUL, CR included), and empty lines are skipped.
 *
 * A record longer than SUM_LINE_MAX is not kept: the rest of it is read
 * and dropped, so an endless line (/dev/zero, a huge file) never grows
 * memory; a comment is dropped whatever its length.
 *
 * Owns: reading and delimiting records. Must not: parse a record, print,
 * or open the file (sum_check.c does).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "sum.h"

int sum_lines_init(sum_lines *l, FILE *f, int zero)
{
    l->f = f;
    l->delim = zero ? '\0' : '\n';
    l->strip_cr = !zero;
    l->len = 0;
    l->number = 0;
    /* the record, a CR before its end, and a NUL after it */
    l->buf = malloc(SUM_LINE_MAX + 2);
    return l->buf != NULL ? 0 : ENOMEM;
}

void sum_lines_free(sum_lines *l)
{
    free(l->buf);
    l->buf = NULL;
}

/* read_record: the bytes up to the delimiter (dropped) or the end, kept
 * up to KEEP; the rest is read and dropped. Returns the record's length,
 * KEEP + 1 for any longer one, or -1 when nothing was left. */
#define KEEP ((size_t)SUM_LINE_MAX + 1) /* a record and a CR before its end */
static ptrdiff_t read_record(sum_lines *l)
{
    FILE *f = l->f;
    size_t n = 0;
    int c;
    while ((c = getc_unlocked(f)) != EOF && c != l->delim) {
        if (n < KEEP)
            l->buf[n] = (char)c;
        if (n <= KEEP)
            n++;
    }
    if (c == EOF && n == 0)
        return -1;
    return (ptrdiff_t)n;
}

sum_record sum_lines_next(sum_lines *l)
{
    l->number++;
    ptrdiff_t got = read_record(l);
    if (got < 0)
        return ferror(l->f) ? SUM_REC_ERROR : SUM_REC_END;
    size_t n = (size_t)got;
    if (n > 0 && l->buf[0] == '#')
        return SUM_REC_SKIP;
    if (l->strip_cr && n > 0 && n <= KEEP && l->buf[n - 1] == '\r')
        n--;
    if (n > SUM_LINE_MAX)
        return SUM_REC_TOO_LONG;
    if (n == 0)
        return SUM_REC_SKIP;
    l->len = n;
    l->buf[n] = '\0';
    return SUM_REC_LINE;
}
