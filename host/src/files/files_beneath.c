/*
 * files_beneath.c - hb_open_beneath (hashbatch.h): a file or folder opened
 * from a folder's descriptor without following a symbolic link on the
 * way, and, when asked, without leaving that folder. Files jobs opened
 * with hb_submit_files_at read through it, and the command's actions
 * (link, remove) and readers reach the files they act on through it, so
 * that a path is resolved once and every later check and change is made
 * on the descriptor that was resolved (the class of rsync's
 * CVE-2024-12087/12088 and systemd-tmpfiles' CVE-2018-6954, which
 * systemd's chase() and Go's os.Root avoid the same way).
 *
 * openat2(2) with RESOLVE_NO_SYMLINKS (and RESOLVE_BENEATH) resolves the
 * whole path in the kernel in one call; kernels before 5.6 (ENOSYS) and
 * seccomp filters that refuse it (EPERM) get a walk of one component at
 * a time with O_NOFOLLOW | O_DIRECTORY, refusing ".." when beneath.
 *
 * Owns: the resolution. Must not: read, act on what it opens, or keep
 * anything between calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hashbatch.h"

#define DIR_FLAGS (O_PATH | O_DIRECTORY | O_CLOEXEC)

/* openat2_at: the kernel's resolution of rel from base, opened with
 * flags. Returns the descriptor, or -1 with errno (ENOSYS: no openat2). */
static int openat2_at(int base, const char *rel, int flags, int beneath)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)flags;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | (beneath ? RESOLVE_BENEATH : 0);
    for (;;) {
        long fd = syscall(SYS_openat2, base, rel, &how, sizeof how);
        if (fd >= 0 || errno != EAGAIN)
            return (int)fd;
        /* EAGAIN: a rename raced the lookup of ".."; try again. */
    }
}

/* open_component: one folder name of a path, never through a symbolic
 * link (ELOOP when it is one). */
static int open_component(int at, const char *name)
{
    int fd = openat(at, name, DIR_FLAGS | O_NOFOLLOW);
    if (fd < 0 && errno == ENOTDIR) {
        struct stat st;
        if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            errno = ELOOP;
        else
            errno = ENOTDIR;
    }
    return fd;
}

/* walk_dirs: the fallback for the folders of a path, one component at a
 * time; dirs (writable) holds only folder names. */
static int walk_dirs(int base, char *dirs, int beneath)
{
    if (dirs[0] == '/' && beneath) {
        errno = EXDEV;
        return -1;
    }
    int cur = openat(dirs[0] == '/' ? -1 : base, dirs[0] == '/' ? "/" : ".", DIR_FLAGS);
    char *save = NULL;
    for (char *c = strtok_r(dirs, "/", &save); cur >= 0 && c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0 && beneath) {
            close(cur);
            errno = EXDEV;
            return -1;
        }
        int next = open_component(cur, c);
        int e = errno;
        close(cur);
        errno = e;
        cur = next;
    }
    return cur;
}

/* open_by_walk: path opened with flags by the fallback: its folders one
 * at a time, then its last name with O_NOFOLLOW. */
static int open_by_walk(int base, const char *path, int flags, int beneath)
{
    const char *slash = strrchr(path, '/');
    const char *leaf = slash ? slash + 1 : path;
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    char *dirs = malloc(dir_len + 2);
    if (dirs == NULL) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(dirs, path, dir_len);
    dirs[dir_len] = '\0';
    if (dir_len == 0)
        strcpy(dirs, ".");
    int dir = walk_dirs(base, dirs, beneath);
    free(dirs);
    if (dir < 0)
        return -1;
    if (leaf[0] == '\0' || (beneath && strcmp(leaf, "..") == 0)) {
        /* "a/": the folder itself; "a/..": refused beneath */
        if (leaf[0] != '\0') {
            close(dir);
            errno = EXDEV;
            return -1;
        }
        leaf = ".";
    }
    int fd = openat(dir, leaf, flags | O_NOFOLLOW);
    int e = errno;
    if (fd < 0 && e == ENOTDIR && (flags & O_DIRECTORY)) {
        struct stat st; /* as openat2 says it: a link where a folder was */
        if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            e = ELOOP;
    }
    close(dir);
    errno = e;
    return fd;
}

int hb_open_beneath(int dir_fd, const char *path, int flags, unsigned resolve)
{
    if (path == NULL || path[0] == '\0' || (resolve & ~HB_RESOLVE_BENEATH) != 0) {
        errno = path != NULL && path[0] == '\0' ? ENOENT : EINVAL;
        return -1;
    }
    int beneath = (resolve & HB_RESOLVE_BENEATH) != 0;
    flags |= O_CLOEXEC; /* RESOLVE_NO_SYMLINKS refuses a final link too (ELOOP) */
    int fd = openat2_at(dir_fd, path, flags, beneath);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
        return fd;
    return open_by_walk(dir_fd, path, flags, beneath);
}
