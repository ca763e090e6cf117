/*
 * act_keep.c - the keep rules: which file of a group stays.
 *
 * first: the first in the plan's order (the default); oldest, newest: by
 * modification time (the plan's mtime_ns, else the file's now, reached
 * beneath its root with no symbolic link followed), ties to
 * the earlier in the plan; path=PREFIX: the first file at PREFIX or
 * below it (PREFIX matched at a path component's end, so path=a/b keeps
 * a/b/x but not a/bc/x).
 *
 * Owns: the rules. Must not: change files, print, or exit.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "act.h"
#include "places.h"

int act_keep_parse(const char *text, act_keep *k)
{
    k->prefix = NULL;
    if (text == NULL || strcmp(text, "first") == 0)
        k->kind = KEEP_FIRST;
    else if (strcmp(text, "oldest") == 0)
        k->kind = KEEP_OLDEST;
    else if (strcmp(text, "newest") == 0)
        k->kind = KEEP_NEWEST;
    else if (strncmp(text, "path=", 5) == 0 && text[5] != '\0') {
        k->kind = KEEP_PATH;
        k->prefix = text + 5;
    } else
        return -1;
    return 0;
}

/* under: is path at prefix or below it? */
static int under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    while (n > 1 && prefix[n - 1] == '/')
        n--;
    if (strncmp(path, prefix, n) != 0)
        return 0;
    return path[n] == '\0' || path[n] == '/' || prefix[n - 1] == '/';
}

/* file_mtime: f's modification time in ns (the plan's, else a stat of
 * the file reached beneath its root). Returns 0, or -1 when it cannot be
 * had. */
static int file_mtime(const act_file *f, const places *pl, int64_t *out)
{
    if (f->has_mtime) {
        *out = f->mtime_ns;
        return 0;
    }
    const char *why;
    struct stat st;
    int fd = places_open(pl, f->path, O_PATH, &why);
    int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (fd >= 0)
        close(fd);
    if (!ok)
        return -1;
    *out = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return 0;
}

long act_keep_choose(const act_plan *p, const act_group *g, const act_keep *k, const places *pl)
{
    const act_file *files = p->files + g->first;
    if (k->kind == KEEP_FIRST)
        return g->n ? 0 : -1;
    if (k->kind == KEEP_PATH) {
        for (size_t i = 0; i < g->n; i++)
            if (under(files[i].path, k->prefix))
                return (long)i;
        return -1;
    }
    long best = -1;
    int64_t best_t = 0;
    for (size_t i = 0; i < g->n; i++) {
        int64_t t;
        if (file_mtime(&files[i], pl, &t) != 0)
            continue;
        if (best < 0 || (k->kind == KEEP_OLDEST ? t < best_t : t > best_t)) {
            best = (long)i;
            best_t = t;
        }
    }
    return best;
}
