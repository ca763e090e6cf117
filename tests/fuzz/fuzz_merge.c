/*
 * fuzz_merge.c - libFuzzer target: `dedup --merge` (dedup_merge.c) on
 * indexes read from the input: the index reader, the joining of records
 * of one file (one host and path; one device, inode, size and mtime from
 * several hosts; the "fs" tags), and the report made from them.
 *
 * Input: a flags byte (unused so far: kept for later shapes), then up to
 * MAX_INDEXES index texts separated by NUL bytes, each given to the merge
 * as a file (a memfd named /proc/self/fd/N). The merge runs with --json
 * and -q, its stdout caught, its stderr silenced.
 * Checks: an accepted merge prints JSON that json_read.c parses; each
 * group lists two files or more, none of them (host and path) twice in
 * the report, at most as many distinct files as files, and reclaimable
 * bytes of (distinct files - 1) * size; two files of one group from two
 * hosts with one device, inode and mtime are there only when the input
 * names two filesystems ("fs"), which alone keep such records apart; the
 * files scanned are at least the files listed and at most the lines.
 * Then two merges that must print the same bytes and exit the same:
 * every index given twice (one index twice counts its files once and
 * changes nothing), and every index beside a copy of itself whose header
 * names another host (one file seen from two hosts is one file; the
 * first index's names stand for it).
 * Must not: judge the merge by its own reader: the input is parsed here
 * too (json_read.c), and the invariants are stated on the printed report.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dedup_dirs.h"
#include "fuzz_util.h"
#include "json_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INDEXES 4
#define MAX_INPUT (64u << 10)
#define RENAMED "\x01renamed-" /* hosts of the renamed copies */

#define CHECK(cond, ...) FUZZ_CHECK("fuzz_merge", cond, __VA_ARGS__)

/* ---- the input --------------------------------------------------------- */

/* One index text of the input. */
typedef struct {
    const char *text;
    size_t len;
} index_text;

typedef struct {
    index_text idx[MAX_INDEXES];
    size_t n;
    size_t nrecs;     /* file lines */
    uint64_t fs;      /* a filesystem some file line names (0: none) */
    int two_fs;       /* file lines name two filesystems */
    int host_renamed; /* an index already names a host like the copies' */
} input;

/* split: the NUL-separated texts after the flags byte. */
static void split(input *in, const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    in->n = 0;
    while (in->n < MAX_INDEXES) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        const char *stop = nul != NULL && in->n + 1 < MAX_INDEXES ? nul : end;
        in->idx[in->n++] = (index_text){p, (size_t)(stop - p)};
        if (stop == end)
            break;
        p = stop + 1;
    }
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* line_path: the path a record names (path_hex over path), malloc'd. */
static char *line_path(const json_value *o)
{
    const json_value *p = json_get(o, "path"), *h = json_get(o, "path_hex");
    if (h != NULL && h->kind == JSON_STRING && h->len % 2 == 0) {
        char *out = malloc(h->len / 2 + 1);
        CHECK(out != NULL, "out of memory");
        for (size_t i = 0; i < h->len / 2; i++)
            out[i] = (char)(hexval(h->str[2 * i]) << 4 | hexval(h->str[2 * i + 1]));
        out[h->len / 2] = '\0';
        return out;
    }
    return p != NULL && p->kind == JSON_STRING ? strdup(p->str) : strdup("");
}

/* parse_lines: what the checks need of the input's lines (those that
 * parse: the checks run only when the merge accepted the input, and then
 * every line parsed). */
static void parse_lines(input *in)
{
    in->nrecs = 0;
    in->fs = 0;
    in->two_fs = in->host_renamed = 0;
    for (size_t i = 0; i < in->n; i++) {
        const char *t = in->idx[i].text, *end = t + in->idx[i].len;
        for (size_t ln = 0; t < end; ln++) {
            const char *nl = memchr(t, '\n', (size_t)(end - t));
            size_t len = (size_t)((nl ? nl : end) - t);
            char err[200];
            json_doc *d = json_parse(t, len, err, sizeof err);
            t += len + (nl != NULL);
            if (d == NULL)
                continue;
            const json_value *o = json_root(d), *v;
            if (ln == 0) {
                v = json_get(o, "host");
                in->host_renamed |= v != NULL && v->kind == JSON_STRING &&
                                    strncmp(v->str, RENAMED, strlen(RENAMED)) == 0;
            } else {
                in->nrecs++;
                v = json_get(o, "fs");
                uint64_t fs = v != NULL && v->kind == JSON_NUMBER && v->is_uint ? v->u : 0;
                in->two_fs |= fs != 0 && in->fs != 0 && fs != in->fs;
                in->fs = fs != 0 ? fs : in->fs;
            }
            json_free(d);
        }
    }
}

/* renamed: index text t with its first line replaced by a header naming
 * host RENAMED<i> and t's "files" count (t's header is valid: the merge
 * accepted it). malloc'd, *len set. */
static char *renamed(const index_text *t, size_t i, size_t *len)
{
    const char *nl = memchr(t->text, '\n', t->len);
    CHECK(nl != NULL, "an accepted index has a header line");
    char err[200];
    json_doc *d = json_parse(t->text, (size_t)(nl - t->text), err, sizeof err);
    CHECK(d != NULL, "an accepted header parses: %s", err);
    const json_value *files = json_get(json_root(d), "files");
    CHECK(files != NULL && files->is_uint, "an accepted header counts its files");
    char head[160];
    int n = snprintf(head, sizeof head,
                     "{\"format\": \"hashbatch-index\", \"version\": 1, \"host\": "
                     "\"\\u0001renamed-%zu\", \"files\": %llu}",
                     i, (unsigned long long)files->u);
    json_free(d);
    size_t rest = t->len - (size_t)(nl - t->text);
    char *out = malloc((size_t)n + rest);
    CHECK(out != NULL, "out of memory");
    memcpy(out, head, (size_t)n);
    memcpy(out + n, nl, rest);
    *len = (size_t)n + rest;
    return out;
}

/* ---- running the merge ------------------------------------------------- */

/* mem_file: a memfd holding text[0..len), rewound. */
static int mem_file(const char *text, size_t len)
{
    int fd = memfd_create("fuzz_merge", MFD_CLOEXEC);
    CHECK(fd >= 0, "memfd_create: %s", strerror(errno));
    for (size_t at = 0; at < len;) {
        ssize_t w = write(fd, text + at, len - at);
        CHECK(w > 0, "write: %s", strerror(errno));
        at += (size_t)w;
    }
    return fd;
}

/* What a merge printed. */
typedef struct {
    int status;
    char *out;
    size_t len;
} result;

/* merge: `dedup --merge --json -q` of the n texts; stdout caught, stderr
 * silenced. */
static result merge(const index_text *texts, size_t n)
{
    int fds[2 * MAX_INDEXES];
    char names[2 * MAX_INDEXES][32];
    char *argv[2 * MAX_INDEXES];
    for (size_t i = 0; i < n; i++) {
        fds[i] = mem_file(texts[i].text, texts[i].len);
        snprintf(names[i], sizeof names[i], "/proc/self/fd/%d", fds[i]);
        argv[i] = names[i];
    }
    dd_opts o;
    memset(&o, 0, sizeof o);
    o.format = DD_JSON;
    o.quiet = 1;
    o.merge = 1;
    hb_config cfg;
    hb_config_init(&cfg);
    int out = memfd_create("fuzz_merge_out", MFD_CLOEXEC);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    CHECK(out >= 0 && null >= 0, "memfd_create, /dev/null: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    CHECK(saved_out >= 0 && saved_err >= 0 && dup2(out, 1) == 1 && dup2(null, 2) == 2,
          "redirecting: %s", strerror(errno));
    result r = {dd_merge_main(&o, &cfg, argv, n), NULL, 0};
    fflush(stdout);
    fflush(stderr);
    CHECK(dup2(saved_out, 1) == 1 && dup2(saved_err, 2) == 2, "restoring: %s", strerror(errno));
    close(saved_out);
    close(saved_err);
    close(null);
    off_t len = lseek(out, 0, SEEK_END);
    CHECK(len >= 0, "lseek: %s", strerror(errno));
    r.len = (size_t)len;
    r.out = malloc(r.len + 1);
    CHECK(r.out != NULL, "out of memory");
    CHECK(pread(out, r.out, r.len, 0) == (ssize_t)r.len, "pread: %s", strerror(errno));
    r.out[r.len] = '\0';
    close(out);
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
    return r;
}

/* ---- checks of the report ---------------------------------------------- */

static const json_value *member(const json_value *o, const char *key, json_kind kind)
{
    const json_value *v = json_get(o, key);
    CHECK(v != NULL && v->kind == kind, "the report has \"%s\" of kind %d", key, (int)kind);
    return v;
}

static uint64_t uint_member(const json_value *o, const char *key)
{
    const json_value *v = member(o, key, JSON_NUMBER);
    CHECK(v->is_uint, "\"%s\" is a whole number", key);
    return v->u;
}

/* file_path: a reported file's path (path_hex over path), malloc'd. */
static char *file_path(const json_value *f)
{
    member(f, "path", JSON_STRING);
    return line_path(f);
}

/* same_number: do two JSON numbers have one text? */
static int same_number(const json_value *a, const json_value *b)
{
    return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
}

/* check_group: one group's own arithmetic and its files; every name is
 * added to names[] (host '\0' path) to catch one listed twice. */
static void check_group(const input *in, const json_value *g, char ***names, size_t *nnames,
                        size_t *cap)
{
    const json_value *files = member(g, "files", JSON_ARRAY);
    uint64_t size = uint_member(g, "size"), distinct = uint_member(g, "distinct_files");
    CHECK(files->n >= 2, "a group lists %zu files", files->n);
    CHECK(distinct >= 1 && distinct <= files->n, "%llu distinct files of %zu",
          (unsigned long long)distinct, files->n);
    CHECK(uint_member(g, "reclaimable_bytes") == (distinct - 1) * size,
          "reclaimable bytes are (distinct files - 1) * size");
    char **host = calloc(files->n, sizeof *host), **path = calloc(files->n, sizeof *path);
    CHECK(host != NULL && path != NULL, "out of memory");
    for (size_t i = 0; i < files->n; i++) {
        const json_value *f = files->items[i];
        host[i] = strdup(member(f, "host", JSON_STRING)->str);
        path[i] = file_path(f);
        CHECK(host[i] != NULL && path[i] != NULL, "out of memory");
        if (*nnames == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *names = realloc(*names, *cap * sizeof **names);
            CHECK(*names != NULL, "out of memory");
        }
        size_t hl = strlen(host[i]), pl = strlen(path[i]);
        char *key = malloc(hl + pl + 2);
        CHECK(key != NULL, "out of memory");
        memcpy(key, host[i], hl + 1);
        memcpy(key + hl + 1, path[i], pl + 1);
        for (size_t k = 0; k < *nnames; k++) {
            const char *o = (*names)[k];
            CHECK(strcmp(o, key) != 0 || strcmp(o + strlen(o) + 1, path[i]) != 0,
                  "host '%s' path '%s' is reported twice", host[i], path[i]);
        }
        (*names)[(*nnames)++] = key;
        for (size_t j = 0; j < i; j++) {
            const json_value *e = files->items[j];
            if (strcmp(host[i], host[j]) == 0 ||
                uint_member(f, "device") != uint_member(e, "device") ||
                uint_member(f, "inode") != uint_member(e, "inode") ||
                !same_number(member(f, "mtime_ns", JSON_NUMBER),
                             member(e, "mtime_ns", JSON_NUMBER)))
                continue;
            CHECK(in->two_fs, /* only two filesystems keep such records apart */
                  "one file (device, inode, mtime) under hosts '%s' and '%s' is its own duplicate",
                  host[i], host[j]);
        }
    }
    for (size_t i = 0; i < files->n; i++) {
        free(host[i]);
        free(path[i]);
    }
    free(host);
    free(path);
}

/* check_report: the invariants of an accepted merge's report. */
static void check_report(const input *in, const result *r)
{
    char err[200];
    json_doc *d = json_parse(r->out, r->len, err, sizeof err);
    CHECK(d != NULL, "the report is JSON: %s\n%s", err, r->out);
    const json_value *groups = member(json_root(d), "groups", JSON_ARRAY);
    char **names = NULL;
    size_t nnames = 0, cap = 0;
    for (size_t g = 0; g < groups->n; g++)
        check_group(in, groups->items[g], &names, &nnames, &cap);
    const json_value *summary = member(json_root(d), "summary", JSON_OBJECT);
    CHECK(uint_member(summary, "files_scanned") >= nnames,
          "%llu files scanned, %zu files listed in groups",
          (unsigned long long)uint_member(summary, "files_scanned"), nnames);
    CHECK(uint_member(summary, "files_scanned") <= in->nrecs, "%llu files scanned of %zu lines",
          (unsigned long long)uint_member(summary, "files_scanned"), in->nrecs);
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    json_free(d);
}

/* check_same: merges a and b printed the same and exited the same. */
static void check_same(const result *a, const result *b, const char *what)
{
    CHECK(a->status == b->status, "%s: exit %d, not %d", what, b->status, a->status);
    CHECK(a->len == b->len && memcmp(a->out, b->out, a->len) == 0,
          "%s: another report:\n%s\n---- not ----\n%s", what, b->out, a->out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_INPUT)
        return 0;
    input in;
    split(&in, data + 1, size - 1);
    result once = merge(in.idx, in.n);
    CHECK(once.status == 0 || once.status == 1, "exit status %d", once.status);
    if (once.len == 0) { /* refused: nothing printed, exit 1 */
        CHECK(once.status == 1, "a refused merge exits 1, not %d", once.status);
        free(once.out);
        return 0;
    }
    parse_lines(&in);
    check_report(&in, &once);
    index_text more[2 * MAX_INDEXES];
    for (size_t i = 0; i < in.n; i++)
        more[i] = more[in.n + i] = in.idx[i];
    result twice = merge(more, 2 * in.n);
    check_same(&once, &twice, "every index given twice");
    free(twice.out);
    if (!in.host_renamed) {
        for (size_t i = 0; i < in.n; i++)
            more[in.n + i].text = renamed(&in.idx[i], i, &more[in.n + i].len);
        result other = merge(more, 2 * in.n);
        check_same(&once, &other, "every index beside a copy from another host");
        free(other.out);
        for (size_t i = 0; i < in.n; i++)
            free((char *)more[in.n + i].text);
    }
    free(once.out);
    return 0;
}
