/*
 * sum.h - internal interfaces of `hashbatch sum`: sha1sum's line formats
 * (sum_format.c), the list of files to hash (sum_list.c: arguments, and
 * trees under -r), hashing a list in order through a files job
 * (sum_run.c), reading checksum files (sum_lines.c) and their lines
 * (sum_parse.c), and checking sums (sum_check.c).
 *
 * Owns: those interfaces. Must not: hold policy; each .c file does.
 */
#ifndef HB_CLI_SUM_H
#define HB_CLI_SUM_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hashbatch.h"
#include "places.h"
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

/* ---- sum_parse.c ------------------------------------------------------- */

#define SUM_HEX_LEN 40 /* a SHA-1 in hex */

/* State of the parser that spans the lines of one checksum file. */
typedef struct {
    int bsd_reversed; /* -1 unknown, 0 "HEX  NAME" lines, 1 "HEX NAME" lines */
} sum_parser;

/* sum_parser_init: a parser for a new checksum file. */
void sum_parser_init(sum_parser *p);

/* sum_parse_line: splits the line s[0, len) (s[len] is NUL, its end
 * already removed) in place, as sha1sum -c does, into *hex (SUM_HEX_LEN
 * hex digits, either case, NUL-terminated) and *name (NUL-terminated,
 * unescaped when the line starts with a backslash). Returns 1 for a well
 * formed line, else 0 (*hex and *name then mean nothing). */
int sum_parse_line(sum_parser *p, char *s, size_t len, char **hex, char **name);

/* ---- sum_lines.c ------------------------------------------------------- */

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* The longest checksum line read: a name is at most PATH_MAX bytes, twice
 * that escaped, and the digest and the marks are short. */
#define SUM_LINE_MAX (4 * PATH_MAX)

/* What sum_lines_next found. */
typedef enum {
    SUM_REC_LINE,     /* a line to parse: buf[0, len), NUL at buf[len] */
    SUM_REC_SKIP,     /* a comment or an empty line */
    SUM_REC_TOO_LONG, /* a line past SUM_LINE_MAX bytes: read and dropped */
    SUM_REC_END,      /* no more lines */
    SUM_REC_ERROR     /* a read failed (ferror is set; errno may tell) */
} sum_record;

/* A checksum file's records, read in bounded memory. */
typedef struct {
    FILE *f;
    int delim;        /* '\n', or NUL with -z */
    int strip_cr;     /* drop one CR before the end (not with -z) */
    char *buf;        /* SUM_LINE_MAX + 2 bytes */
    size_t len;       /* SUM_REC_LINE: the line's length */
    uintmax_t number; /* the line number of the last record (1 first) */
} sum_lines;

/* sum_lines_init: reads records of f (not owned), NUL-terminated when
 * zero. Returns 0 or ENOMEM. */
int sum_lines_init(sum_lines *l, FILE *f, int zero);

/* sum_lines_next: the next record (see sum_record). */
sum_record sum_lines_next(sum_lines *l);

/* sum_lines_free: releases l's buffer (not the file). */
void sum_lines_free(sum_lines *l);

/* ---- sum_list.c --------------------------------------------------------- */

/* Names to hash, in output order; they own their strings. */
typedef struct {
    char **names;
    int *tree;      /* per name: the index in trees of the tree it was
                       found in (read beneath its folder, no symbolic link
                       followed), or -1: a name as given (read as named,
                       following links, as sha1sum does) */
    uint64_t *dev;  /* per name: its device as the walk or a stat saw it
                       (0: not known), for the read order */
    size_t n, cap;
    places_root *trees; /* the folders walked, as the walk saw them (their
                           paths owned); NULL path: not one */
    size_t ntrees;
    uint64_t bytes; /* sizes known from the walk (for progress) */
    int skipped;    /* some tree entry was reported and skipped */
} sum_list;

/* sum_list_add: appends a copy of name, found in tree (-1: given as
 * named), on device dev (0: not known). Returns 0 or ENOMEM. */
int sum_list_add(sum_list *l, const char *name, int tree, uint64_t size, uint64_t dev);

/* sum_list_build: the names for the arguments: as given, or with
 * recurse each directory argument replaced by its regular files in byte
 * order of their paths (`find DIR -type f | LC_ALL=C sort`), each found
 * in that tree (l->tree); follow: symbolic links below the arguments are
 * followed too, and the files are read as named. Special files,
 * loops and unreadable directories of the walk are reported on stderr
 * (l->skipped set). Returns 0 or ENOMEM (reported). */
int sum_list_build(sum_list *l, char *const *args, size_t n, int recurse, int follow,
                   progress *meter);

/* sum_list_free: releases l. */
void sum_list_free(sum_list *l);

/* ---- sum_run.c ---------------------------------------------------------- */

/* Called once per name, in list order: r is its result. */
typedef void (*sum_done_fn)(void *ctx, size_t index, const hb_file_result *r);

/* The hash cache as `sum --cache` uses it (sum_run.c). */
typedef struct sum_cache sum_cache;

/* Hashing names through files jobs, in order. */
typedef struct {
    hb_engine *engine;
    hb_files_options files; /* io threads, sizes (on_file is the runner's) */
    progress *meter;        /* NULL: none */
    int stdout_tty;         /* erase the meter before stdout lines */
    hb_files_stats total;   /* summed over the run's jobs */
    sum_cache *cache;       /* --cache: digests of unchanged files; NULL: none */
    /* Not NULL: engine is NULL and opens with this configuration when a
     * file first needs hashing, told the work then known (with the cache:
     * the files it did not hold), so that the default route starts no
     * device that would not pay; the caller closes it. */
    const hb_config *open_late;
    /* Where the names are read from: with tree_of (per name, as
     * sum_list's tree), a name found in a tree is read beneath that tree's
     * folder in trees (places.h: opened once, shown to be the folder the
     * walk saw), no symbolic link followed; NULL: every name as named. */
    const int *tree_of;
    places *trees;
    const uint64_t *dev_of; /* per name: its device (0 or NULL: not known) */
    uint64_t jobs;          /* files jobs started, for the read-order trace */
} sum_runner;

/* sum_run: hashes names[0, n) ("-": standard input, read once per "-"
 * as sha1sum does), calling done for each in order. With r->cache, a
 * file whose key (filesystem, device, inode, size, mtime, ctime) is in
 * the cache gets its cached digest without being read, and what is
 * hashed is remembered for sum_cache_close. Returns 0, or CLI_EXIT_FAILURE when a
 * job could not be started (reported). */
int sum_run(sum_runner *r, char *const *names, size_t n, sum_done_fn done, void *ctx);

/* sum_cache_open: the hash cache in file (NULL: the default file). One
 * that cannot be used is reported in one line and NULL returned (the run
 * goes on without it). */
sum_cache *sum_cache_open(const char *file);

/* sum_cache_close: stores what was hashed (one transaction; a failure
 * is reported in one line), prints the cache's counts on stderr when
 * verbose, and frees c (NULL allowed). */
void sum_cache_close(sum_cache *c, int verbose);

/* sum_report_failure: the stderr line for a file that could not be
 * hashed: "hashbatch: NAME: cause" (sha1sum's wording for errno causes;
 * in_tree: the name was found by the walk, and a symbolic link or a
 * path out of its folder met now is said as a change since the walk). */
void sum_report_failure(const char *name, const hb_file_result *r, int in_tree);

/* ---- sum_order.c -------------------------------------------------------- */

/* sum_read_order: the order in which a job reads names[0, n), all found
 * in tree (-1: named; read beneath its folder otherwise), devs[0, n)
 * their devices (NULL: none known): when any of them lies on a
 * rotational disk (disk_order.c) and a sample of those is not in the page
 * cache, the order of their places on their disks (each such file opened
 * once, as the job would open it, for its first extent) in order[k] =
 * the name's index, and 1 returned; else 0 (read them in list order). -1 when out of memory (list order). With
 * HASHBATCH_DEBUG_READ_ORDER set, the order is printed on stderr
 * ("hashbatch: debug: read order JOB POS NAME"), as dedup prints its. */
int sum_read_order(const sum_runner *r, char *const *names, int tree, const uint64_t *devs,
                   size_t n, uint32_t *order);

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
