/*
 * diag.c - messages on stderr, in coreutils' form:
 * "hashbatch: NAME: cause" and "Try 'hashbatch CMD --help'".
 *
 * Owns: the wording and shape of error messages and the final check of
 * stdout. Must not: decide exit statuses beyond returning the codes it is
 * asked for, or print anything on stdout.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

int cli_finish_stdout(int rc)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno ? errno : EIO;
        fprintf(stderr, "%s: write error: %s\n", CLI_PROGRAM, strerror(e));
        return CLI_EXIT_FAILURE;
    }
    return rc;
}
