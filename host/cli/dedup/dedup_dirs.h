/*
 * dedup_dirs.h - duplicate directories (dedup_dirs.c, dedup_dirtree.c),
 * the scan's index (dedup_index.c) and merging indexes of several scans
 * (dedup_merge.c), with what the outputs (dedup_output.c) need of them.
 *
 * Owns: those interfaces and struct dd_dirs, the state behind dd_run's
 * `dirs` pointer. Must not: hold policy (each .c file does).
 */
#ifndef HB_CLI_DEDUP_DIRS_H
#define HB_CLI_DEDUP_DIRS_H

#include "dedup.h"

/* A group of identical directories (--dirs). */
typedef struct {
    uint32_t first, n;    /* its directories: dirs->members[first .. first + n) */
    uint64_t files;       /* regular files in each, at any depth */
    uint64_t bytes;       /* their bytes, in each */
    uint64_t reclaimable; /* bytes of the copies that are not hard links */
} dd_dir_group;

/* One directory of a group. */
typedef struct {
    char *path; /* as the walk names it, no trailing '/' */
    dev_t dev;
    ino_t ino;
} dd_dir_member;

/* What a merged group rests on. */
enum { DD_PROOF_BYTES = 0, DD_PROOF_SHA1 = 1 };

/* The state behind dd_run.dirs: one per run (dd_dirs_state). */
struct dd_dirs {
    char *const *roots; /* the DIR operands (dd_dirs_set_roots); NULL: unknown */
    size_t nroots;
    dd_dir_group *groups; /* --dirs: sorted by first path */
    size_t ngroups;
    dd_dir_member *members;
    size_t nmembers;
    int merged;             /* the run is a --merge: the fields below hold */
    uint8_t *proof;         /* per r->groups: DD_PROOF_BYTES or DD_PROOF_SHA1 */
    const char **host;      /* per path of r: the host of its index */
    uint64_t sha1_only;     /* groups with proof DD_PROOF_SHA1 */
    uint64_t indexes_files; /* files listed by the indexes */
};

/* dd_dirs_state: r's struct dd_dirs, made when first asked for (zeroed).
 * One run per process: the state is static, never NULL. */
struct dd_dirs *dd_dirs_state(dd_run *r);

/* dd_dirs_set_roots: records the DIR operands (they must outlive the
 * run: argv) for --dirs (directories are looked for at or below them)
 * and --index-out (the index's first line names them). */
void dd_dirs_set_roots(dd_run *r, char *const *roots, size_t n);

/* dd_dirs_free: releases what dd_dirs_find and dd_merge_main kept. */
void dd_dirs_free(dd_run *r);

/* dd_dirs_find: with --dirs, after the groups: directories whose whole
 * contents are identical, into r->dirs; file groups and directory groups
 * that only repeat the contents of a reported directory group are taken
 * out of r->groups. Returns 0 or -1 (reported). */
int dd_dirs_find(dd_run *r);

/* ---- dedup_dirs.c and dedup_dirtree.c: the directories of --dirs ----- */

enum { DD_DIR_TODO = 0, DD_DIR_OK = 1, DD_DIR_BAD = 2 };

/* A directory holding, at some depth, a file the scan kept. */
typedef struct {
    char *path;      /* as the walk names it, no trailing '/' */
    uint32_t parent; /* node index, or UINT32_MAX */
    uint32_t depth;  /* parents in the table above it */
    dev_t dev;
    ino_t ino;
    uint8_t state;   /* DD_DIR_TODO, DD_DIR_OK (may be identical to another),
                        DD_DIR_BAD (identical to none) */
    uint8_t sig[20]; /* candidates only: equal contents give equal signatures */
    uint64_t files, bytes;
    uint8_t copy; /* in a reported group, not its first member: what it
                     holds is reported through the first */
} dd_dir_node;

/* The directories of a run, found by path. */
typedef struct {
    dd_run *r;
    dd_dir_node *nodes;
    size_t nnodes, cap;
    uint32_t *slots; /* open addressing: node index + 1, 0 empty */
    size_t nslots;
    uint32_t *by_id; /* alive and failed inodes sorted by (dev, ino) */
    size_t nids;
    int nomem; /* memory ran out while the table was made */
} dd_dir_table;

/* dd_dir_lookup: the node of path, or UINT32_MAX (dedup_dirs.c). */
uint32_t dd_dir_lookup(const dd_dir_table *t, const char *path);

/* dd_dir_sign: fills node's state, signature, files and bytes, reading
 * its tree (stack: the signing walk's own, NULL from outside). */
void dd_dir_sign(dd_dir_table *t, uint32_t node, void *stack);

/* dd_dir_same: are directories a and b identical (dedup_dirtree.c says
 * what that means)? 1 or 0; *reclaim gets the bytes of b's files that are
 * not hard links to a's. */
int dd_dir_same(dd_dir_table *t, const char *a, const char *b, uint64_t *reclaim);

/* dd_mtime_ns: k's modification time in nanoseconds since the epoch. */
int64_t dd_mtime_ns(const dd_inode *k);

/* dd_put_json_path: "path": "..." and, when name is not UTF-8,
 * "path_hex": its bytes in hex (dedup_output.c). */
void dd_put_json_path(FILE *f, const char *name);

/* dd_index_hash_all: with --index-out, after the stages: every alive
 * inode not yet hashed whole is hashed now (an index needs every file's
 * digests). Returns 0 or -1 (reported). */
int dd_index_hash_all(dd_run *r);

/* dd_index_write: the scan's index (one JSON line per file) to path
 * ("-": stdout, and then dd_print prints no groups), written to a
 * temporary file renamed over path. Returns 0 or -1 (reported). */
int dd_index_write(const dd_run *r, const char *path);

/* dd_merge_main: `dedup --merge INDEX...`: groups across the indexes.
 * Returns the exit status. */
int dd_merge_main(const dd_opts *o, const hb_config *cfg, char *const *indexes, size_t n);

#endif /* HB_CLI_DEDUP_DIRS_H */
