/*
 * dedup_dirs.h - duplicate directories (dedup_dirs.c), the scan's index
 * (dedup_index.c) and merging indexes of several scans (dedup_merge.c).
 *
 * Owns: those interfaces. Must not: hold policy (each .c file does).
 */
#ifndef HB_CLI_DEDUP_DIRS_H
#define HB_CLI_DEDUP_DIRS_H

#include "dedup.h"

/* dd_dirs_find: with --dirs, after the groups: directories whose whole
 * contents are identical, into r->dirs. Returns 0 or -1 (reported). */
int dd_dirs_find(dd_run *r);

/* dd_index_write: the scan's index (one JSON line per file) to path.
 * Returns 0 or -1 (reported). */
int dd_index_write(const dd_run *r, const char *path);

/* dd_merge_main: `dedup --merge INDEX...`: groups across the indexes.
 * Returns the exit status. */
int dd_merge_main(const dd_opts *o, const hb_config *cfg, char *const *indexes, size_t n);

#endif /* HB_CLI_DEDUP_DIRS_H */
