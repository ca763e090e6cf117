/*
 * stat_ahead.h - stats many names on every core at once: a directory's
 * entries for the walk (walk.c), full paths (AT_FDCWD) for dedup's
 * re-check of what it reports (dedup_groups.c), and sum's cache lookups
 * (sum_run.c: paths below a walked folder, beneath it, SA_BENEATH). A rescan from the hash cache spends most of its time in
 * the kernel's path lookup and getattr, one name at a time, and those
 * calls run side by side on several cores (and, on a cold disk, keep
 * several inode reads in flight).
 *
 * Owns: its helper threads and how the names are shared among them. Must
 * not: walk, decide what an entry is, or report anything.
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

/* sa_stat_all's flag for names beneath dirfd: each name's folder is
 * resolved beneath dirfd with no symbolic link followed (beneath.h; once
 * for a run of names in one folder), and its last name stat-ed in it,
 * not followed. Errors as bn_open_dir's (ELOOP: a link on the way). */
#define SA_BENEATH 0x40000000

/* sa_stat_all: for each i < n, errs[i] = 0 and sts[i] = the stat of
 * names[i] in the open directory dirfd (or AT_FDCWD; fstatat with flags,
 * or SA_BENEATH alone), or errs[i] = the errno of a failed one. The caller works too; returns
 * when every name is done. A few names are done by the caller alone. sa
 * NULL: all by the caller. Not reentrant: one call at a time per sa. */
void sa_stat_all(stat_ahead *sa, int dirfd, const char *const *names, size_t n, int flags,
                 struct stat *sts, int *errs);

#endif /* HB_CLI_STAT_AHEAD_H */
