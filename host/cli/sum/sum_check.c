/*
 * sum_check.c - `hashbatch sum -c FILE`: reads checksum lines as GNU
 * sha1sum 9.1 writes and reads them (sum_lines.c delimits them,
 * sum_parse.c splits them), hashes the listed files through the engine,
 * and prints sha1sum -c's lines, warnings and summary, word for word.
 *
 * With -z (which sha1sum refuses with -c) records end in NUL instead of
 * newline and a name is every byte up to it. A line longer than
 * SUM_LINE_MAX is an error on stderr (file and line number), counted as
 * improperly formatted, and fails the check even without --strict: it
 * could have listed a file. A checksum file that is a FIFO, socket or
 * device is skipped as `sum` skips such listed files ("-" is read).
 *
 * Owns: comparison, the order and words of -c's messages, and opening
 * the checksum file. Must not: read the listed files itself (sum_run.c
 * does, in parallel) or exit.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "sum.h"
#include "walk.h"

#define HEX_LEN SUM_HEX_LEN

/* One line that counts: a check, or (name NULL) an improperly formatted
 * line (too_long: one past SUM_LINE_MAX), kept so that the warnings come
 * out in line order. */
typedef struct {
    char *name;
    char hex[HEX_LEN + 1];
    uintmax_t line;
    int too_long;
} check_item;

/* One checksum file being checked. */
typedef struct {
    const sum_check_opts *o;
    const char *shown; /* its name in messages ("standard input" for -) */
    sum_parser parser;
    check_item *items;
    size_t n, cap;
    char **names;    /* the checks' names, for sum_run */
    size_t *item_of; /* names[k] is items[item_of[k]] */
    size_t nnames;
    size_t next_item; /* first item not yet printed */
    uintmax_t misformatted, mismatched, unreadable, too_long;
    int formatted, matched;
} checker;

/* add_item: appends a check (name non-NULL) or a bad line. */
static int add_item(checker *c, const char *name, const char *hex, uintmax_t line, int too_long)
{
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        check_item *ni = realloc(c->items, ncap * sizeof *ni);
        if (ni == NULL)
            return ENOMEM;
        c->items = ni;
        c->cap = ncap;
    }
    check_item *it = &c->items[c->n];
    memset(it, 0, sizeof *it);
    it->line = line;
    it->too_long = too_long;
    if (name != NULL) {
        if ((it->name = strdup(name)) == NULL)
            return ENOMEM;
        memcpy(it->hex, hex, HEX_LEN);
    }
    c->n++;
    return 0;
}

/* take_line: one line (NUL-terminated at len, its end removed). */
static int take_line(checker *c, char *line, size_t len, uintmax_t number, int is_stdin)
{
    char *hex = NULL, *name = NULL;
    if (sum_parse_line(&c->parser, line, len, &hex, &name) && !(is_stdin && strcmp(name, "-") == 0))
        return add_item(c, name, hex, number, 0);
    return add_item(c, NULL, NULL, number, 0);
}

/* read_lines: every line of f into c->items. Returns 0, -2 when a read
 * failed (not reported yet), or -1 (out of memory, reported). */
static int read_lines(checker *c, FILE *f, int is_stdin)
{
    sum_lines l;
    if (sum_lines_init(&l, f, c->o->zero) != 0) {
        cli_error("%s", strerror(ENOMEM));
        return -1;
    }
    int rc = 0;
    sum_record k;
    while (rc == 0 && (k = sum_lines_next(&l)) != SUM_REC_END) {
        if (k == SUM_REC_LINE)
            rc = take_line(c, l.buf, l.len, l.number, is_stdin);
        else if (k == SUM_REC_TOO_LONG)
            rc = add_item(c, NULL, NULL, l.number, 1);
        else if (k == SUM_REC_ERROR)
            rc = -2;
        if (rc > 0) {
            cli_error("%s", strerror(ENOMEM));
            rc = -1;
        }
    }
    sum_lines_free(&l);
    return rc;
}

/* error_prefix: "hashbatch: " and the checksum file's name, quoted. */
static void error_prefix(const checker *c)
{
    fflush(stdout);
    fprintf(stderr, "%s: ", CLI_PROGRAM);
    cli_quote_name(stderr, c->shown);
}

/* bad_line: -w's warning for item it; always an error for a line too
 * long to read. */
static void bad_line(checker *c, const check_item *it)
{
    c->misformatted++;
    if (it->too_long) {
        c->too_long++;
        error_prefix(c);
        fprintf(stderr, ": %" PRIuMAX ": checksum line too long (over %d bytes); not read\n",
                it->line, SUM_LINE_MAX);
        return;
    }
    if (!c->o->warn)
        return;
    error_prefix(c);
    fprintf(stderr, ": %" PRIuMAX ": improperly formatted SHA1 checksum line\n", it->line);
}

/* print_name: the name at the start of a result line; escaped (with a
 * leading backslash) only when it holds a newline, as sha1sum -c does:
 * only names that would break the line are touched. */
static void print_name(const char *name)
{
    int escape = strchr(name, '\n') != NULL;
    if (escape)
        putchar('\\');
    sum_put_name(stdout, name, escape);
}

/* same_digest: hex (either case) is the text of d. */
static int same_digest(const char *hex, const hb_digest d)
{
    char mine[41];
    sum_hex(mine, d);
    for (int i = 0; i < HEX_LEN; i++)
        if (tolower((unsigned char)hex[i]) != mine[i])
            return 0;
    return 1;
}

/* check_one: the verdict on one listed file. */
static void check_one(checker *c, const check_item *it, const hb_file_result *r)
{
    const sum_check_opts *o = c->o;
    c->formatted = 1;
    if (r->status != HB_OK) {
        if (o->ignore_missing && r->status == HB_ERR_IO && r->err == ENOENT)
            return;
        sum_report_failure(it->name, r, 0);
        c->unreadable++;
        if (!o->status) {
            print_name(it->name);
            printf(": FAILED open or read\n");
        }
        return;
    }
    int ok = same_digest(it->hex, r->digest);
    if (ok)
        c->matched = 1;
    else
        c->mismatched++;
    if (o->status || (ok && o->quiet))
        return;
    print_name(it->name);
    printf(": %s\n", ok ? "OK" : "FAILED");
}

/* flush_bad_lines: warnings for bad lines up to the next check. */
static void flush_bad_lines(checker *c)
{
    while (c->next_item < c->n && c->items[c->next_item].name == NULL)
        bad_line(c, &c->items[c->next_item++]);
}

/* on_done: sum_run's in-order result for names[k]. */
static void on_done(void *arg, size_t k, const hb_file_result *r)
{
    checker *c = arg;
    flush_bad_lines(c);
    check_one(c, &c->items[c->item_of[k]], r);
    c->next_item = c->item_of[k] + 1;
}

/* list_names: the checks' names, in line order. Returns 0 or ENOMEM. */
static int list_names(checker *c)
{
    c->names = calloc(c->n ? c->n : 1, sizeof *c->names);
    c->item_of = calloc(c->n ? c->n : 1, sizeof *c->item_of);
    if (c->names == NULL || c->item_of == NULL)
        return ENOMEM;
    for (size_t i = 0; i < c->n; i++) {
        if (c->items[i].name == NULL)
            continue;
        c->item_of[c->nnames] = i;
        c->names[c->nnames++] = c->items[i].name;
    }
    return 0;
}

/* plural: n with its noun in the right number. */
static const char *plural(uintmax_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* summary: the closing warnings; returns 1 when the file checked out. */
static int summary(checker *c)
{
    const sum_check_opts *o = c->o;
    if (!c->formatted) {
        error_prefix(c);
        fprintf(stderr, ": no properly formatted checksum lines found\n");
        return 0;
    }
    fflush(stdout);
    if (!o->status && c->misformatted)
        fprintf(stderr, "%s: WARNING: %" PRIuMAX " %s improperly formatted\n", CLI_PROGRAM,
                c->misformatted, plural(c->misformatted, "line is", "lines are"));
    if (!o->status && c->unreadable)
        fprintf(stderr, "%s: WARNING: %" PRIuMAX " listed %s could not be read\n", CLI_PROGRAM,
                c->unreadable, plural(c->unreadable, "file", "files"));
    if (!o->status && c->mismatched)
        fprintf(stderr, "%s: WARNING: %" PRIuMAX " computed %s did NOT match\n", CLI_PROGRAM,
                c->mismatched, plural(c->mismatched, "checksum", "checksums"));
    if (!o->status && o->ignore_missing && !c->matched) {
        error_prefix(c);
        fprintf(stderr, ": no file was verified\n");
    }
    return c->mismatched == 0 && c->unreadable == 0 && c->too_long == 0 &&
           (!o->strict || c->misformatted == 0) && !(o->ignore_missing && !c->matched);
}

static void checker_free(checker *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->items[i].name);
    free(c->items);
    free(c->names);
    free(c->item_of);
}

/* report_special: "hashbatch: FILE: is a FIFO (skipped)", as for listed
 * files of that kind. */
static void report_special(const char *file, mode_t mode)
{
    fflush(stdout);
    fprintf(stderr, "%s: ", CLI_PROGRAM);
    cli_quote_name(stderr, file);
    fprintf(stderr, ": %s\n", walk_special_cause(mode));
}

/* open_failed: reports why file did not open (a Unix socket fails with
 * ENXIO: it is a special file like the others). */
static void open_failed(const char *file, int err)
{
    struct stat st;
    if (err == ENXIO && stat(file, &st) == 0 && S_ISSOCK(st.st_mode))
        report_special(file, st.st_mode);
    else
        cli_error_path(file, err);
}

/* open_list: the checksum file, or stdin; NULL after reporting. FIFOs,
 * sockets and devices are not read (a FIFO could block forever, a
 * device never end): opened without blocking, seen, and closed. */
static FILE *open_list(const char *file, int is_stdin)
{
    if (is_stdin)
        return stdin;
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        open_failed(file, errno);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        cli_error_path(file, errno);
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        report_special(file, st.st_mode);
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        cli_error_path(file, errno);
        close(fd);
    }
    return f;
}

int sum_check_file(sum_runner *r, const char *file, const sum_check_opts *o)
{
    int is_stdin = strcmp(file, "-") == 0;
    checker c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.shown = is_stdin ? "standard input" : file;
    sum_parser_init(&c.parser);
    FILE *f = open_list(file, is_stdin);
    if (f == NULL)
        return 0;
    int rc = read_lines(&c, f, is_stdin);
    if (is_stdin)
        clearerr(f);
    else if (fclose(f) != 0 && rc == 0)
        rc = errno;
    int ok = 0;
    if (rc == -2) { /* sha1sum says no more than this */
        error_prefix(&c);
        fprintf(stderr, ": read error\n");
        rc = 0;
    } else if (rc > 0) {
        cli_error_path(c.shown, rc);
        rc = 0;
    } else if (rc == 0 && list_names(&c) != 0) {
        cli_error("%s", strerror(ENOMEM));
        rc = -1;
    } else if (rc == 0 && sum_run(r, c.names, c.nnames, on_done, &c) != 0) {
        rc = -1;
    } else if (rc == 0) {
        flush_bad_lines(&c);
        ok = summary(&c);
    }
    checker_free(&c);
    return rc < 0 ? -1 : ok;
}
