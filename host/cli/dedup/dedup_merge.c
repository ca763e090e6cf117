/*
 * dedup_merge.c - `hashbatch dedup --merge INDEX...`: groups files across
 * the indexes that scans wrote (`dedup --index-out`, dedup_index.c), from
 * different trees or machines, into dedup's own run and outputs.
 *
 *  1. each index is read whole and checked (its first line names the
 *     format and version and counts the lines that follow; every line has
 *     every field): bad input stops the merge, naming the file and line;
 *  2. each file is one (host, device, inode, size, mtime, SHA-1): paths of
 *     one such file are hard links (or one path listed by two shards);
 *  3. candidates share a size and a SHA-1. A file is reachable here when
 *     one of its paths names a regular file with the index's device,
 *     inode, size and mtime; reachable candidates are compared byte for
 *     byte (dedup_classes.c: one SHA-1 and different bytes is a collision,
 *     warned about, never grouped). Files that are not reachable join the
 *     one content their SHA-1 names, and the group is marked as proven by
 *     SHA-1 only; where the reachable files hold two contents for one
 *     SHA-1, the unreachable ones cannot be placed and are left out.
 *
 * Owns: reading indexes and the merge's proof. Must not: call files equal
 * by SHA-1 without marking the group so.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dedup_dirs.h"
#include "json_read.h"

/* One file line of an index. */
typedef struct {
    uint64_t size, dev, ino;
    int64_t mtime_ns;
    int64_t cls; /* the scan's class, -1 when the line has none */
    uint8_t prefix[20], sha1[20];
    size_t name;   /* its path in the run's arena */
    uint32_t host; /* index of the index it came from */
} rec;

/* The merge's working state. */
typedef struct {
    dd_run *r;
    rec *recs;
    size_t nrecs, cap;
    const char **hosts; /* per index */
    uint8_t *reach;     /* per inode: reachable here */
    uint32_t *first;    /* per inode: its first record */
} merge;

/* bad: "FILE: line N: what" on stderr. Returns -1. */
static int bad(const char *file, size_t line, const char *what)
{
    if (line)
        cli_error("%s: line %zu: %s", file, line, what);
    else
        cli_error("%s: %s", file, what);
    return -1;
}

/* read_all: the file's bytes, NUL-terminated, in *out (free it).
 * Returns 0 or -1 (reported). */
static int read_all(const char *file, char **out, size_t *len)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error_path(file, errno);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (buf == NULL) {
            close(fd);
            cli_error_path(file, ENOMEM);
            return -1;
        }
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                continue;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0) {
            int e = errno;
            close(fd);
            free(buf);
            cli_error_path(file, e);
            return -1;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* get_uint: member key of o as an unsigned integer. 0 or -1. */
static int get_uint(const json_value *o, const char *key, uint64_t *out)
{
    const json_value *v = json_get(o, key);
    if (v == NULL || v->kind != JSON_NUMBER || !v->is_uint)
        return -1;
    *out = v->u;
    return 0;
}

/* get_int: member key of o as a signed 64-bit integer. 0 or -1. */
static int get_int(const json_value *o, const char *key, int64_t *out)
{
    const json_value *v = json_get(o, key);
    if (v == NULL || v->kind != JSON_NUMBER)
        return -1;
    if (v->is_uint) {
        if (v->u > INT64_MAX)
            return -1;
        *out = (int64_t)v->u;
        return 0;
    }
    char text[32], *end;
    if (v->len == 0 || v->len >= sizeof text)
        return -1;
    memcpy(text, v->str, v->len);
    text[v->len] = '\0';
    errno = 0;
    long long x = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1; /* not an integer (a fraction, an exponent) or out of range */
    *out = x;
    return 0;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* unhex: n hex digits (lowercase) into n / 2 bytes. 0 or -1. */
static int unhex(const char *s, size_t n, uint8_t *out)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        int a = hexval(s[i]), b = hexval(s[i + 1]);
        if (a < 0 || b < 0)
            return -1;
        out[i / 2] = (uint8_t)(a << 4 | b);
    }
    return 0;
}

/* get_sha1: member key of o, 40 hex digits. 0 or -1. */
static int get_sha1(const json_value *o, const char *key, uint8_t out[20])
{
    const json_value *v = json_get(o, key);
    if (v == NULL || v->kind != JSON_STRING || v->len != 40)
        return -1;
    return unhex(v->str, 40, out);
}

/* add_name: the record's path (path_hex when given, else path) into the
 * arena. Returns NULL or what is wrong. */
static const char *add_name(merge *m, const json_value *o, rec *x)
{
    dd_run *r = m->r;
    const json_value *p = json_get(o, "path"), *h = json_get(o, "path_hex");
    if (p == NULL || p->kind != JSON_STRING)
        return "no \"path\" string";
    size_t len = p->len;
    if (h != NULL) {
        if (h->kind != JSON_STRING || h->len % 2 != 0 || h->len == 0)
            return "\"path_hex\" is not hex";
        len = h->len / 2;
    }
    if (cli_grow((void **)&r->arena, &r->arena_cap, r->arena_used + len + 1, 1) != 0)
        return "out of memory";
    char *dst = r->arena + r->arena_used;
    if (h != NULL) {
        if (unhex(h->str, h->len, (uint8_t *)dst) != 0)
            return "\"path_hex\" is not hex";
    } else {
        memcpy(dst, p->str, len);
    }
    dst[len] = '\0';
    if (len == 0 || strlen(dst) != len)
        return "the path is empty or holds a NUL byte";
    x->name = r->arena_used;
    r->arena_used += len + 1;
    return NULL;
}

/* parse_rec: one file line into m->recs. Returns NULL or what is wrong. */
static const char *parse_rec(merge *m, const json_value *o, uint32_t host)
{
    rec x;
    memset(&x, 0, sizeof x);
    x.host = host;
    if (o->kind != JSON_OBJECT)
        return "not a JSON object";
    if (get_uint(o, "size", &x.size) || get_uint(o, "device", &x.dev) ||
        get_uint(o, "inode", &x.ino) || get_int(o, "mtime_ns", &x.mtime_ns))
        return "missing or bad \"size\", \"device\", \"inode\" or \"mtime_ns\"";
    if (get_sha1(o, "prefix_sha1", x.prefix) || get_sha1(o, "sha1", x.sha1))
        return "missing or bad \"prefix_sha1\" or \"sha1\" (40 hex digits)";
    x.cls = -1;
    if (json_get(o, "class") != NULL && get_int(o, "class", &x.cls) != 0)
        return "bad \"class\"";
    const char *why = add_name(m, o, &x);
    if (why != NULL)
        return why;
    if (cli_grow((void **)&m->recs, &m->cap, m->nrecs + 1, sizeof *m->recs) != 0)
        return "out of memory";
    m->recs[m->nrecs++] = x;
    return NULL;
}

/* parse_header: the first line. Returns NULL or what is wrong; *files
 * and *host get its "files" and "host". */
static const char *parse_header(const json_value *o, uint64_t *files, const char **host)
{
    const json_value *f = json_get(o, "format"), *h = json_get(o, "host");
    uint64_t version;
    if (o->kind != JSON_OBJECT || f == NULL || f->kind != JSON_STRING ||
        strcmp(f->str, "hashbatch-index") != 0)
        return "not a hashbatch index (the first line must be its header, "
               "\"format\": \"hashbatch-index\", as `dedup --index-out` writes)";
    if (get_uint(o, "version", &version) != 0 || version != 1)
        return "index version not supported (this hashbatch reads version 1)";
    if (get_uint(o, "files", files) != 0)
        return "the header has no \"files\" count";
    *host = h != NULL && h->kind == JSON_STRING ? strdup(h->str) : strdup("");
    return *host == NULL ? "out of memory" : NULL;
}

/* parse_line: line number ln (text[0..len)) of file. 0 or -1. */
static int parse_line(merge *m, const char *file, size_t ln, const char *text, size_t len,
                      uint64_t *files, uint32_t host)
{
    char err[200];
    json_doc *d = json_parse(text, len, err, sizeof err);
    if (d == NULL)
        return bad(file, ln, err);
    const char *why = ln == 1 ? parse_header(json_root(d), files, &m->hosts[host])
                              : parse_rec(m, json_root(d), host);
    json_free(d);
    return why != NULL ? bad(file, ln, why) : 0;
}

/* read_index: index number host into m. Returns 0 or -1 (reported). */
static int read_index(merge *m, const char *file, uint32_t host)
{
    char *text;
    size_t len;
    if (read_all(file, &text, &len) != 0)
        return -1;
    uint64_t files = 0;
    size_t ln = 0, start = m->nrecs;
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        ln++;
        if (nl == NULL)
            rc = bad(file, ln, "truncated line (no newline at the end of the file)");
        else if (end == at)
            rc = bad(file, ln, "empty line");
        else
            rc = parse_line(m, file, ln, text + at, end - at, &files, host);
        at = end + 1;
    }
    free(text);
    if (rc == 0 && ln == 0)
        rc = bad(file, 0, "empty file: not a hashbatch index");
    if (rc == 0 && files != m->nrecs - start) {
        char what[160];
        snprintf(what, sizeof what, "truncated: the header counts %llu files, %zu lines follow",
                 (unsigned long long)files, m->nrecs - start);
        rc = bad(file, 0, what);
    }
    return rc;
}

static const merge *sort_merge; /* qsort has no context argument in C11 */

/* cmp_file: records of one file together (host, device, inode, size,
 * mtime, SHA-1), then in index order. */
static int cmp_file(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const rec *x = &sort_merge->recs[a], *y = &sort_merge->recs[b];
    if (x->host != y->host && strcmp(sort_merge->hosts[x->host], sort_merge->hosts[y->host]))
        return strcmp(sort_merge->hosts[x->host], sort_merge->hosts[y->host]);
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    if (x->mtime_ns != y->mtime_ns)
        return x->mtime_ns < y->mtime_ns ? -1 : 1;
    int c = memcmp(x->sha1, y->sha1, 20);
    return c ? c : a < b ? -1 : a > b;
}

static int same_file(const merge *m, uint32_t a, uint32_t b)
{
    const rec *x = &m->recs[a], *y = &m->recs[b];
    return strcmp(m->hosts[x->host], m->hosts[y->host]) == 0 && x->dev == y->dev &&
           x->ino == y->ino && x->size == y->size && x->mtime_ns == y->mtime_ns &&
           memcmp(x->sha1, y->sha1, 20) == 0;
}

/* fill_inode: inode k from record x. */
static void fill_inode(dd_inode *k, const rec *x)
{
    k->dev = (dev_t)x->dev;
    k->ino = (ino_t)x->ino;
    k->size = x->size;
    int64_t s = x->mtime_ns / 1000000000, ns = x->mtime_ns % 1000000000;
    if (ns < 0) {
        ns += 1000000000;
        s--;
    }
    k->mtime_sec = s;
    k->mtime_nsec = (long)ns;
    memcpy(k->prefix, x->prefix, 20);
    memcpy(k->full, x->sha1, 20);
    k->hashed = 1;
}

/* build: the run's paths and inodes from the records (a path listed
 * twice for one file counts once). Returns 0 or ENOMEM. */
static int build(merge *m)
{
    dd_run *r = m->r;
    size_t n = m->nrecs;
    uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
    r->paths = calloc(n ? n : 1, sizeof *r->paths);
    r->by_inode = malloc((n ? n : 1) * sizeof *r->by_inode);
    r->inodes = calloc(n ? n : 1, sizeof *r->inodes);
    m->first = malloc((n ? n : 1) * sizeof *m->first);
    if (idx == NULL || r->paths == NULL || r->by_inode == NULL || r->inodes == NULL ||
        m->first == NULL) {
        free(idx);
        return ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        idx[i] = (uint32_t)i;
        r->paths[i].name = m->recs[i].name;
        r->paths[i].order = (uint32_t)i;
    }
    r->npaths = n;
    sort_merge = m;
    qsort(idx, n, sizeof *idx, cmp_file);
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        dd_inode *k = &r->inodes[r->ninodes];
        fill_inode(k, &m->recs[idx[i]]);
        m->first[r->ninodes] = idx[i];
        k->first = (uint32_t)out;
        k->cls = (uint32_t)r->ninodes;
        size_t j = i;
        for (; j < n && same_file(m, idx[i], idx[j]); j++) {
            int dup = 0;
            for (size_t q = k->first; q < out && !dup; q++)
                dup = strcmp(dd_path_name(r, r->by_inode[q]), dd_path_name(r, idx[j])) == 0;
            r->paths[idx[j]].inode = (uint32_t)r->ninodes;
            if (!dup)
                r->by_inode[out++] = idx[j];
        }
        k->npaths = (uint32_t)(out - k->first);
        r->ninodes++;
        i = j;
    }
    free(idx);
    return 0;
}

/* reachable: is inode k here (one of its paths names it, unchanged)?
 * That path is moved first, so reads open it. */
static int reachable(dd_run *r, uint32_t k)
{
    dd_inode *in = &r->inodes[k];
    for (uint32_t p = 0; p < in->npaths; p++) {
        uint32_t *slot = &r->by_inode[in->first + p];
        struct stat st;
        const char *name = dd_path_name(r, *slot);
        if ((r->o->follow_symlinks ? stat(name, &st) : lstat(name, &st)) != 0)
            continue;
        if (!S_ISREG(st.st_mode) || st.st_dev != in->dev || st.st_ino != in->ino ||
            (uint64_t)st.st_size != in->size || (int64_t)st.st_mtim.tv_sec != in->mtime_sec ||
            st.st_mtim.tv_nsec != in->mtime_nsec)
            continue;
        uint32_t x = r->by_inode[in->first];
        r->by_inode[in->first] = *slot;
        *slot = x;
        return 1;
    }
    return 0;
}

static int cmp_content(const void *pa, const void *pb)
{
    const dd_inode *x = &sort_merge->r->inodes[*(const uint32_t *)pa];
    const dd_inode *y = &sort_merge->r->inodes[*(const uint32_t *)pb];
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    int c = memcmp(x->full, y->full, 20);
    return c ? c : *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

/* scan_collision: did one scan find two contents among list[0..n) (two
 * classes of one index)? */
static int scan_collision(const merge *m, const uint32_t *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            const rec *a = &m->recs[m->first[list[i]]], *b = &m->recs[m->first[list[j]]];
            if (a->host == b->host && a->cls >= 0 && b->cls >= 0 && a->cls != b->cls)
                return 1;
        }
    return 0;
}

/* settle: inodes list[0..n) share a size and a SHA-1: the reachable ones
 * are compared (dd_classify), the others join the one content found, or
 * are left out when there are two (found here, or by a scan). */
static void settle(merge *m, uint32_t *list, size_t n)
{
    dd_run *r = m->r;
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        m->reach[list[i]] = (uint8_t)reachable(r, list[i]);
        if (m->reach[list[i]]) { /* reachable ones first */
            uint32_t x = list[nr];
            list[nr++] = list[i];
            list[i] = x;
        }
    }
    int two = scan_collision(m, list, n);
    dd_classify(r, list, NULL, nr);
    uint32_t cls = UINT32_MAX;
    for (size_t i = 0; i < nr; i++) {
        if (r->inodes[list[i]].state != DD_ALIVE)
            continue;
        if (cls == UINT32_MAX)
            cls = r->inodes[list[i]].cls;
        else if (r->inodes[list[i]].cls != cls)
            two = 1;
    }
    for (size_t i = nr; i < n; i++) {
        if (two) {
            dd_fail_inode(r, list[i],
                          "not reachable here, and its SHA-1 is shared by files with different "
                          "bytes (a collision): it cannot be grouped; left out");
            continue;
        }
        if (cls == UINT32_MAX)
            cls = list[i];
        r->inodes[list[i]].cls = cls;
    }
}

/* group_all: candidates by size and SHA-1, settled. Returns 0 or ENOMEM. */
static int group_all(merge *m)
{
    dd_run *r = m->r;
    uint32_t *order = malloc((r->ninodes ? r->ninodes : 1) * sizeof *order);
    m->reach = calloc(r->ninodes ? r->ninodes : 1, 1);
    if (order == NULL || m->reach == NULL) {
        free(order);
        return ENOMEM;
    }
    for (uint32_t k = 0; k < r->ninodes; k++)
        order[k] = k;
    sort_merge = m;
    qsort(order, r->ninodes, sizeof *order, cmp_content);
    for (size_t i = 0; i < r->ninodes;) {
        size_t j = i + 1;
        while (j < r->ninodes && r->inodes[order[j]].size == r->inodes[order[i]].size &&
               memcmp(r->inodes[order[j]].full, r->inodes[order[i]].full, 20) == 0)
            j++;
        if (j - i > 1 || r->inodes[order[i]].npaths > 1)
            settle(m, order + i, j - i);
        i = j;
    }
    free(order);
    return dd_make_groups(r) == 0 ? 0 : ENOMEM;
}

/* mark_proof: per group, bytes or SHA-1 only; per path, its host. */
static int mark_proof(merge *m)
{
    dd_run *r = m->r;
    struct dd_dirs *d = dd_dirs_state(r);
    d->proof = calloc(r->ngroups ? r->ngroups : 1, 1);
    d->host = calloc(r->npaths ? r->npaths : 1, sizeof *d->host);
    if (d->proof == NULL || d->host == NULL)
        return ENOMEM;
    for (size_t p = 0; p < r->npaths; p++)
        d->host[p] = m->hosts[m->recs[p].host];
    for (size_t g = 0; g < r->ngroups; g++) {
        const dd_group *gr = &r->groups[g];
        for (uint32_t i = 0; i < gr->n; i++)
            if (!m->reach[r->paths[r->group_paths[gr->first + i]].inode])
                d->proof[g] = DD_PROOF_SHA1;
        d->sha1_only += d->proof[g] == DD_PROOF_SHA1;
    }
    return 0;
}

/* finish: prints the report; returns the exit status. */
static int finish(dd_run *r)
{
    dd_print(r);
    if (!r->o->quiet && r->o->format != DD_SUMMARY) {
        fflush(stdout);
        fprintf(stderr, "%s: ", CLI_PROGRAM);
        dd_print_summary(r, stderr);
    }
    return r->skipped ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

int dd_merge_main(const dd_opts *o, const hb_config *cfg, char *const *indexes, size_t n)
{
    dd_run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.cfg = cfg;
    merge m;
    memset(&m, 0, sizeof m);
    m.r = &r;
    struct dd_dirs *d = dd_dirs_state(&r);
    d->merged = 1;
    m.hosts = calloc(n, sizeof *m.hosts);
    int rc = m.hosts != NULL ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = read_index(&m, indexes[i], (uint32_t)i);
    r.meter = progress_open(stderr, o->quiet || rc != 0);
    int err = 0;
    if (rc == 0) {
        r.scanned = m.nrecs;
        d->indexes_files = m.nrecs;
        err = build(&m);
        if (err == 0)
            err = group_all(&m);
        if (err == 0)
            err = mark_proof(&m);
    }
    progress_close(r.meter);
    if (m.hosts == NULL || err != 0)
        cli_error("--merge: %s", strerror(ENOMEM));
    int status = rc == 0 && err == 0 && m.hosts != NULL ? finish(&r) : CLI_EXIT_FAILURE;
    for (size_t i = 0; m.hosts != NULL && i < n; i++)
        free((void *)m.hosts[i]);
    free(m.hosts);
    free(m.recs);
    free(m.reach);
    free(m.first);
    dd_dirs_free(&r);
    dd_engine_stop(&r);
    dd_free(&r);
    return status;
}
