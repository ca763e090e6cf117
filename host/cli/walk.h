/*
 * walk.h - a deterministic recursive walk over file-system trees, shared by
 * `hashbatch sum -r` and `hashbatch dedup`.
 *
 * The walk visits its arguments in the order given, and each directory's
 * entries in byte order (strcmp), depth first, so two runs over one tree
 * report the same entries in the same order. Names are bytes: newlines and
 * invalid UTF-8 pass through untouched.
 *
 * Every entry ends up in exactly one event of the callback:
 *  - WALK_FILE: a regular file, with its struct stat (dev, ino, size,
 *    mtime, nlink ...). Never opened by the walk.
 *  - WALK_SPECIAL: a FIFO, socket, character or block device: skipped and
 *    never opened (opening a FIFO could block forever).
 *  - WALK_SYMLINK: a symbolic link that is not followed, or a dangling
 *    one while following. Not an error: tools skip these silently.
 *  - WALK_LOOP: a directory that is one of its own ancestors (a symlink
 *    loop while following, or a bind mount): not entered again.
 *  - WALK_ERROR: a stat, open or read of a directory failed (the entry
 *    vanished, permission denied, too many levels of symbolic links ...):
 *    err holds the errno value; the walk goes on with the next entry.
 * Directories themselves are not reported; their contents are.
 *
 * Owns: directory traversal, its order, and loop detection. Must not:
 * open regular files, print anything, or decide what is an error for the
 * exit status (the callback does).
 */
#ifndef HB_CLI_WALK_H
#define HB_CLI_WALK_H

#include <stddef.h>
#include <sys/stat.h>

typedef enum {
    WALK_FILE = 0,    /* a regular file; st valid */
    WALK_SPECIAL = 1, /* FIFO, socket or device; st valid; skipped */
    WALK_SYMLINK = 2, /* a symlink not followed (or dangling); st is the link's */
    WALK_LOOP = 3,    /* a directory already being walked above; st valid */
    WALK_ERROR = 4    /* err set; st NULL */
} walk_kind;

/* One event of the walk. Everything it points to is valid only during the
 * callback: copy what must be kept. */
typedef struct {
    walk_kind kind;
    const char *path;      /* the argument, then "/"-joined names */
    const struct stat *st; /* NULL for WALK_ERROR */
    int err;               /* WALK_ERROR: the errno value; else 0 */
    const char *cause;     /* short text for messages: "is a FIFO",
                              "directory loop", strerror(err) ... */
    size_t depth;          /* 0 for an argument itself */
    int is_arg;            /* 1 when path is one of the arguments */
} walk_entry;

/* The callback: returns 0 to go on, anything else to stop the walk, which
 * then returns that value. */
typedef int (*walk_fn)(void *ctx, const walk_entry *e);

typedef struct {
    /* 0 (default): symlinks below the arguments are reported as
     * WALK_SYMLINK and not followed; arguments themselves are always
     * followed (as `find -H` and `du -D` do). 1: every symlink is
     * followed, and directory loops are detected (WALK_LOOP). */
    int follow_symlinks;
    /* 0 (default): a directory argument is walked recursively. 1: a
     * directory argument (or one found below) is not entered and is
     * reported as WALK_ERROR with EISDIR (for `sum` without -r). */
    int no_recurse;
    /* 0 (default): every argument is walked as given, so a repeated one
     * is reported again (as sha1sum hashes it again). 1: each directory
     * entry is reported once: a directory already walked (a repeated or
     * overlapping argument, a bind mount) is passed over silently, and
     * so is a file argument naming an entry already reported (as jdupes
     * does for repeated arguments). Other names of one file are still
     * reported each: hard links, and with follow_symlinks the paths
     * through a symbolic link to a directory. */
    int once;
    /* NULL (default), or one walk_root per path, zeroed, that the walk
     * fills (free their paths with walk_roots_free). */
    struct walk_root *roots;
} walk_opts;

/* Where an argument was walked from, for a caller that must find its
 * files again beneath it: a directory argument itself (path as given,
 * identity as the walk opened it); for a regular file, the directory
 * that holds it as written (its text up to the last slash, "/" for
 * "/name", "." when it has no slash), as stat(2) saw it. path stays NULL
 * for an argument that is neither, could not be reached, or was passed
 * over (with once, a file already reported). */
typedef struct walk_root {
    char *path; /* malloc'd */
    dev_t dev;
    ino_t ino;
} walk_root;

/* walk_roots_free: frees the n roots' paths (the array is the caller's). */
void walk_roots_free(walk_root *roots, size_t n);

/* walk_opts_init: the defaults (no following, recursive). */
void walk_opts_init(walk_opts *o);

/* walk_paths: walks the n paths in order (see the top of this file),
 * calling fn(ctx, entry) for every entry. opts NULL means the defaults.
 * Returns 0 when the walk went through (errors reached the callback), the
 * callback's nonzero value when it stopped the walk, or ENOMEM. Uses one
 * file descriptor per directory level being walked. Not thread-safe with
 * respect to ctx (fn runs on the calling thread only). */
int walk_paths(char *const *paths, size_t n, const walk_opts *opts, walk_fn fn, void *ctx);

/* walk_special_cause: the words for a file of mode m that is skipped as
 * special ("is a FIFO (skipped)", "is a character device (skipped)"
 * ...), as WALK_SPECIAL's cause says them; `sum` uses them for named
 * files and checksum files too. */
const char *walk_special_cause(mode_t m);

#endif /* HB_CLI_WALK_H */
