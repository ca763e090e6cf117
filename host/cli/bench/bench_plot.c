/*
 * bench_plot.c - `hashbatch bench --plot FILE.png`: throughput against
 * message size (one line per backend and CPU implementation, and the
 * isa-l_crypto peer's with --peer-isal; log axes, min-max bars) and, when the batch sweep ran,
 * messages/s against batch size, drawn by gnuplot.
 *
 * Owns: checking beforehand that gnuplot exists and the file can be
 * written (and that any output file can be), writing the gnuplot script
 * (data inline) to a gnuplot child process, and checking that it exited
 * 0 and left a PNG behind.
 * Must not: print on stdout (gnuplot's stdout goes to stderr), or leave
 * an empty file behind when the check alone created it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define GNUPLOT "gnuplot"

/* on_path: is an executable called name in a directory of $PATH? */
static int on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (path == NULL || path[0] == '\0')
        path = "/usr/bin:/bin";
    for (const char *p = path;;) {
        size_t len = strcspn(p, ":");
        char full[4096];
        snprintf(full, sizeof full, "%.*s/%s", (int)(len ? len : 1), len ? p : ".", name);
        if (access(full, X_OK) == 0)
            return 1;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

int bench_check_writable(const char *path, const char *opt)
{
    if (strpbrk(path, "\n\r") != NULL)
        return cli_usage_error(BENCH_CMD, "the --%s file name must not contain a line break", opt);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
    int created = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = open(path, O_WRONLY);
    if (fd < 0) {
        int e = errno;
        fflush(stdout);
        fprintf(stderr, "%s %s: cannot write the --%s file ", CLI_PROGRAM, BENCH_CMD, opt);
        cli_quote_name(stderr, path);
        fprintf(stderr, ": %s\n", strerror(e));
        return CLI_EXIT_USAGE;
    }
    close(fd);
    if (created)
        unlink(path);
    return CLI_EXIT_OK;
}

int bench_plot_check(const char *path)
{
    int rc = bench_check_writable(path, "plot");
    if (rc != CLI_EXIT_OK)
        return rc;
    if (!on_path(GNUPLOT)) {
        cli_error(BENCH_CMD ": --plot needs gnuplot, which is not on PATH (Debian: apt-get "
                            "install gnuplot-nox)");
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

/* quoted: s as a gnuplot single-quoted string ('' stands for '). */
static void quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* panel: one plot of the results of a sweep (size: 0 for the size
 * sweep, x = message size, y = GB/s; else the batch sweep at that
 * message size, x = batch, y = M messages/s). Returns 0 if empty. */
static int panel(FILE *f, const bench_report *rep, bench_sweep sweep, size_t size)
{
    int lines = 0;
    for (int b = BENCH_PEER; b < (int)rep->backends.n; b++) {
        int any = 0;
        for (size_t i = 0; i < rep->n; i++) {
            const bench_result *r = &rep->r[i];
            if (r->sweep != sweep || r->backend != b || (size && r->size != size))
                continue;
            if (!any)
                fprintf(f, "$d%d << EOD\n", b + 2);
            any = 1;
            const bench_spread *s = size ? &r->mps : &r->gbps;
            double scale = size ? 1e6 : 1.0;
            fprintf(f, "%zu %.6g %.6g %.6g\n", size ? r->count : r->size, s->median / scale,
                    s->min / scale, s->max / scale);
        }
        if (any) {
            fputs("EOD\n", f);
            lines |= 1;
        }
    }
    if (!lines)
        return 0;
    char buf[32];
    if (size)
        fprintf(f,
                "set title 'messages/s by batch size, %s messages'\n"
                "set xlabel 'messages per batch'\nset ylabel 'M messages/s'\n",
                bench_size_name(size, buf, sizeof buf));
    else
        fputs("set title 'throughput by message size'\n"
              "set xlabel 'message size (bytes)'\nset ylabel 'GB/s'\n",
              f);
    fputs("plot ", f);
    int first = 1;
    for (int b = BENCH_PEER; b < (int)rep->backends.n; b++) {
        int any = 0;
        for (size_t i = 0; i < rep->n && !any; i++)
            any = rep->r[i].sweep == sweep && rep->r[i].backend == b &&
                  (!size || rep->r[i].size == size);
        if (!any)
            continue;
        /* one colour per backend in every panel; the peer's after them */
        fprintf(f, "%s$d%d using 1:2:3:4 with yerrorlines linetype %d title ", first ? "" : ", ",
                b + 2, b == BENCH_PEER ? (int)rep->backends.n + 2 : b + 2);
        char label[64];
        quoted(f,
               b == BENCH_OPENSSL ? "OpenSSL, 1 thread" : bench_label(rep, b, label, sizeof label));
        first = 0;
    }
    fputc('\n', f);
    return 1;
}

/* script: the whole gnuplot program. */
static void script(FILE *f, const char *path, const bench_report *rep)
{
    const bench_opts *o = rep->opts;
    int panels = (o->sizes.n > 0) + (o->batches.n > 0 ? (int)o->batch_sizes.n : 0);
    fprintf(f, "set terminal png noenhanced size %d,560\nset output ", 60 + 560 * panels);
    quoted(f, path);
    fputs("\nset multiplot layout 1,", f);
    fprintf(f, "%d title ", panels);
    char title[512];
    snprintf(title, sizeof title,
             "hashbatch bench %s, %s: %s, %u cores; median of %u runs, bars "
             "min-max",
             hb_version_string(), rep->machine.date, rep->machine.cpu_model, rep->machine.cores,
             o->runs);
    quoted(f, title);
    fputs("\nset logscale xy\nset grid\nset key below\n", f);
    if (o->sizes.n > 0) {
        fputs("set xtics (", f);
        for (size_t i = 0; i < o->sizes.n; i++) {
            char buf[32];
            fprintf(f, "%s'%s' %zu", i ? ", " : "", bench_size_name(o->sizes.v[i], buf, sizeof buf),
                    o->sizes.v[i]);
        }
        fputs(") rotate by 30 right\n", f);
        panel(f, rep, BENCH_SWEEP_SIZE, 0);
    }
    fputs("set xtics autofreq norotate\n", f);
    for (size_t s = 0; s < o->batch_sizes.n && o->batches.n > 0; s++)
        panel(f, rep, BENCH_SWEEP_BATCH, o->batch_sizes.v[s]);
    fputs("unset multiplot\nset output\n", f);
}

/* is_png: does the file start with the PNG signature? */
static int is_png(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char head[8];
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return n == sizeof head && memcmp(head, sig, sizeof sig) == 0;
}

/* spawn: gnuplot with its stdin on a pipe (*to) and stdout on stderr. */
static pid_t spawn(int *to)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[0], STDIN_FILENO);
        dup2(STDERR_FILENO, STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execlp(GNUPLOT, GNUPLOT, (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    if (pid < 0) {
        close(fds[1]);
        return -1;
    }
    *to = fds[1];
    return pid;
}

int bench_plot(const char *path, const bench_report *rep)
{
    int to;
    pid_t pid = spawn(&to);
    if (pid < 0) {
        cli_error(BENCH_CMD ": cannot start gnuplot: %s", strerror(errno));
        return CLI_EXIT_FAILURE;
    }
    struct sigaction ignore = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGPIPE, &ignore, &old); /* gnuplot may die before reading it all */
    FILE *f = fdopen(to, "w");
    if (f != NULL) {
        script(f, path, rep);
        fclose(f);
    } else {
        close(to);
    }
    sigaction(SIGPIPE, &old, NULL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            cli_error(BENCH_CMD ": cannot run gnuplot (not found or not executable)");
        else
            cli_error(BENCH_CMD ": gnuplot failed (%s %d) drawing %s",
                      WIFEXITED(status) ? "exit status" : "signal",
                      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), path);
        return CLI_EXIT_FAILURE;
    }
    if (!is_png(path)) {
        cli_error(BENCH_CMD ": gnuplot exited 0 but %s is not a PNG image", path);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}
