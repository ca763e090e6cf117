/*
 * sum.h - internal interfaces of `hashbatch sum`: sha1sum's line formats
 * (sum_format.c), the list of files to hash (sum_list.c: arguments, and
 * trees under -r), hashing a list in order through a files job
 * (sum_run.c), and checking sums (sum_check.c).
 *
 * Owns: those interfaces. Must not: hold policy; each .c file does.
 */
#ifndef HB_CLI_SUM_H
#define HB_CLI_SUM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hashbatch.h"
#include "progress.h"

/* ---- sum_format.c ------------------------------------------------------ */

/* How digest lines look. */
typedef struct {
    int tag;    /* --tag: "SHA1 (NAME) = HEX" */
    int zero;   /* -z: lines end in NUL, names are never escaped */
    int binary; /* -b: "HEX *NAME" */
} sum_style;

/* sum_needs_escape: does name hold a backslash, newline or CR, which
 * sha1sum escapes (and marks with a leading backslash)? */
int sum_needs_escape(const char *name);

/* sum_put_name: name, with \ newline CR as \\ \n \r when escape. */
void sum_put_name(FILE *f, const char *name, int escape);

/* sum_format_line: sha1sum's line for digest d of name, in style s. */
void sum_format_line(FILE *f, const hb_digest d, const char *name, const sum_style *s);

/* sum_hex: d as 40 lowercase hex digits and a NUL. */
void sum_hex(char out[41], const hb_digest d);

/* ---- sum_list.c --------------------------------------------------------- */

/* Names to hash, in output order; they own their strings. */
typedef struct {
    char **names;
    size_t n, cap;
    uint64_t bytes; /* sizes known from the walk (for progress) */
    int skipped;    /* some tree entry was reported and skipped */
} sum_list;

/* sum_list_add: appends a copy of name. Returns 0 or ENOMEM. */
int sum_list_add(sum_list *l, const char *name, uint64_t size);

/* sum_list_build: the names for the arguments: as given, or with
 * recurse each directory argument replaced by its regular files in byte
 * order of their paths (`find DIR -type f | LC_ALL=C sort`); follow:
 * symbolic links below the arguments are followed too. Special files,
 * loops and unreadable directories of the walk are reported on stderr
 * (l->skipped set). Returns 0 or ENOMEM (reported). */
int sum_list_build(sum_list *l, char *const *args, size_t n, int recurse, int follow,
                   progress *meter);

/* sum_list_free: releases l. */
void sum_list_free(sum_list *l);

/* ---- sum_run.c ---------------------------------------------------------- */

/* Called once per name, in list order: r is its result. */
typedef void (*sum_done_fn)(void *ctx, size_t index, const hb_file_result *r);

/* Hashing names through files jobs, in order. */
typedef struct {
    hb_engine *engine;
    hb_files_options files; /* io threads, sizes (on_file is the runner's) */
    progress *meter;        /* NULL: none */
    int stdout_tty;         /* erase the meter before stdout lines */
    hb_files_stats total;   /* summed over the run's jobs */
} sum_runner;

/* sum_run: hashes names[0, n) ("-": standard input, read once per "-"
 * as sha1sum does), calling done for each in order. Returns 0, or
 * CLI_EXIT_FAILURE when a job could not be started (reported). */
int sum_run(sum_runner *r, char *const *names, size_t n, sum_done_fn done, void *ctx);

/* sum_report_failure: the stderr line for a file that could not be
 * hashed: "hashbatch: NAME: cause" (sha1sum's wording for errno causes). */
void sum_report_failure(const char *name, const hb_file_result *r);

/* ---- sum_check.c -------------------------------------------------------- */

/* What -c does besides checking. */
typedef struct {
    int quiet;          /* --quiet: no OK lines */
    int status;         /* --status: no output lines at all */
    int strict;         /* --strict: bad lines fail the check */
    int warn;           /* -w: warn about each bad line */
    int ignore_missing; /* --ignore-missing */
    int zero;           /* -z: NUL-terminated records (an extension) */
} sum_check_opts;

/* sum_check_file: checks the sums listed in file ("-": standard input),
 * printing sha1sum -c's lines. Returns 1 when every listed file matched,
 * 0 when not (or the file could not be read), -1 when the run failed. */
int sum_check_file(sum_runner *r, const char *file, const sum_check_opts *o);

#endif /* HB_CLI_SUM_H */
