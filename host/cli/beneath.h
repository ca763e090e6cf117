/*
 * beneath.h - reaching a file beneath a directory without following a
 * symbolic link on the way, so that a path is resolved once and every
 * later check and change is made on the descriptor of the directory
 * that was resolved (the class of rsync's CVE-2024-12087/12088 and
 * systemd-tmpfiles' CVE-2018-6954, which systemd's chase() and Go's
 * os.Root avoid the same way).
 *
 * The resolution itself is the library's hb_open_beneath (openat2(2)
 * with RESOLVE_NO_SYMLINKS, and RESOLVE_BENEATH when asked; one
 * O_NOFOLLOW component at a time where the kernel has no openat2), the
 * one used by files jobs opened with hb_submit_files_at too.
 *
 * Owns: the splitting of a path into its folder and its last name, the
 * folder form of the resolution, and a folder remembered for a run of
 * names in it. Must not: decide what a caller does with a refusal,
 * print, or exit.
 */
#ifndef HB_CLI_BENEATH_H
#define HB_CLI_BENEATH_H

#include <stddef.h>

/* bn_open_dir: opens the folder named by rel[0..len) (relative, no
 * symbolic link followed in any of its components) from the folder base
 * (a descriptor, or AT_FDCWD), O_PATH | O_DIRECTORY. len 0: base itself.
 * With beneath, ".." may not climb above base. Returns the descriptor,
 * or -1 with errno: ELOOP when a component is a symbolic link, EXDEV
 * when rel leads outside base, ENOTDIR, ENOENT, EACCES as the kernel
 * says. */
int bn_open_dir(int base, const char *rel, size_t len, int beneath);

/* bn_open_file: opens the file rel names from base with flags, no
 * symbolic link followed in any component, the last one included. With
 * beneath, ".." may not climb above base. Returns the descriptor, or -1
 * with errno as bn_open_dir's. */
int bn_open_file(int base, const char *rel, int flags, int beneath);

/* bn_leaf: where the last name of path starts (after its last '/').
 * *dir_len is the length of the folder part, its trailing slashes
 * dropped (0: no folder part; a path in "/" keeps its one slash). */
const char *bn_leaf(const char *path, size_t *dir_len);

/* bn_leaf_ok: is leaf a name an action may act on (not empty, ".", or
 * "..")? */
int bn_leaf_ok(const char *leaf);

/* A folder remembered by its path, for a caller that reaches many files
 * of one folder in a row (a plan's duplicates, a walk's names): it is
 * resolved once for the run of them. */
typedef struct {
    char *path; /* NULL: none held */
    size_t len;
    int fd;
} bn_memo;

#define BN_MEMO_INIT {NULL, 0, -1}

/* bn_memo_find: m's descriptor when it holds the folder path[0, len),
 * else -1. */
int bn_memo_find(const bn_memo *m, const char *path, size_t len);

/* bn_memo_keep: forgets what m held and remembers fd as the folder
 * path[0, len); m owns fd then. 0, or -1 when out of memory (fd stays
 * the caller's). */
int bn_memo_keep(bn_memo *m, const char *path, size_t len, int fd);

/* bn_memo_forget: closes the folder m holds and forgets it. */
void bn_memo_forget(bn_memo *m);

#endif /* HB_CLI_BENEATH_H */
