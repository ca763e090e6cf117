/*
 * act_ops.c - the atomic operations: a duplicate is never changed in
 * place. The new name (a hard link, a symbolic link or a reflink clone)
 * is made at a temporary name in the duplicate's own directory, given
 * what the kind allows of the replaced file's metadata, and renamed over
 * the duplicate in one rename(2): at every moment the path is either the
 * original or the finished link. Just before the rename (or the unlink
 * of `remove`) the path is shown to still be the file that was compared,
 * unmodified; on any failure the temporary is removed.
 *
 * Temporary names are ".NAME.hashbatch-tmp" beside NAME, so one that an
 * interrupted run left behind is found (and removed) by the next run.
 *
 * Owns: those operations. Must not: decide what to link (act_run.c),
 * compare bytes (act_check.c), print, or exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "act.h"

#define TMP_SUFFIX ".hashbatch-tmp"

char *act_temp_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    size_t n = strlen(path) + sizeof TMP_SUFFIX + 2;
    char *t = malloc(n);
    if (t == NULL)
        return NULL;
    snprintf(t, n, "%.*s.%s" TMP_SUFFIX, (int)dir, path, path + dir);
    return t;
}

/* dir_of: realpath of the directory holding path (malloc'd) or NULL. */
static char *dir_of(const char *path)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return NULL;
    char *real = realpath(dirname(copy), NULL);
    free(copy);
    return real;
}

char *act_symlink_target(const char *kept, const char *link_path)
{
    char *to = realpath(kept, NULL), *from = dir_of(link_path), *out = NULL;
    if (to == NULL || from == NULL)
        goto done;
    /* from with a final '/': the directories a relative path climbs. */
    size_t fl = strlen(from);
    char *fs = malloc(fl + 2);
    if (fs == NULL)
        goto done;
    memcpy(fs, from, fl + 1);
    if (fl == 0 || fs[fl - 1] != '/')
        strcat(fs, "/");
    /* common: the length of the leading directories both share. */
    size_t common = 0;
    for (size_t i = 0; fs[i] && to[i] == fs[i]; i++)
        if (fs[i] == '/')
            common = i + 1;
    size_t ups = 0;
    for (const char *c = fs + common; *c; c++)
        ups += *c == '/';
    free(fs);
    out = malloc(3 * ups + strlen(to + common) + 1);
    if (out == NULL)
        goto done;
    out[0] = '\0';
    for (size_t i = 0; i < ups; i++)
        strcat(out, "../");
    strcat(out, to + common);
done:
    free(to);
    free(from);
    return out;
}

/* finish: renames tmp over path if path still is old, unmodified;
 * removes tmp otherwise. Returns 0 or -1 (*why or errno). */
static int finish(const char *tmp, const char *path, const act_open_file *old, const char **why)
{
    if (!act_unchanged(path, old)) {
        unlink(tmp);
        *why = "changed while it was being replaced: left as it is";
        return -1;
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int act_replace_hard(const char *kept_path, const act_open_file *kept, const char *path,
                     const act_open_file *old, const char *tmp, const char **why)
{
    *why = NULL;
    if (link(kept_path, tmp) != 0)
        return -1;
    struct stat st;
    if (lstat(tmp, &st) != 0 || st.st_dev != kept->st.st_dev || st.st_ino != kept->st.st_ino) {
        unlink(tmp);
        *why = "the kept file was replaced during the run";
        return -1;
    }
    return finish(tmp, path, old, why);
}

int act_replace_symlink(const char *target, const act_open_file *kept, const char *path,
                        const act_open_file *old, const char *tmp, const char **why)
{
    *why = NULL;
    if (symlink(target, tmp) != 0)
        return -1;
    struct stat st;
    if (stat(tmp, &st) != 0 || st.st_dev != kept->st.st_dev || st.st_ino != kept->st.st_ino) {
        unlink(tmp);
        *why = "the new symbolic link does not lead to the kept file";
        return -1;
    }
    /* The replaced file's owner and times (a link's mode is fixed). */
    struct timespec times[2] = {old->st.st_atim, old->st.st_mtim};
    if (fchownat(AT_FDCWD, tmp, old->st.st_uid, old->st.st_gid, AT_SYMLINK_NOFOLLOW) != 0 &&
        errno != EPERM) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    if (utimensat(AT_FDCWD, tmp, times, AT_SYMLINK_NOFOLLOW) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return finish(tmp, path, old, why);
}

/* give_metadata: the replaced file's owner, mode and times onto fd. */
static int give_metadata(int fd, const struct stat *st)
{
    struct timespec times[2] = {st->st_atim, st->st_mtim};
    if (fchown(fd, st->st_uid, st->st_gid) != 0 && errno != EPERM)
        return -1;
    if (fchmod(fd, st->st_mode & 07777) != 0)
        return -1;
    return futimens(fd, times);
}

int act_replace_clone(const act_open_file *kept, const char *path, const act_open_file *old,
                      const char *tmp, const char **why)
{
    *why = NULL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (ioctl(fd, FICLONE, kept->fd) != 0 || give_metadata(fd, &old->st) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return finish(tmp, path, old, why);
}

int act_remove_checked(const char *path, const act_open_file *old, const char **why)
{
    *why = NULL;
    if (!act_unchanged(path, old)) {
        *why = "changed while it was being removed: left as it is";
        return -1;
    }
    return unlink(path);
}

int act_drop_leftover(const char *tmp, act_kind kind, const act_open_file *kept,
                      const act_open_file *old, const char *target, uint64_t size)
{
    struct stat st;
    if (lstat(tmp, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    int ours = 0;
    if (kind == ACT_HARD && S_ISREG(st.st_mode))
        ours = (st.st_dev == kept->st.st_dev && st.st_ino == kept->st.st_ino) ||
               (st.st_dev == old->st.st_dev && st.st_ino == old->st.st_ino);
    else if (kind == ACT_SYMLINK && S_ISLNK(st.st_mode) && target != NULL) {
        char buf[4096];
        ssize_t n = readlink(tmp, buf, sizeof buf - 1);
        ours = n >= 0 && (size_t)n == strlen(target) && memcmp(buf, target, (size_t)n) == 0;
    } else if (kind == ACT_REFLINK && S_ISREG(st.st_mode))
        ours = st.st_nlink == 1 && (uint64_t)st.st_size <= size;
    if (!ours)
        return -1;
    return unlink(tmp) == 0 ? 0 : -1;
}
