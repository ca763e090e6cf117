/*
 * act_temp.c - the temporary names an action makes in a duplicate's own
 * folder, and what an interrupted run left under such names.
 *
 * A name is ".hashbatch-RUN-SEQ.tmp": RUN is 16 hex digits drawn from
 * getrandom(2) for this run, SEQ counts up, so the name is short (a
 * duplicate of 255 bytes still gets one) and is never one that another
 * run used. It is only ever made by a call that fails on a taken name
 * (linkat, symlinkat, O_EXCL, renameat2 with RENAME_NOREPLACE); a taken
 * name is never removed or reused, the next one is tried.
 *
 * Leftovers: the first time a run acts in a folder it lists the names of
 * this form that other runs left there. Each pair acted on in that
 * folder then settles those that are its own (act_run.c says how); what
 * no pair settles is reported at the end and left as it is.
 *
 * Owns: the names and the list of leftovers. Must not: decide what a
 * leftover is, change files, print, or exit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "act.h"
#include "cli.h"
#include "fileid_set.h"

#define PREFIX ".hashbatch-"
#define SUFFIX ".tmp"
#define RUN_DIGITS 16

struct act_temps {
    char run[RUN_DIGITS + 1];
    uint64_t seq;
    fileid_set dirs; /* the folders already listed in this run (name_key) */
    act_leftover *left;
    size_t nleft, cap_left;
};

/* run_id: 16 hex digits, from getrandom, else the clock and the pid. */
static void run_id(char out[RUN_DIGITS + 1])
{
    uint64_t x;
    if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 32);
    }
    snprintf(out, RUN_DIGITS + 1, "%016llx", (unsigned long long)x);
}

act_temps *act_temps_new(void)
{
    act_temps *t = calloc(1, sizeof *t);
    if (t != NULL)
        run_id(t->run);
    return t;
}

void act_temps_free(act_temps *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->nleft; i++) {
        free(t->left[i].name);
        free(t->left[i].dir_path);
        if (t->left[i].dir >= 0)
            close(t->left[i].dir);
    }
    free(t->left);
    fileid_set_free(&t->dirs);
    free(t);
}

void act_temp_next(act_temps *t, char out[ACT_TEMP_CAP])
{
    snprintf(out, ACT_TEMP_CAP, PREFIX "%s-%llu" SUFFIX, t->run, (unsigned long long)t->seq++);
}

/* ours_elsewhere: is name a temporary of this form from another run? */
static int ours_elsewhere(const act_temps *t, const char *name)
{
    size_t n = strlen(name), p = sizeof PREFIX - 1, s = sizeof SUFFIX - 1;
    if (n < p + RUN_DIGITS + 2 + s || strncmp(name, PREFIX, p) != 0 ||
        strcmp(name + n - s, SUFFIX) != 0)
        return 0;
    for (size_t i = p; i < p + RUN_DIGITS; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    if (name[p + RUN_DIGITS] != '-')
        return 0;
    return strncmp(name + p, t->run, RUN_DIGITS) != 0;
}

/* add_leftover: records dir/name (dir duplicated). Returns 0 or -1. */
static int add_leftover(act_temps *t, int dir, const char *dir_path, size_t dir_len,
                        const struct stat *dir_st, const char *name)
{
    if (cli_grow((void **)&t->left, &t->cap_left, t->nleft + 1, sizeof *t->left) != 0)
        return -1;
    act_leftover *l = &t->left[t->nleft];
    memset(l, 0, sizeof *l);
    l->dir = fcntl(dir, F_DUPFD_CLOEXEC, 0);
    l->name = strdup(name);
    l->dir_path = strndup(dir_path, dir_len);
    l->dir_dev = (uint64_t)dir_st->st_dev;
    l->dir_ino = (uint64_t)dir_st->st_ino;
    if (l->dir < 0 || l->name == NULL || l->dir_path == NULL) {
        if (l->dir >= 0)
            close(l->dir);
        free(l->name);
        free(l->dir_path);
        return -1;
    }
    t->nleft++;
    return 0;
}

/* list_dir: the other runs' temporaries in dir. Returns 0 or -1 (errno). */
static int list_dir(act_temps *t, int dir, const char *dir_path, size_t dir_len,
                    const struct stat *dir_st)
{
    int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL)
        if (e->d_name[0] == '.' && ours_elsewhere(t, e->d_name))
            rc = add_leftover(t, dir, dir_path, dir_len, dir_st, e->d_name);
    closedir(d);
    return rc;
}

/* name_key: a folder's path as a set member: two 64-bit FNV-1a hashes
 * of it (the set holds no strings; a false match of both would only skip
 * listing one folder for leftovers in this run). */
static fileid name_key(const char *path, size_t len)
{
    uint64_t a = 0xcbf29ce484222325u, b = 0x84222325cbf29ce4u;
    for (size_t i = 0; i < len; i++) {
        a = (a ^ (unsigned char)path[i]) * 0x100000001b3u;
        b = (b ^ (unsigned char)path[len - 1 - i]) * 0x100000001b3u;
    }
    return (fileid){(dev_t)a, (ino_t)b};
}

int act_temps_visit(act_temps *t, int dir, const char *dir_path, size_t dir_len)
{
    /* Keyed by the plan's text of the folder: no stat for each pair. A
     * folder named two ways is listed twice, which settles nothing twice
     * (a leftover already settled is gone). */
    fileid key = name_key(dir_path, dir_len);
    if (fileid_set_has(&t->dirs, key))
        return 0;
    int e = fileid_set_add(&t->dirs, key);
    if (e != 0) {
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(dir, &st) != 0)
        return -1;
    return list_dir(t, dir, dir_path, dir_len, &st);
}

act_leftover *act_temps_in(act_temps *t, int dir, size_t *n)
{
    struct stat st;
    *n = 0;
    if (t->nleft == 0 || fstat(dir, &st) != 0)
        return NULL;
    /* The leftovers of one folder are listed together, in one run. */
    for (size_t i = 0; i < t->nleft; i++)
        if (t->left[i].dir_dev == (uint64_t)st.st_dev &&
            t->left[i].dir_ino == (uint64_t)st.st_ino) {
            size_t j = i;
            while (j < t->nleft && t->left[j].dir_dev == t->left[i].dir_dev &&
                   t->left[j].dir_ino == t->left[i].dir_ino)
                j++;
            *n = j - i;
            return &t->left[i];
        }
    return NULL;
}

act_leftover *act_temps_all(act_temps *t, size_t *n)
{
    *n = t->nleft;
    return t->left;
}
