/*
 * file_load.c - the bytes of one input file, all of them or none: read
 * into memory, or mapped read-only when it is a big regular file.
 *
 * Streams (pipes, terminals, devices) bigger than the group budget are
 * spilled to an unlinked temporary file and mapped, so memory stays
 * bounded.
 *
 * Owns: open/fstat/read/mmap of inputs and their errno values.
 * Must not: print anything or decide about groups or exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "sum.h"

#define PIPE_FIRST_CAP ((size_t)64 << 10)

/* grow: makes room for more bytes after len in *buf of *cap bytes. */
static int grow(unsigned char **buf, size_t *cap)
{
    size_t ncap = *cap < PIPE_FIRST_CAP ? PIPE_FIRST_CAP : *cap * 2;
    if (ncap < *cap)
        return ENOMEM;
    unsigned char *nbuf = realloc(*buf, ncap);
    if (nbuf == NULL)
        return ENOMEM;
    *buf = nbuf;
    *cap = ncap;
    return 0;
}

/* read_some: one read of up to n bytes (EINTR retried); *got is 0 at the
 * end of the file. Returns 0 or an errno value. */
static int read_some(int fd, unsigned char *buf, size_t n, size_t *got)
{
    if (n > SSIZE_MAX)
        n = SSIZE_MAX;
    for (;;) {
        ssize_t r = read(fd, buf, n);
        if (r >= 0) {
            *got = (size_t)r;
            return 0;
        }
        if (errno != EINTR)
            return errno;
    }
}

/* write_all: writes all n bytes. Returns 0 or an errno value. */
static int write_all(int fd, const unsigned char *buf, size_t n)
{
    while (n > 0) {
        ssize_t r = write(fd, buf, n > SSIZE_MAX ? SSIZE_MAX : n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno;
        buf += r;
        n -= (size_t)r;
    }
    return 0;
}

/* temp_file_in: a new, already unlinked file in dir; -1 on failure. */
static int temp_file_in(const char *dir)
{
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/hashbatch-XXXXXX", dir);
    if (n < 0 || (size_t)n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* temp_file: a new unlinked file in $TMPDIR, else /tmp; -1 if neither. */
static int temp_file(void)
{
    const char *dir = getenv("TMPDIR");
    int fd = -1;
    if (dir != NULL && dir[0] != '\0')
        fd = temp_file_in(dir);
    return fd >= 0 ? fd : temp_file_in("/tmp");
}

/* map_file: maps size bytes of fd read-only. Returns 0 or an errno. */
static int map_file(int fd, size_t size, file_data *out)
{
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return errno;
    (void)posix_madvise(p, size, POSIX_MADV_SEQUENTIAL);
    out->ptr = p;
    out->len = size;
    out->mapped = 1;
    return 0;
}

/* spill: a stream too big for memory: the len bytes already read from fd
 * (in buf, which is then reused as the copy buffer) and the rest of fd go
 * to the unlinked temporary file tfd, which is mapped whole and closed. Memory stays
 * bounded for pipes of any size (the library has no streaming call).
 * Returns 0 or an errno value. */
static int spill(int tfd, int fd, unsigned char *buf, size_t len, file_data *out)
{
    size_t total = len;
    size_t got = 0;
    int e = write_all(tfd, buf, len);
    while (e == 0 && (e = read_some(fd, buf, len, &got)) == 0 && got > 0) {
        e = write_all(tfd, buf, got);
        total += got;
    }
    if (e == 0)
        e = map_file(tfd, total, out);
    close(tfd);
    return e;
}

/* read_all: reads fd until end of file into fresh memory, starting with
 * room for hint bytes (one more than a regular file's size, so the end is
 * seen without growing); past spill_over bytes it spills to a temporary
 * file instead (or, when none can be made, goes on in memory). Returns 0
 * or an errno value. */
static int read_all(int fd, size_t hint, size_t spill_over, file_data *out)
{
    size_t cap = hint ? hint : 1;
    size_t len = 0;
    size_t got = 0;
    unsigned char *buf = malloc(cap);
    int e = buf ? 0 : ENOMEM;
    while (e == 0) {
        if (len == cap && len >= spill_over) {
            int tfd = temp_file();
            if (tfd >= 0) {
                e = spill(tfd, fd, buf, len, out);
                free(buf);
                return e;
            }
            spill_over = SIZE_MAX;
        }
        if (len == cap && (e = grow(&buf, &cap)) != 0)
            break;
        if ((e = read_some(fd, buf + len, cap - len, &got)) != 0 || got == 0)
            break;
        len += got;
    }
    if (e != 0) {
        free(buf);
        return e;
    }
    out->ptr = buf;
    out->len = len;
    out->mapped = 0;
    return 0;
}

/* load_fd: the content of the open fd (see file_load). */
static int load_fd(int fd, int is_stdin, size_t map_over, file_data *out)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return errno;
    if (S_ISDIR(st.st_mode))
        return EISDIR;
    if (!S_ISREG(st.st_mode) || st.st_size < 0)
        return read_all(fd, PIPE_FIRST_CAP, map_over, out);
    if ((uintmax_t)st.st_size >= SIZE_MAX)
        return EFBIG;
    size_t size = (size_t)st.st_size;
    if (size <= map_over)
        return read_all(fd, size + 1, map_over, out);
    /* Map from the start only; stdin may have been read partly already.
     * A mapped stdin is then left at its end, as reading would. */
    if (lseek(fd, 0, SEEK_CUR) == 0 && map_file(fd, size, out) == 0) {
        if (is_stdin)
            (void)lseek(fd, 0, SEEK_END);
        return 0;
    }
    return read_all(fd, PIPE_FIRST_CAP, map_over, out);
}

int file_load(const char *name, size_t map_over, file_data *out)
{
    memset(out, 0, sizeof *out);
    if (strcmp(name, "-") == 0)
        return load_fd(STDIN_FILENO, 1, map_over, out);
    int fd = open(name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return errno;
    int e = load_fd(fd, 0, map_over, out);
    close(fd);
    return e;
}

void file_data_release(file_data *d)
{
    if (d->ptr != NULL) {
        if (d->mapped)
            munmap(d->ptr, d->len);
        else
            free(d->ptr);
    }
    memset(d, 0, sizeof *d);
}
