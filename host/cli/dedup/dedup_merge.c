/*
 * dedup_merge.c - `hashbatch dedup --merge INDEX...`: groups files across
 * the indexes that scans wrote (`dedup --index-out`, dedup_index.c), from
 * different trees or machines, into dedup's own run and outputs.
 *
 *  1. each index is read whole and checked (its first line names the
 *     format and version and counts the lines that follow; every line has
 *     every field): bad input stops the merge, naming the file and line;
 *  2. records of one file are joined into one inode: the same host and
 *     path (an index given twice, two copies of one); the same device,
 *     inode, size and mtime (and filesystem, where both records name
 *     one), from one host (hard links) or from several (one store seen
 *     from each, cloned machines, an index renamed): such records cannot
 *     be told apart, so they are one file, never duplicates of each
 *     other. Of a file seen from several hosts, one host's names stand
 *     for it (this machine's, else those of the first host whose name
 *     reaches it here, else the first index's); the others are not
 *     reported, nor counted among the files scanned. A file whose records
 *     disagree on its size or SHA-1 changed between the scans: it is
 *     reported and left out;
 *  3. candidates share a size and a SHA-1. A file is reachable here when
 *     one of its paths names a regular file with its record's device,
 *     inode, size and mtime; reachable candidates are compared byte for
 *     byte (dedup_classes.c: one SHA-1 and different bytes is a collision,
 *     warned about, never grouped), each only with the others that are
 *     distinct files here: two that are one file here (told apart by the
 *     indexes only by their filesystems, or one inode seen through
 *     overlayfs: fs_id.h) are joined, never compared.
 *     Files that are not reachable join the one content their SHA-1
 *     names, and the group is marked as proven by SHA-1 only; where the
 *     reachable files hold two contents for one SHA-1, the unreachable
 *     ones cannot be placed and are left out.
 *
 * Owns: reading indexes, which records are one file, and the merge's
 * proof. Must not: call files equal by SHA-1 without marking the group
 * so, or call a pair proven by bytes unless two distinct files were
 * opened and compared here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dedup_dirs.h"
#include "fs_id.h"
#include "json_read.h"

/* One file line of an index. */
typedef struct {
    uint64_t size, dev, ino;
    uint64_t fs; /* the filesystem's identity when the index names it; 0: unknown */
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
    const char *here;   /* this machine's host name; NULL: unknown */
    uint32_t *set;      /* per record: the union-find of its file, then its root */
    uint8_t *reach;     /* per inode: reachable here */
    uint32_t *alias;    /* per inode: the inode it is one file with here, or UINT32_MAX */
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
    if (json_get(o, "fs") != NULL && get_uint(o, "fs", &x.fs) != 0)
        return "bad \"fs\"";
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

static const char *host_of(const merge *m, uint32_t i)
{
    return m->hosts[m->recs[i].host];
}

static const char *name_of(const merge *m, uint32_t i)
{
    return m->r->arena + m->recs[i].name;
}

/* cmp_name: records by host, then path, then index order. */
static int cmp_name(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int c = strcmp(host_of(sort_merge, a), host_of(sort_merge, b));
    if (c == 0)
        c = strcmp(name_of(sort_merge, a), name_of(sort_merge, b));
    return c ? c : a < b ? -1 : a > b;
}

/* same_ident: do records x and y name one device, inode, size and mtime? */
static int same_ident(const rec *x, const rec *y)
{
    return x->dev == y->dev && x->ino == y->ino && x->size == y->size && x->mtime_ns == y->mtime_ns;
}

/* cmp_ident: records by device, inode, size, mtime, filesystem (unknown,
 * 0, first), then index order. */
static int cmp_ident(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const rec *x = &sort_merge->recs[a], *y = &sort_merge->recs[b];
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    if (x->mtime_ns != y->mtime_ns)
        return x->mtime_ns < y->mtime_ns ? -1 : 1;
    if (x->fs != y->fs)
        return x->fs < y->fs ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* cmp_set: records by the file they were joined into, then index order. */
static int cmp_set(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    uint32_t sa = sort_merge->set[a], sb = sort_merge->set[b];
    if (sa != sb)
        return sa < sb ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* find / join: the union-find over records that builds the files. */
static uint32_t find(uint32_t *set, uint32_t i)
{
    while (set[i] != i) {
        set[i] = set[set[i]];
        i = set[i];
    }
    return i;
}

static void join(uint32_t *set, uint32_t a, uint32_t b)
{
    a = find(set, a);
    b = find(set, b);
    if (a != b)
        set[a < b ? b : a] = a < b ? a : b; /* the earliest record is the root */
}

/* join_names: records of one host and path are one file (an index given
 * twice, two copies of one, a rescan). idx holds every record. */
static void join_names(merge *m, uint32_t *idx, size_t n)
{
    sort_merge = m;
    qsort(idx, n, sizeof *idx, cmp_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(host_of(m, idx[i - 1]), host_of(m, idx[i])) == 0 &&
            strcmp(name_of(m, idx[i - 1]), name_of(m, idx[i])) == 0)
            join(m->set, idx[i - 1], idx[i]);
}

/* join_idents: records of one device, inode, size and mtime are one file,
 * from one host (hard links) or from several (one store seen from each,
 * cloned machines): they cannot be told apart. Where both records carry a
 * filesystem, it must agree too; a record without one (0) joins them all. */
static void join_idents(merge *m, uint32_t *idx, size_t n)
{
    sort_merge = m;
    qsort(idx, n, sizeof *idx, cmp_ident);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && same_ident(&m->recs[idx[i]], &m->recs[idx[j]]))
            j++;
        int any_unknown = m->recs[idx[i]].fs == 0; /* 0 sorts first */
        for (size_t k = i + 1; k < j; k++)
            if (any_unknown || m->recs[idx[k]].fs == m->recs[idx[k - 1]].fs)
                join(m->set, idx[k - 1], idx[k]);
        i = j;
    }
}

/* split_ns: nanoseconds since the epoch as seconds and nanoseconds. */
static void split_ns(int64_t t, int64_t *sec, long *nsec)
{
    int64_t s = t / 1000000000, ns = t % 1000000000;
    if (ns < 0) {
        ns += 1000000000;
        s--;
    }
    *sec = s;
    *nsec = (long)ns;
}

/* name_here: does record x's path name, here and now, the file x
 * describes (a regular file of its device, inode, size and mtime)? */
static int name_here(const merge *m, uint32_t x)
{
    const rec *e = &m->recs[x];
    struct stat st;
    const char *name = name_of(m, x);
    if ((m->r->o->follow_symlinks ? stat(name, &st) : lstat(name, &st)) != 0)
        return 0;
    int64_t sec;
    long nsec;
    split_ns(e->mtime_ns, &sec, &nsec);
    return S_ISREG(st.st_mode) && (uint64_t)st.st_dev == e->dev && (uint64_t)st.st_ino == e->ino &&
           (uint64_t)st.st_size == e->size && (int64_t)st.st_mtim.tv_sec == sec &&
           st.st_mtim.tv_nsec == nsec;
}

/* view_host: of the file whose records are set[0..n) (index order), the
 * host whose names stand for it: this machine, else the first host with
 * a name that reaches it here, else the first index's. */
static const char *view_host(const merge *m, const uint32_t *set, size_t n)
{
    int several = 0;
    for (size_t i = 1; i < n && !several; i++)
        several = strcmp(host_of(m, set[i]), host_of(m, set[0])) != 0;
    if (!several)
        return host_of(m, set[0]);
    for (size_t i = 0; i < n; i++)
        if (m->here != NULL && strcmp(host_of(m, set[i]), m->here) == 0)
            return m->here;
    for (size_t i = 0; i < n; i++)
        if (name_here(m, set[i]))
            return host_of(m, set[i]);
    return host_of(m, set[0]);
}

/* fill_inode: inode k's identity (and contents) from record x. */
static void fill_inode(dd_inode *k, const rec *x)
{
    k->dev = (dev_t)x->dev;
    k->ino = (ino_t)x->ino;
    k->size = x->size;
    split_ns(x->mtime_ns, &k->mtime_sec, &k->mtime_nsec);
    memcpy(k->prefix, x->prefix, 20);
    memcpy(k->full, x->sha1, 20);
    k->hashed = 1;
}

/* add_inode: the file whose records are set[0..n) (index order) as the
 * next inode: the names of its view host, each once; every record's path
 * points at it. A file whose records disagree on its size or SHA-1
 * changed between the scans: reported and left out. */
static void add_inode(merge *m, const uint32_t *set, size_t n, size_t *out)
{
    dd_run *r = m->r;
    uint32_t k = (uint32_t)r->ninodes++;
    dd_inode *in = &r->inodes[k];
    const char *view = view_host(m, set, n);
    int differ = 0;
    in->first = (uint32_t)*out;
    for (size_t i = 0; i < n; i++) {
        const rec *x = &m->recs[set[i]];
        r->paths[set[i]].inode = k;
        differ |= x->size != m->recs[set[0]].size || memcmp(x->sha1, m->recs[set[0]].sha1, 20);
        if (strcmp(host_of(m, set[i]), view) != 0)
            continue; /* the file seen from another host */
        int dup = 0;
        for (size_t q = in->first; q < *out && !dup; q++)
            dup = strcmp(name_of(m, r->by_inode[q]), name_of(m, set[i])) == 0;
        if (dup)
            continue;
        if (*out == in->first) {
            fill_inode(in, x);
            m->first[k] = set[i];
        }
        r->by_inode[(*out)++] = set[i];
    }
    in->npaths = (uint32_t)(*out - in->first);
    in->cls = k;
    if (differ)
        dd_fail_inode(r, k,
                      "listed with different sizes or SHA-1s (it changed between the scans): "
                      "left out");
}

/* build: the run's paths and inodes from the records: each file (records
 * joined by name and by identity) one inode. Returns 0 or ENOMEM. */
static int build(merge *m)
{
    dd_run *r = m->r;
    size_t n = m->nrecs, alloc = n ? n : 1;
    uint32_t *idx = malloc(alloc * sizeof *idx);
    m->set = malloc(alloc * sizeof *m->set);
    r->paths = calloc(alloc, sizeof *r->paths);
    r->by_inode = malloc(alloc * sizeof *r->by_inode);
    r->inodes = calloc(alloc, sizeof *r->inodes);
    m->first = malloc(alloc * sizeof *m->first);
    if (idx == NULL || m->set == NULL || r->paths == NULL || r->by_inode == NULL ||
        r->inodes == NULL || m->first == NULL) {
        free(idx);
        return ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        idx[i] = m->set[i] = (uint32_t)i;
        r->paths[i].name = m->recs[i].name;
        r->paths[i].order = (uint32_t)i;
    }
    r->npaths = n;
    join_names(m, idx, n);
    join_idents(m, idx, n);
    for (size_t i = 0; i < n; i++)
        m->set[i] = find(m->set, (uint32_t)i);
    sort_merge = m;
    qsort(idx, n, sizeof *idx, cmp_set);
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && m->set[idx[j]] == m->set[idx[i]])
            j++;
        add_inode(m, idx + i, j - i, &out);
        i = j;
    }
    free(idx);
    return 0;
}

/* reachable: is inode k here (one of its names names the file its record
 * describes, unchanged)? That name is moved first, so reads open it, and
 * the inode takes its record's identity, which the reads check. */
static int reachable(merge *m, uint32_t k)
{
    dd_run *r = m->r;
    dd_inode *in = &r->inodes[k];
    for (uint32_t p = 0; p < in->npaths; p++) {
        uint32_t *slot = &r->by_inode[in->first + p];
        if (!name_here(m, *slot))
            continue;
        fill_inode(in, &m->recs[*slot]);
        uint32_t x = r->by_inode[in->first];
        r->by_inode[in->first] = *slot;
        *slot = x;
        return 1;
    }
    return 0;
}

/* cmp_here: inodes by inode number and device (as reached here), then
 * index. */
static int cmp_here(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const dd_inode *x = &sort_merge->r->inodes[a], *y = &sort_merge->r->inodes[b];
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* one_file_here: among the reachable inodes list[0..nr), those that are
 * one file here (the same device and inode now, which the indexes told
 * apart only by their filesystems; or one inode seen through a stacked
 * filesystem, fs_id_one_file) must never be compared with each other:
 * each later one becomes an alias of the first (m->alias). The distinct
 * files go first, the aliases after them. Returns how many are distinct. */
static size_t one_file_here(merge *m, uint32_t *list, size_t nr)
{
    sort_merge = m;
    qsort(list, nr, sizeof *list, cmp_here);
    const dd_inode *in = m->r->inodes;
    size_t kept = 0, run = 0; /* list[run..kept): the distinct ones of this inode number */
    for (size_t i = 0; i < nr; i++) {
        uint32_t k = list[i];
        if (kept > run && in[list[run]].ino != in[k].ino)
            run = kept;
        for (size_t q = run; q < kept && m->alias[k] == UINT32_MAX; q++)
            if (fs_id_one_file(in[list[q]].dev, in[list[q]].ino, in[k].dev, in[k].ino))
                m->alias[k] = list[q];
        if (m->alias[k] != UINT32_MAX)
            continue;
        list[i] = list[kept]; /* an alias, or k itself */
        list[kept++] = k;
    }
    return kept;
}

/* fold_alias: inode a, an alias of b (one file here), joins b after b was
 * classified: its names of b's host are more names of b (hard links), its
 * names of other hosts are b seen from there (left out, as in build). */
static void fold_alias(merge *m, uint32_t a, uint32_t b)
{
    dd_run *r = m->r;
    dd_inode *in = &r->inodes[a];
    if (r->inodes[b].state != DD_ALIVE) {
        in->state = DD_FAILED; /* b was reported */
        return;
    }
    const char *view = host_of(m, r->by_inode[r->inodes[b].first]);
    uint32_t kept = 0;
    for (uint32_t p = 0; p < in->npaths; p++) {
        uint32_t x = r->by_inode[in->first + p];
        r->paths[x].inode = b;
        if (strcmp(host_of(m, x), view) == 0)
            r->by_inode[in->first + kept++] = x;
    }
    in->npaths = kept;
    in->cls = r->inodes[b].cls;
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
 * are compared (dd_classify), each with the others that are distinct
 * files here (never a file with itself), the others join the one content
 * found, or are left out when there are two (found here, or by a scan). */
static void settle(merge *m, uint32_t *list, size_t n)
{
    dd_run *r = m->r;
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        m->reach[list[i]] = (uint8_t)reachable(m, list[i]);
        if (m->reach[list[i]]) { /* reachable ones first */
            uint32_t x = list[nr];
            list[nr++] = list[i];
            list[i] = x;
        }
    }
    int two = scan_collision(m, list, n);
    size_t nc = one_file_here(m, list, nr); /* then list[nc..nr): aliases */
    dd_classify(r, list, NULL, nc);
    for (size_t i = nc; i < nr; i++)
        fold_alias(m, list[i], m->alias[list[i]]);
    uint32_t cls = UINT32_MAX;
    for (size_t i = 0; i < nc; i++) {
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

/* group_all: candidates (files not left out) by size and SHA-1, settled.
 * Returns 0 or ENOMEM. */
static int group_all(merge *m)
{
    dd_run *r = m->r;
    size_t alloc = r->ninodes ? r->ninodes : 1, n = 0;
    uint32_t *order = malloc(alloc * sizeof *order);
    m->reach = calloc(alloc, 1);
    m->alias = malloc(alloc * sizeof *m->alias);
    if (order == NULL || m->reach == NULL || m->alias == NULL) {
        free(order);
        return ENOMEM;
    }
    for (uint32_t k = 0; k < r->ninodes; k++) {
        m->alias[k] = UINT32_MAX;
        if (r->inodes[k].state == DD_ALIVE)
            order[n++] = k;
    }
    sort_merge = m;
    qsort(order, n, sizeof *order, cmp_content);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && r->inodes[order[j]].size == r->inodes[order[i]].size &&
               memcmp(r->inodes[order[j]].full, r->inodes[order[i]].full, 20) == 0)
            j++;
        if (j - i > 1 || r->inodes[order[i]].npaths > 1)
            settle(m, order + i, j - i);
        i = j;
    }
    free(order);
    return dd_make_groups(r) == 0 ? 0 : ENOMEM;
}

/* names_kept: the files scanned: the names that stand for the files,
 * each once (a name listed twice, or a file's names on other hosts, are
 * not counted again). */
static uint64_t names_kept(const dd_run *r)
{
    uint64_t count = 0;
    for (size_t k = 0; k < r->ninodes; k++)
        count += r->inodes[k].npaths;
    return count;
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
    d->sha1_only = d->indexes_files = 0;
    char here[256] = "";
    if (gethostname(here, sizeof here - 1) == 0 && here[0] != '\0')
        m.here = here;
    m.hosts = calloc(n, sizeof *m.hosts);
    int rc = m.hosts != NULL ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = read_index(&m, indexes[i], (uint32_t)i);
    r.meter = progress_open(stderr, o->quiet || rc != 0);
    int err = 0;
    if (rc == 0) {
        d->indexes_files = m.nrecs;
        err = build(&m);
        if (err == 0)
            err = group_all(&m);
        if (err == 0)
            err = mark_proof(&m);
        r.scanned = names_kept(&r);
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
    free(m.alias);
    free(m.set);
    free(m.first);
    dd_dirs_free(&r);
    dd_engine_stop(&r);
    dd_free(&r);
    return status;
}
