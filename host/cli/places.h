/*
 * places.h - files found by a scan, reached again beneath the roots the
 * scan started from (places.c says how), for `link`, `remove` and
 * dedup's reads.
 *
 * Owns: that interface. Must not: print, or exit.
 */
#ifndef HB_CLI_PLACES_H
#define HB_CLI_PLACES_H

#include <stddef.h>
#include <stdint.h>

/* A root of a scan: a DIR argument as written (or a FILE argument's
 * folder), with its identity when the scan saw it. */
typedef struct {
    const char *path; /* NULL: not a root (skipped) */
    uint64_t dev, ino;
} places_root;

typedef struct places places;

/* places_new: opens the n roots (the paths must outlive the places), each
 * shown to be the scan's directory or remembered as refused; a root with
 * a NULL path keeps its index and covers nothing. Returns
 * NULL when out of memory. The places may then be used from any thread. */
places *places_new(const places_root *roots, size_t n);

/* places_free: closes the roots. NULL is fine. */
void places_free(places *pl);

/* places_root_of: the index of the root path is found under (the longest
 * that covers it; -1: none) and, in *rel, where path below it starts. */
long places_root_of(const places *pl, const char *path, size_t *rel);

/* places_root_fd: root i's descriptor (O_PATH; the places own it), or
 * -1 with *why (its refusal) or errno (EINVAL: no such root). */
int places_root_fd(const places *pl, size_t i, const char **why);

/* places_below: where path's part below root i starts (after its
 * slashes), or -1 when root i does not cover path. */
long places_below(const places *pl, size_t i, const char *path);

/* places_dir: opens the folder holding path (O_PATH) beneath its root,
 * no symbolic link followed; *leaf is path's last name. Returns the
 * descriptor, or -1 with *why (a static reason: the root replaced, a
 * folder now a symbolic link, a path leading out) or errno. */
int places_dir(const places *pl, const char *path, const char **leaf, const char **why);

/* places_open: opens path itself with flags (O_NOFOLLOW implied: no
 * symbolic link is followed anywhere below its root). Returns the
 * descriptor, or -1 with errno (ELOOP: a symbolic link on the way; EXDEV:
 * the path leads out of its root) or *why (its root was refused). */
int places_open(const places *pl, const char *path, int flags, const char **why);

#endif /* HB_CLI_PLACES_H */
