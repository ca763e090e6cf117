/*
 * act_ops.c - the atomic operations, all on descriptors: the folder a
 * duplicate is in (resolved once, places.c) and the file's last name
 * there. A duplicate is never changed in place:
 *
 *   link:   the new name (a hard link of the kept inode itself, a
 *           symbolic link, or a FICLONE copy) is made at a fresh
 *           temporary name (act_temp.c) and exchanged with the duplicate
 *           (RENAME_EXCHANGE); what came out is shown to be the
 *           duplicate, unmodified, before act_run.c compares its bytes
 *           and commits (removes it) or undoes the exchange;
 *   remove: the duplicate is renamed to a fresh temporary name
 *           (RENAME_NOREPLACE) and shown to be the file of the scan,
 *           then compared and removed, or renamed back.
 *
 * At every moment the duplicate's name holds either the duplicate or the
 * finished link, and nothing is ever done by a path that could be
 * resolved a second time: a folder swapped for a symbolic link during
 * the run changes nothing here.
 *
 * Owns: those operations. Must not: decide what to link (act_run.c),
 * compare bytes (act_check.c), print, or exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "act.h"

/* How often a taken temporary name is met before giving up (each try is
 * a fresh name: only another process making our names could take them). */
#define TEMP_TRIES 16

#define SWAP_FLAGS RENAME_EXCHANGE

static int same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* unchanged_since: is st the file of o, with o's size and mtime? */
static int unchanged_since(const struct stat *st, const act_open_file *o)
{
    return same_inode(st, &o->st) && S_ISREG(st->st_mode) && st->st_size == o->st.st_size &&
           st->st_mtim.tv_sec == o->st.st_mtim.tv_sec &&
           st->st_mtim.tv_nsec == o->st.st_mtim.tv_nsec;
}

/* fd_dir_path: the kernel's name of the folder open at fd (malloc'd). */
static char *fd_dir_path(int fd)
{
    char proc[64], buf[4096];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    if (buf[0] != '/') {
        errno = ENOENT; /* a folder removed meanwhile: "/x (deleted)" or odd */
        return NULL;
    }
    return strdup(buf);
}

/* relative: the path from folder `from` to file `to` (both absolute,
 * without symbolic links, "." or ".."), malloc'd: "../" for each of
 * from's names past the folders both share, then the rest of to. */
static char *relative(const char *from, const char *to)
{
    size_t fl = strlen(from);
    char *fs = malloc(fl + 2); /* from with one final '/' */
    if (fs == NULL)
        return NULL;
    memcpy(fs, from, fl + 1);
    if (fs[fl - 1] != '/')
        strcat(fs, "/");
    size_t common = 0; /* just past the last '/' of the shared start */
    for (size_t i = 0; fs[i] && to[i] == fs[i]; i++)
        if (fs[i] == '/')
            common = i + 1;
    size_t ups = 0;
    for (const char *c = fs + common; *c; c++)
        ups += *c == '/';
    free(fs);
    char *out = malloc(3 * ups + strlen(to + common) + 1);
    if (out == NULL)
        return NULL;
    out[0] = '\0';
    for (size_t k = 0; k < ups; k++)
        strcat(out, "../");
    strcat(out, to + common);
    return out;
}

/* normalize: the names of path (below a root) with "." dropped and ".."
 * taken back, joined by '/', into out (as long as path at most);
 * without its last name when drop_last. Returns 0, or -1 when ".."
 * climbs above the start. */
static int normalize(const char *path, int drop_last, char *out)
{
    size_t len = 0;
    const char *c = path;
    while (*c) {
        while (*c == '/')
            c++;
        const char *e = c;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - c);
        int last = *e == '\0' || e[strspn(e, "/")] == '\0';
        int dot = n == 1 && c[0] == '.', dotdot = n == 2 && c[0] == '.' && c[1] == '.';
        if (n == 0 || (last && drop_last))
            break;
        if (dotdot) {
            if (len == 0)
                return -1;
            while (len > 0 && out[len - 1] != '/')
                len--;
            len = len > 0 ? len - 1 : 0;
        } else if (!dot) {
            if (len)
                out[len++] = '/';
            memcpy(out + len, c, n);
            len += n;
        }
        c = e;
    }
    out[len] = '\0';
    return 0;
}

char *act_symlink_target_below(const char *kept_rel, const char *link_rel)
{
    size_t kl = strlen(kept_rel), ll = strlen(link_rel);
    char *to = malloc(kl + 2), *from = malloc(ll + 2), *out = NULL;
    if (to == NULL || from == NULL)
        errno = ENOMEM;
    else if (normalize(kept_rel, 0, to + 1) != 0 || normalize(link_rel, 1, from + 1) != 0)
        errno = EXDEV;
    else {
        to[0] = from[0] = '/'; /* the root, as "/" */
        out = relative(from, to);
    }
    free(to);
    free(from);
    return out;
}

char *act_symlink_target(int kept_dir, const char *kept_leaf, int link_dir)
{
    char *kd = fd_dir_path(kept_dir), *ld = fd_dir_path(link_dir), *to = NULL, *out = NULL;
    if (kd == NULL || ld == NULL)
        goto done;
    size_t n = strlen(kd) + strlen(kept_leaf) + 2;
    if ((to = malloc(n)) == NULL)
        goto done;
    snprintf(to, n, "%s%s%s", kd, strcmp(kd, "/") == 0 ? "" : "/", kept_leaf);
    out = relative(ld, to);
done:
    free(kd);
    free(ld);
    free(to);
    return out;
}

/* link_inode: a hard link of the file open at fd, at dir/name. */
static int link_inode(int fd, int dir, const char *name)
{
    if (linkat(fd, "", dir, name, AT_EMPTY_PATH) == 0)
        return 0;
    if (errno != ENOENT && errno != EPERM)
        return -1;
    /* Without CAP_DAC_READ_SEARCH: the same inode through /proc. */
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, dir, name, AT_SYMLINK_FOLLOW);
}

/* give_metadata: old's owner, mode and times onto fd; an owner that
 * cannot be given (not root) is refused when it is not already ours. */
static int give_metadata(int fd, const struct stat *old, const char **why)
{
    struct timespec times[2] = {old->st_atim, old->st_mtim};
    struct stat mine;
    if (fchown(fd, old->st_uid, old->st_gid) != 0) {
        if (errno != EPERM || fstat(fd, &mine) != 0)
            return -1;
        if (mine.st_uid != old->st_uid || mine.st_gid != old->st_gid) {
            *why = "its owner cannot be kept by a copy made without root: left as it is";
            return -1;
        }
    }
    if (fchmod(fd, old->st_mode & 07777) != 0)
        return -1;
    return futimens(fd, times);
}

/* make_clone: a FICLONE copy of kept at dir/name, with old's metadata. */
static int make_clone(const act_open_file *kept, const act_open_file *old, const char *name,
                      const char **why)
{
    int fd = openat(old->dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (ioctl(fd, FICLONE, kept->fd) != 0 || give_metadata(fd, &old->st, why) != 0 ||
        close(fd) != 0) {
        int e = errno;
        close(fd); /* EBADF after a failed close: harmless */
        unlinkat(old->dir, name, 0);
        errno = e;
        return -1;
    }
    return 0;
}

/* symlink_metadata: old's owner and times onto the symbolic link at
 * dir/name (a link's mode is fixed; an owner not ours to give stays
 * ours). Set last: following the link to check it reads it (its atime). */
static int symlink_metadata(const act_open_file *old, const char *name)
{
    struct timespec times[2] = {old->st.st_atim, old->st.st_mtim};
    if (fchownat(old->dir, name, old->st.st_uid, old->st.st_gid, AT_SYMLINK_NOFOLLOW) != 0 &&
        errno != EPERM)
        return -1;
    return utimensat(old->dir, name, times, AT_SYMLINK_NOFOLLOW);
}

/* remove_made: removes dir/name if it still is the link this run made. */
static void remove_made(int dir, const char *name, const struct stat *made)
{
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && same_inode(&st, made))
        unlinkat(dir, name, 0);
}

int act_leads_to(int dir, const char *name, const act_open_file *kept)
{
    struct stat st;
    return fstatat(dir, name, &st, 0) == 0 && same_inode(&st, &kept->st);
}

int act_make_link(act_kind kind, act_temps *t, const act_open_file *kept, const act_open_file *old,
                  const char *target, char tmp[ACT_TEMP_CAP], struct stat *made, const char **why)
{
    *why = NULL;
    for (int tries = 0; tries < TEMP_TRIES; tries++) {
        act_temp_next(t, tmp);
        int rc = kind == ACT_HARD      ? link_inode(kept->fd, old->dir, tmp)
                 : kind == ACT_SYMLINK ? symlinkat(target, old->dir, tmp)
                                       : make_clone(kept, old, tmp, why);
        if (rc != 0 && errno == EEXIST && *why == NULL)
            continue; /* taken: never removed, the next name is tried */
        if (rc != 0)
            return -1;
        if (fstatat(old->dir, tmp, made, AT_SYMLINK_NOFOLLOW) == 0 &&
            (kind == ACT_REFLINK || act_leads_to(old->dir, tmp, kept))) {
            if (kind != ACT_SYMLINK || symlink_metadata(old, tmp) == 0)
                return 0;
            int e = errno;
            unlinkat(old->dir, tmp, 0);
            errno = e;
            return -1;
        }
        unlinkat(old->dir, tmp, 0);
        *why = kind == ACT_SYMLINK ? "the new symbolic link does not lead to the kept file"
                                   : "the kept file was replaced during the run";
        return -1;
    }
    errno = EEXIST;
    return -1;
}

int act_swap_in(const act_open_file *old, const struct stat *made, const char *tmp,
                struct stat *moved, const char **why)
{
    *why = NULL;
    if (renameat2(old->dir, tmp, old->dir, old->leaf, SWAP_FLAGS) != 0) {
        int e = errno;
        unlinkat(old->dir, tmp, 0);
        errno = e;
        return -1;
    }
    if (fstatat(old->dir, tmp, moved, AT_SYMLINK_NOFOLLOW) == 0 && unchanged_since(moved, old))
        return 0;
    /* Another file had the name (an editor's save): give it back. */
    if (renameat2(old->dir, tmp, old->dir, old->leaf, SWAP_FLAGS) == 0)
        remove_made(old->dir, tmp, made);
    *why = "changed while it was being replaced: left as it is";
    return -1;
}

int act_hide(act_temps *t, const act_open_file *old, char tmp[ACT_TEMP_CAP], struct stat *moved,
             const char **why)
{
    *why = NULL;
    int renamed = 0;
    for (int tries = 0; !renamed && tries < TEMP_TRIES; tries++) {
        act_temp_next(t, tmp);
        renamed = renameat2(old->dir, old->leaf, old->dir, tmp, RENAME_NOREPLACE) == 0;
        if (!renamed && errno != EEXIST)
            return -1; /* nothing moved (errno) */
    }
    if (!renamed)
        return -1; /* EEXIST: every fresh name was taken */
    if (fstatat(old->dir, tmp, moved, AT_SYMLINK_NOFOLLOW) == 0 && unchanged_since(moved, old))
        return 0;
    /* Another file had the name: put it back where it was. */
    if (act_unhide(old, tmp) != 0) {
        *why = "changed while it was being removed; its new file is left at a temporary "
               "name, its own name being taken again meanwhile";
        return -1;
    }
    *why = "changed while it was being removed: left as it is";
    return -1;
}

int act_commit(const act_open_file *old, const char *tmp, const char **why)
{
    *why = NULL;
    struct stat st;
    if (fstatat(old->dir, tmp, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (!same_inode(&st, &old->st)) {
        *why = "its temporary name was taken by another file: left as it is";
        return -1;
    }
    return unlinkat(old->dir, tmp, 0);
}

int act_undo_swap(const act_open_file *old, const struct stat *made, const char *tmp)
{
    if (renameat2(old->dir, tmp, old->dir, old->leaf, SWAP_FLAGS) != 0)
        return -1;
    remove_made(old->dir, tmp, made);
    return 0;
}

int act_unhide(const act_open_file *old, const char *tmp)
{
    return renameat2(old->dir, tmp, old->dir, old->leaf, RENAME_NOREPLACE);
}
