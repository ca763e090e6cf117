/*
 * dedup.h - internal interfaces of `hashbatch dedup`: the scan and its
 * records (dedup_scan.c), reading files (dedup_read.c), the stages that
 * turn candidates into groups of identical files (dedup_stages.c, which
 * runs dedup_prefix.c, dedup_full.c, dedup_classes.c, dedup_groups.c),
 * and the outputs (dedup_output.c).
 *
 * The model: every path the walk finds is a dd_path; paths that share a
 * (dev, ino) are one dd_inode (hard links: one file, many names). The
 * stages work on inodes and give each a class: inodes in one class have
 * the same size, the same SHA-1 and the same bytes (compared). A group is
 * a class whose inodes together have two paths or more.
 *
 * Owns: those types and the interfaces between the dedup modules. Must
 * not: hold policy (each .c file does).
 */
#ifndef HB_CLI_DEDUP_H
#define HB_CLI_DEDUP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "hashbatch.h"
#include "progress.h"

#define DD_PREFIX_BYTES 4096u
#define DD_CMD "dedup" /* the subcommand's name, in messages */

typedef enum { DD_TEXT, DD_FDUPES, DD_ZERO, DD_JSON, DD_CSV, DD_SUMMARY } dd_format;

/* What the user asked for. */
typedef struct {
    dd_format format;
    int show_size;          /* -S: "N bytes each:" before each text group */
    uint64_t min_size;      /* files smaller are ignored */
    int empty;              /* --empty: group empty files too */
    int follow_symlinks;    /* -L */
    int quiet;              /* no progress, no summary */
    int verbose;            /* --stats: stage counters and the engine */
    size_t batch_bytes;     /* bytes read and hashed per engine job */
    int use_cache;          /* --cache (or --cache-file): dedup_cache.c */
    const char *cache_file; /* --cache-file PATH; NULL: the default file */
    int dirs;               /* --dirs: duplicate directories (dedup_dirs.c) */
    const char *index_out;  /* --index-out FILE: the scan's index (dedup_index.c) */
    int merge;              /* --merge: the operands are indexes (dedup_merge.c) */
    const char *action;     /* --action KIND (dedup_action.c); NULL: report only */
    const char *keep;       /* --keep RULE; NULL: the default rule */
    int dry_run;            /* --dry-run: print what --action would do */
    const char *action_log; /* --log FILE: the actions as JSON lines */
    unsigned io_threads;    /* --io-threads N; 0: chosen per device kind */
} dd_opts;

/* One name found by the walk. */
typedef struct {
    size_t name;    /* offset of the path in the arena */
    uint32_t inode; /* index of its dd_inode */
    uint32_t order; /* walk order */
} dd_path;

enum { DD_ALIVE = 0, DD_FAILED = 1 };

/* One file (inode). */
typedef struct {
    dev_t dev;
    ino_t ino;
    uint64_t size;
    int64_t mtime_sec;
    long mtime_nsec;
    int64_t ctime_ns; /* change time as the walk saw it (the cache's key) */
    uint32_t first;   /* its paths: by_inode[first .. first + npaths) */
    uint32_t npaths;
    uint32_t cls;   /* class id (the index of its first inode) */
    uint8_t state;  /* DD_ALIVE or DD_FAILED (reported, left out) */
    uint8_t hashed; /* full holds the whole file's SHA-1 */
    uint8_t prefix[20];
    uint8_t full[20];
} dd_inode;

/* A group in the report: paths of one class, in walk order. */
typedef struct {
    uint64_t size;
    uint8_t sha1[20];
    int hashed;     /* 0 for a set of hard links never read */
    uint32_t first; /* its paths: group_paths[first .. first + n) */
    uint32_t n;
    uint32_t ninodes; /* distinct files; reclaimable = (ninodes-1)*size */
} dd_group;

/* A SHA-1 collision found by the byte comparison. */
typedef struct {
    uint32_t a, b; /* inodes */
    uint8_t sha1[20];
} dd_collision;

/* A reported problem, kept for --json. */
typedef struct {
    char *path;
    char *cause;
} dd_error;

/* Everything a run holds. */
typedef struct {
    const dd_opts *o;
    hb_engine *engine; /* set when first needed */
    int open_tried;    /* dd_engine_open_now ran */
    int open_late;     /* open only when first needed, for the work known then */
    uint64_t expect_messages, expect_bytes; /* that work, when open_late */
    hb_engine *opened; /* what it opened */
    hb_status open_status;
    char open_detail[512]; /* hb_engine_last_error of the opener's thread */
    const hb_config *cfg;
    progress *meter;
    char *arena; /* paths, NUL-terminated */
    size_t arena_used, arena_cap;
    dd_path *paths;
    size_t npaths, cap_paths;
    dd_inode *inodes;
    size_t ninodes;
    uint32_t *by_inode; /* path indices grouped by inode */
    dd_group *groups;
    size_t ngroups;
    uint32_t *group_paths;
    size_t ngroup_paths;
    dd_collision *collisions;
    size_t ncollisions, cap_collisions;
    dd_error *errs; /* what was reported, for --json */
    size_t nerrs, cap_errs;
    uint64_t scanned;       /* regular files seen by the walk */
    uint64_t skipped;       /* entries reported on stderr */
    uint64_t ignored_small; /* under --min-size, or empty without --empty */
    uint64_t hashed_prefix, hashed_full, bytes_full, compared_bytes;
    double secs[4];             /* scan, prefixes, full, groups: for --stats */
    uint64_t joined_by_bytes;   /* files found equal to a hashed one by comparison */
    uint64_t distinct_by_bytes; /* files proven distinct by comparison, not hashed */
    int fatal;                  /* the engine failed: the report is incomplete */
    atomic_int stop_scan;       /* set by another thread: the scan stops (ECANCELED) */
    struct dd_cache *cache;     /* the hash cache when --cache (dedup_cache.c) */
    struct dd_dirs *dirs;       /* duplicate directories when --dirs (dedup_dirs.c) */
    struct walk_root *roots;    /* one per DIR argument: where the walk started (walk.h) */
    size_t nroots;
    struct places *places;      /* the roots opened again for the reads (places.h); NULL
                                   with -L and in a merge: paths are opened as written */
} dd_run;

/* ---- dedup_scan.c ------------------------------------------------------ */


/* dd_scan: walks the n roots, recording regular files (and reporting what
 * is skipped), then builds the inodes. Returns 0, ENOMEM, or ECANCELED
 * when r->stop_scan was set during the walk. */
int dd_scan(dd_run *r, char *const *roots, size_t n);

/* dd_path_name: the path string of path index i. */
const char *dd_path_name(const dd_run *r, uint32_t i);

/* dd_inode_name: the first path of inode k, for messages. */
const char *dd_inode_name(const dd_run *r, uint32_t k);

/* dd_report: "hashbatch: PATH: cause" on stderr (the meter cleared
 * first), and counts it as skipped (exit status 1). */
void dd_report(dd_run *r, const char *path, const char *cause);

/* dd_fail_inode: reports inode k's first path with cause and leaves the
 * inode out of every group. */
void dd_fail_inode(dd_run *r, uint32_t k, const char *cause);

/* dd_free: releases everything r holds but the engine and the meter. */
void dd_free(dd_run *r);

/* ---- dedup_open.c ------------------------------------------------------ */

/* dd_open_inode: opens inode k by its first path with flags: beneath the
 * root it was found under, no symbolic link followed (r->places), or as
 * written. Returns the descriptor, or -1 with errno (ELOOP: a symbolic
 * link on the way; EXDEV: out of its root; ESTALE: its root replaced). */
int dd_open_inode(const dd_run *r, uint32_t k, int flags);

/* ---- dedup_read.c ------------------------------------------------------ */

/* One read of a file: want bytes from the start into buf. */
typedef struct {
    uint32_t inode;
    size_t want; /* bytes to read: the prefix length or the size */
    int whole;   /* 1: want is the whole size; check the end too */
    unsigned char *buf;
    const char *cause; /* NULL on success, else why it failed */
    char cause_buf[160];
} dd_read_item;

/* dd_read_all: reads the n items, on up to nthreads threads (the calling
 * one included). Each item is opened by its inode's first path
 * (non-blocking, never following a symlink to something else: the
 * opened file must be the inode the walk saw), read, and checked: the
 * byte count (a short file, or a longer one when whole), and size and
 * mtime again after the read. Failures are left in item->cause; nothing
 * is printed. */
void dd_read_all(const dd_run *r, dd_read_item *items, size_t n, unsigned nthreads);

/* dd_files_equal: compares the whole contents of inodes a and b byte for
 * byte, streaming both through two 1 MiB buffers it keeps (so: one
 * thread only, the one running the stages). Returns 1 equal, 0 different,
 * -1 when one could not be read: *bad names that inode and *cause says
 * why (a static string or buf). When prefix_differs is not NULL it is set
 * to 1 when the files differ within their first DD_PREFIX_BYTES, else 0. */
int dd_files_equal(const dd_run *r, uint32_t a, uint32_t b, uint32_t *bad, const char **cause,
                   char *buf, size_t cap, int *prefix_differs);

/* ---- dedup_stages.c ---------------------------------------------------- */

/* dd_find_groups: the stages (size, prefix SHA-1, whole-file SHA-1 and
 * bytes) over r's inodes, then the groups in r->groups, re-checked against
 * the file system and sorted by their first path. Returns 0, or
 * CLI_EXIT_FAILURE when the engine failed or memory ran out (reported). */
int dd_find_groups(dd_run *r);

/* Helpers the stages share (dedup_stages.c). */

/* The sets the full stage hashes: inodes of one size and one prefix. */
typedef struct {
    uint32_t *inodes;
    size_t n, cap;
    size_t *start; /* set s is inodes[start[s] .. start[s + 1]) */
    size_t nsets, cap_sets;
    uint64_t bytes;
} dd_set_list;

/* A buffer reused from chunk to chunk and batch to batch: fresh memory
 * for every one would cost a page fault per 4 KiB. */
typedef struct {
    unsigned char *p;
    size_t cap;
} dd_reuse_buf;

/* dd_inode_order: walk order of inode k's first path. */
uint32_t dd_inode_order(const dd_run *r, uint32_t k);

/* dd_read_threads: how many threads read files: one per online core,
 * 2 to 8. */
unsigned dd_read_threads(void);

/* dd_engine_error: reports a failed engine call (status and detail) and
 * marks the run incomplete. Returns -1. */
int dd_engine_error(dd_run *r, hb_status st);

/* dd_engine_open_now: opens r's engine now, keeping the outcome for
 * dd_need_engine (nothing is printed). Called on the main thread while
 * another walks the tree, so that a slow start (an OpenCL kernel build)
 * overlaps the walk; LLVM inside pocl wants the thread that starts it to
 * live on. */
void dd_engine_open_now(dd_run *r);

/* dd_engine_bad_settings: did the engine fail to open because of what
 * the user asked for (a device spec that matches nothing, a bad value)? */
int dd_engine_bad_settings(const dd_run *r);

/* dd_engine_usage_error: opens the engine if that was not tried yet; when
 * it failed for bad settings, reports the usage error and returns
 * CLI_EXIT_USAGE, else returns 0 (other failures are reported when the
 * engine is needed: a run with nothing to hash does not need one). */
int dd_engine_usage_error(dd_run *r);

/* dd_need_engine: r->engine: the one dd_engine_open_now opened, or one
 * opened now. Returns 0, or -1 when it cannot be opened (reported; the run
 * is incomplete). */
int dd_need_engine(dd_run *r);

/* dd_engine_stop: closes the engine, if one was opened. */
void dd_engine_stop(dd_run *r);

/* dd_hash_now: out[i] = SHA-1(m[i]) for i < n through the engine, waiting.
 * Returns 0 or -1 (reported). */
int dd_hash_now(dd_run *r, const hb_msg *m, size_t n, hb_digest *out);

/* dd_reuse_get: b's buffer with room for n bytes (contents not kept;
 * 2 MiB and more on huge pages), or NULL when memory is short. Free b->p
 * when done. */
unsigned char *dd_reuse_get(dd_reuse_buf *b, size_t n);

/* dd_run_end: the end of the run of inodes of one size that starts at
 * cand[i] (cand sorted by size, n entries). */
size_t dd_run_end(const dd_run *r, const uint32_t *cand, size_t n, size_t i);

/* ---- dedup_prefix.c ------------------------------------------------------ */

/* dd_prefix_stage: hashes the first 4 KiB of the candidates cand[0..n)
 * (sorted by size, in runs of two or more); classifies files of up to
 * 4 KiB and adds the bigger ones, split by prefix digest, to sets.
 * Returns 0 or -1 (reported). */
int dd_prefix_stage(dd_run *r, uint32_t *cand, size_t n, dd_set_list *sets);

/* ---- dedup_full.c -------------------------------------------------------- */

/* dd_full_stage: compares and hashes every set whole and classifies it.
 * Returns 0 or -1 (reported). */
int dd_full_stage(dd_run *r, const dd_set_list *s);

/* ---- dedup_classes.c ----------------------------------------------------- */

/* dd_classify: inodes list[0..n) of one size, each hashed whole (those
 * failed or not hashed are passed over), with their bytes in data[i] when
 * at hand (data NULL: none, the files are streamed): inodes with equal
 * SHA-1 and equal bytes get one class; equal SHA-1 with different bytes
 * is a collision (recorded and warned about). */
void dd_classify(dd_run *r, const uint32_t *list, unsigned char *const *data, size_t n);

/* dd_same_bytes: are inodes a and b (of one size) equal byte for byte?
 * da and db are their bytes in memory, or NULL to read the files. Returns
 * 1 or 0; -1 when one could not be read (that inode is reported and left
 * out). Counts the bytes compared. prefix_differs, when not NULL, is set
 * as dd_files_equal sets it. */
int dd_same_bytes(dd_run *r, uint32_t a, const unsigned char *da, uint32_t b,
                  const unsigned char *db, int *prefix_differs);

/* ---- dedup_groups.c ------------------------------------------------------ */

/* dd_make_groups: r->groups from the classes (see dedup_groups.c).
 * Returns 0 or -1 (no memory). */
int dd_make_groups(dd_run *r);

/* ---- dedup_output.c ---------------------------------------------------- */

/* dd_print: the groups (and, for JSON, collisions, errors and totals) on
 * stdout in the chosen format. */
void dd_print(const dd_run *r);

/* dd_print_summary: the one-line totals on f. */
void dd_print_summary(const dd_run *r, FILE *f);

/* dd_root_listed: is r->roots[i] a root of the plan: reached, and not a
 * repeat of an earlier one (same path, same identity)? */
int dd_root_listed(const dd_run *r, size_t i);

#endif /* HB_CLI_DEDUP_H */
