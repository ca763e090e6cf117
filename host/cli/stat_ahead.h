/*
 * stat_ahead.h - stats the entries of one directory on every core at once,
 * for the walk (walk.c): a rescan from the hash cache spends most of its
 * time in the kernel's path lookup and getattr, one entry at a time, and
 * those calls run side by side on several cores.
 *
 * Owns: its helper threads and how a directory's entries are shared among
 * them. Must not: walk, decide what an entry is, or report anything.
 */
#ifndef HB_CLI_STAT_AHEAD_H
#define HB_CLI_STAT_AHEAD_H
#include <stddef.h>
#include <sys/stat.h>

typedef struct stat_ahead stat_ahead;

/* sa_open: helpers for sa_stat_all, one per online core besides the
 * caller's (at most 7), started on first use. NULL when they cannot be
 * had (one core, no memory): sa_stat_all then does the work itself. */
stat_ahead *sa_open(void);

/* sa_close: stops and frees the helpers (NULL allowed). */
void sa_close(stat_ahead *sa);

/* sa_stat_all: for each i < n, errs[i] = 0 and sts[i] = the stat of the
 * entry names[i] of the open directory dirfd (fstatat with flags), or
 * errs[i] = the errno of a failed one. The caller works too; returns when
 * every entry is done. Directories of a few entries are done by the
 * caller alone. Not reentrant: one call at a time per sa. */
void sa_stat_all(stat_ahead *sa, int dirfd, const char *const *names, size_t n, int flags,
                 struct stat *sts, int *errs);

#endif /* HB_CLI_STAT_AHEAD_H */
