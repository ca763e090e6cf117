/*
 * stat_ahead.c - many names stat-ed on every core (see stat_ahead.h).
 *
 * One job at a time: the caller posts it (a generation number under the
 * lock, a broadcast), then takes chunks of STAT_CHUNK entries from an
 * atomic counter like every helper, and waits until the helpers that
 * joined have left it. Fewer names than two chunks are not worth waking
 * anyone for. The helpers sleep on a condition variable between
 * jobs and are started with the first job that needs them.
 *
 * Owns: the helper threads and the job they share. Must not: keep any
 * stat past the call, or call back into its callers.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "beneath.h"
#include "stat_ahead.h"

#define STAT_CHUNK 64   /* entries taken at a time: a few microseconds of work each */
#define MAX_HELPERS 7u

struct stat_ahead {
    pthread_mutex_t lock;
    pthread_cond_t posted, finished;
    pthread_t th[MAX_HELPERS];
    unsigned nhelpers, started;
    unsigned long generation; /* bumped by every posted job */
    unsigned busy;            /* helpers inside the current job */
    int stopping;
    /* the current job */
    int dirfd, flags;
    const char *const *names;
    struct stat *sts;
    int *errs;
    size_t n;
    atomic_size_t next;
};

/* folder_of: the descriptor of the folder rel[0, len) beneath base,
 * opened once for a run of names in it (f: the folder a thread stat-ed
 * its last name beneath, SA_BENEATH), or -1 with errno. */
static int folder_of(bn_memo *f, int base, const char *rel, size_t len)
{
    int fd = bn_memo_find(f, rel, len);
    if (fd >= 0)
        return fd;
    bn_memo_forget(f);
    fd = bn_open_dir(base, rel, len, 1);
    if (fd >= 0 && bn_memo_keep(f, rel, len, fd) != 0) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    return fd;
}

/* stat_beneath: the stat of rel's last name (not followed) in its folder
 * beneath base, no symbolic link followed on the way. 0 or errno. */
static int stat_beneath(bn_memo *f, int base, const char *rel, struct stat *st)
{
    size_t dir_len;
    const char *leaf = bn_leaf(rel, &dir_len);
    if (!bn_leaf_ok(leaf))
        return EINVAL;
    int dir = dir_len == 0 ? base : folder_of(f, base, rel, dir_len);
    if (dir < 0)
        return errno;
    return fstatat(dir, leaf, st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
}

/* stat_range: names [i, end) of the job. */
static void stat_range(stat_ahead *sa, size_t i, size_t end)
{
    if (!(sa->flags & SA_BENEATH)) {
        for (; i < end; i++)
            sa->errs[i] = fstatat(sa->dirfd, sa->names[i], &sa->sts[i], sa->flags) == 0 ? 0 : errno;
        return;
    }
    bn_memo f = BN_MEMO_INIT;
    for (; i < end; i++)
        sa->errs[i] = stat_beneath(&f, sa->dirfd, sa->names[i], &sa->sts[i]);
    bn_memo_forget(&f);
}

/* work: takes chunks of the current job until none is left. */
static void work(stat_ahead *sa)
{
    for (;;) {
        size_t i = atomic_fetch_add(&sa->next, STAT_CHUNK);
        if (i >= sa->n)
            return;
        stat_range(sa, i, i + STAT_CHUNK < sa->n ? i + STAT_CHUNK : sa->n);
    }
}

static void *helper(void *arg)
{
    stat_ahead *sa = arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&sa->lock);
    for (;;) {
        while (!sa->stopping && sa->generation == seen)
            pthread_cond_wait(&sa->posted, &sa->lock);
        if (sa->stopping)
            break;
        seen = sa->generation;
        sa->busy++;
        pthread_mutex_unlock(&sa->lock);
        work(sa);
        pthread_mutex_lock(&sa->lock);
        if (--sa->busy == 0)
            pthread_cond_signal(&sa->finished);
    }
    pthread_mutex_unlock(&sa->lock);
    return NULL;
}

stat_ahead *sa_open(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 2)
        return NULL;
    stat_ahead *sa = calloc(1, sizeof *sa);
    if (sa == NULL)
        return NULL;
    sa->nhelpers = (unsigned)cores - 1 < MAX_HELPERS ? (unsigned)cores - 1 : MAX_HELPERS;
    pthread_mutex_init(&sa->lock, NULL);
    pthread_cond_init(&sa->posted, NULL);
    pthread_cond_init(&sa->finished, NULL);
    return sa;
}

void sa_close(stat_ahead *sa)
{
    if (sa == NULL)
        return;
    pthread_mutex_lock(&sa->lock);
    sa->stopping = 1;
    pthread_cond_broadcast(&sa->posted);
    pthread_mutex_unlock(&sa->lock);
    for (unsigned t = 0; t < sa->started; t++)
        pthread_join(sa->th[t], NULL);
    pthread_cond_destroy(&sa->posted);
    pthread_cond_destroy(&sa->finished);
    pthread_mutex_destroy(&sa->lock);
    free(sa);
}

/* start_helpers: the helper threads, once; as many as could be made. */
static void start_helpers(stat_ahead *sa)
{
    while (sa->started < sa->nhelpers &&
           pthread_create(&sa->th[sa->started], NULL, helper, sa) == 0)
        sa->started++;
    sa->nhelpers = sa->started; /* none more will be tried */
}

void sa_stat_all(stat_ahead *sa, int dirfd, const char *const *names, size_t n, int flags,
                 struct stat *sts, int *errs)
{
    if (sa == NULL || n < 2 * STAT_CHUNK) {
        stat_ahead one = {.dirfd = dirfd, .flags = flags, .names = names, .sts = sts, .errs = errs};
        stat_range(&one, 0, n);
        return;
    }
    pthread_mutex_lock(&sa->lock);
    /* A helper that woke for the last job after it was done may still be
     * in work(): the job's fields change only once it has left. */
    while (sa->busy > 0)
        pthread_cond_wait(&sa->finished, &sa->lock);
    if (sa->started == 0)
        start_helpers(sa);
    sa->dirfd = dirfd;
    sa->flags = flags;
    sa->names = names;
    sa->sts = sts;
    sa->errs = errs;
    sa->n = n;
    atomic_store(&sa->next, 0);
    sa->generation++;
    pthread_cond_broadcast(&sa->posted);
    pthread_mutex_unlock(&sa->lock);
    work(sa);
    pthread_mutex_lock(&sa->lock);
    /* The helpers that joined are waited for (their last fstatat writes
     * into sts); one that joins later finds nothing left to take. */
    while (sa->busy > 0)
        pthread_cond_wait(&sa->finished, &sa->lock);
    pthread_mutex_unlock(&sa->lock);
}
