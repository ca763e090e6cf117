/*
 * bench_child.c - running one program for `hashbatch bench` (the C
 * compiler, the isa-l_crypto peer) and keeping what it wrote.
 *
 * Owns: fork and exec with stdin from /dev/null, stdout and stderr read
 * through pipes (both at once, so neither fills up), the first bytes of
 * each kept and the rest drained, the wait, and describing how the child
 * ended. Must not: print, interpret the output, or look the program up
 * on PATH (the caller passes its path).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* start: the child, its stdout on out[1] and its stderr on err[1] (on
 * out[1] too when err is NULL); the parent's ends stay open. */
static pid_t start(char *const *argv, const int out[2], const int err[2])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, STDIN_FILENO);
    /* the pipes are close-on-exec; the copies dup2 makes are not */
    dup2(out[1], STDOUT_FILENO);
    dup2(err ? err[1] : out[1], STDERR_FILENO);
    execv(argv[0], argv);
    _exit(127);
}

/* keep: n bytes read into a buffer of cap bytes that holds *len (always
 * NUL-terminated; what does not fit is dropped). */
static void keep(char *buf, size_t cap, size_t *len, const char *data, size_t n)
{
    size_t room = cap - 1 - *len;
    size_t take = n < room ? n : room;
    memcpy(buf + *len, data, take);
    *len += take;
    buf[*len] = '\0';
}

/* drain: reads both pipes until both are at their end. */
static void drain(int fd_out, int fd_err, bench_child *c)
{
    struct pollfd p[2] = {{fd_out, POLLIN, 0}, {fd_err, POLLIN, 0}};
    char *buf[2] = {c->out, c->err};
    size_t cap[2] = {sizeof c->out, sizeof c->err};
    size_t *len[2] = {&c->out_len, &c->err_len};
    int open_fds = fd_err >= 0 ? 2 : 1;
    while (open_fds > 0) {
        if (poll(p, fd_err >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[4096];
            ssize_t n = read(p[i].fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                p[i].fd = -1;
                open_fds--;
                continue;
            }
            keep(buf[i], cap[i], len[i], chunk, (size_t)n);
        }
    }
}

int bench_child_run(char *const *argv, int merge, bench_child *c)
{
    int out[2], err[2] = {-1, -1};
    memset(c, 0, sizeof *c);
    if (pipe2(out, O_CLOEXEC) != 0)
        return -1;
    if (!merge && pipe2(err, O_CLOEXEC) != 0) {
        int e = errno;
        close(out[0]);
        close(out[1]);
        errno = e;
        return -1;
    }
    pid_t pid = start(argv, out, merge ? NULL : err);
    int e = errno;
    close(out[1]);
    if (!merge)
        close(err[1]);
    if (pid > 0)
        drain(out[0], merge ? -1 : err[0], c);
    close(out[0]);
    if (!merge)
        close(err[0]);
    if (pid < 0) {
        errno = e;
        return -1;
    }
    while (waitpid(pid, &c->status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return 0;
}

int bench_child_ok(const bench_child *c)
{
    return WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0;
}

const char *bench_child_how(const bench_child *c, char *buf, size_t len)
{
    if (WIFEXITED(c->status) && WEXITSTATUS(c->status) == 127)
        snprintf(buf, len, "exit status 127: it could not be run, or did not find a program");
    else if (WIFEXITED(c->status))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(c->status));
    else if (WIFSIGNALED(c->status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(c->status),
                 strsignal(WTERMSIG(c->status)));
    else
        snprintf(buf, len, "wait status %d", c->status);
    return buf;
}

const char *bench_first_lines(const char *text, unsigned lines, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    while (*text != '\0' && lines-- > 0 && used + 1 < len) {
        size_t n = strcspn(text, "\n");
        int wrote = snprintf(buf + used, len - used, "\n  %.*s", (int)n, text);
        used += wrote > 0 ? (size_t)wrote : 0;
        if (used >= len)
            break;
        text += n + (text[n] == '\n');
    }
    if (*text != '\0' && used + 8 < len)
        snprintf(buf + used, len - used, "\n  ...");
    return buf;
}
