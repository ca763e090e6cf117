/*
 * diag.c - messages on stderr, in coreutils' form:
 * "hashbatch: NAME: cause" and "Try 'hashbatch CMD --help'".
 *
 * stdout goes through a stream of our own over descriptor 1 that keeps
 * the first write error's errno (stdio keeps only that there was one), so
 * `hashbatch sum > /dev/full` says "No space left on device".
 *
 * Owns: the wording and shape of error messages and the final check of
 * stdout. Must not: decide exit statuses beyond returning the codes it is
 * asked for, or print anything on stdout.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout); /* keep stdout and stderr in order on a terminal */
    fprintf(stderr, "%s: ", CLI_PROGRAM);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_error_path(const char *name, int errnum)
{
    fflush(stdout);
    fprintf(stderr, "%s: ", CLI_PROGRAM);
    cli_quote_name(stderr, name);
    fprintf(stderr, ": %s\n", strerror(errnum));
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s %s: ", CLI_PROGRAM, cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s %s --help' for more information.\n", CLI_PROGRAM, cmd);
    return CLI_EXIT_USAGE;
}

/* The first errno a write to stdout met (0: none). */
static int stdout_errno;

static ssize_t stdout_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(STDOUT_FILENO, buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (stdout_errno == 0)
                stdout_errno = k < 0 ? errno : EIO;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)k;
    }
    return (ssize_t)done;
}

void cli_watch_stdout(void)
{
    cookie_io_functions_t io = {NULL, stdout_write, NULL, NULL};
    FILE *f = fopencookie(NULL, "w", io);
    if (f == NULL)
        return; /* stdio's own stdout stays: only the cause is less precise */
    setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, 1 << 16);
    fflush(stdout);
    stdout = f;
}

int cli_finish_stdout(int rc)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = stdout_errno ? stdout_errno : errno ? errno : EIO;
        fprintf(stderr, "%s: write error: %s\n", CLI_PROGRAM, strerror(e));
        return CLI_EXIT_FAILURE;
    }
    return rc;
}
