/*
 * dedup_dirtree.c - reading directory trees for `dedup --dirs`: the
 * signature of a directory (a SHA-1 over its sorted entries, used only to
 * find candidates) and the exact comparison of two directories, which
 * alone decides that they are identical.
 *
 * Two directories are identical when they list the same names (bytewise)
 * and each name is, in both, of one type with equal contents:
 *  - regular files: both examined by the scan and in one class (equal
 *    size, SHA-1 and bytes, proven by the stages), or one inode (hard
 *    links), or both empty, or both under --min-size and equal byte for
 *    byte (compared here); a file the scan did not examine although it
 *    should have (it appeared, or lies outside the DIRs), one that failed
 *    or changed since the scan makes the directory identical to none;
 *  - directories: identical by this rule, recursively;
 *  - symbolic links (not followed without -L): the same target text.
 * Anything else (a FIFO, a socket, a device, an unreadable entry) makes
 * the directory identical to none. Names, types and contents count;
 * modes, owners and times do not.
 *
 * Owns: reading directories, signatures, the exact comparison. Must not:
 * call two directories identical without comparing every entry, or print.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dedup_dirs.h"

#define MAX_DEPTH 1024
#define CMP_CHUNK 65536

/* A directory's names, sorted bytewise. */
typedef struct {
    char **names;
    size_t n;
} listing;

static void listing_free(listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* list_dir: the names in path but . and .., sorted. Returns 0 or -1. */
static int list_dir(const char *path, listing *l)
{
    memset(l, 0, sizeof *l);
    DIR *d = opendir(path);
    if (d == NULL)
        return -1;
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *name = strdup(e->d_name);
        if (name == NULL || cli_grow((void **)&l->names, &cap, l->n + 1, sizeof *l->names) != 0) {
            free(name);
            rc = -1;
            break;
        }
        l->names[l->n++] = name;
    }
    closedir(d);
    if (rc != 0) {
        listing_free(l);
        return -1;
    }
    if (l->n > 1)
        qsort(l->names, l->n, sizeof *l->names, cmp_name);
    return 0;
}

/* join: "dir/name" (no doubled '/'), malloc'd, or NULL. */
static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    int slash = a > 0 && dir[a - 1] != '/';
    char *p = malloc(a + b + 2);
    if (p == NULL)
        return NULL;
    memcpy(p, dir, a);
    if (slash)
        p[a++] = '/';
    memcpy(p + a, name, b + 1);
    return p;
}

/* stat_entry: the entry as the walk would see it (links followed with -L). */
static int stat_entry(const dd_dir_table *t, const char *path, struct stat *st)
{
    return t->r->o->follow_symlinks ? stat(path, st) : lstat(path, st);
}

/* find_inode: the scan's alive inode that is st, unchanged since the
 * walk; UINT32_MAX when the scan has no such inode; DD_DIR_CHANGED when
 * it has one that failed or changed. */
#define DD_DIR_CHANGED (UINT32_MAX - 1)
static uint32_t find_inode(const dd_dir_table *t, const struct stat *st)
{
    const dd_run *r = t->r;
    size_t lo = 0, hi = t->nids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const dd_inode *k = &r->inodes[t->by_id[mid]];
        if (k->dev < st->st_dev || (k->dev == st->st_dev && k->ino < st->st_ino))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->nids)
        return UINT32_MAX;
    const dd_inode *k = &r->inodes[t->by_id[lo]];
    if (k->dev != st->st_dev || k->ino != st->st_ino)
        return UINT32_MAX;
    if (k->state != DD_ALIVE || k->size != (uint64_t)st->st_size ||
        k->mtime_sec != (int64_t)st->st_mtim.tv_sec || k->mtime_nsec != st->st_mtim.tv_nsec)
        return DD_DIR_CHANGED;
    return t->by_id[lo];
}

/* unscanned_ok: may a regular file the scan did not keep be compared
 * here? Only empty ones and ones under --min-size (which the scan leaves
 * out on purpose); any other was not examined. */
static int unscanned_ok(const dd_dir_table *t, const struct stat *st)
{
    return st->st_size == 0 || (uint64_t)st->st_size < t->r->o->min_size;
}

/* One signing walk: the directories on its path (loops with -L). */
typedef struct {
    dev_t dev[MAX_DEPTH];
    ino_t ino[MAX_DEPTH];
    size_t depth;
} dir_stack;

static int on_stack(const dir_stack *s, const struct stat *st)
{
    for (size_t i = 0; i < s->depth; i++)
        if (s->dev[i] == st->st_dev && s->ino[i] == st->st_ino)
            return 1;
    return 0;
}

/* A signature being computed. */
typedef struct {
    EVP_MD_CTX *md;
    uint64_t files, bytes;
} sig_acc;

static void sig_add(sig_acc *a, char kind, const char *name, const void *data, size_t len)
{
    uint64_t nl = strlen(name);
    EVP_DigestUpdate(a->md, &kind, 1);
    EVP_DigestUpdate(a->md, &nl, sizeof nl);
    EVP_DigestUpdate(a->md, name, nl);
    EVP_DigestUpdate(a->md, &len, sizeof len);
    EVP_DigestUpdate(a->md, data, len);
}

static int sign_path(dd_dir_table *t, const char *path, dir_stack *s, uint8_t sig[20],
                     uint64_t *files, uint64_t *bytes);

/* sign_subdir: a subdirectory's signature, from the table when it is a
 * node there. Returns 1 (eligible) or 0. */
static int sign_subdir(dd_dir_table *t, const char *child, dir_stack *s, uint8_t sig[20],
                       uint64_t *files, uint64_t *bytes)
{
    uint32_t n = dd_dir_lookup(t, child);
    if (n == UINT32_MAX)
        return sign_path(t, child, s, sig, files, bytes);
    if (t->nodes[n].state == DD_DIR_TODO)
        dd_dir_sign(t, n, s);
    const dd_dir_node *nd = &t->nodes[n];
    memcpy(sig, nd->sig, 20);
    *files = nd->files;
    *bytes = nd->bytes;
    return nd->state == DD_DIR_OK;
}

/* sign_entry: adds one entry to the signature. Returns 1 or 0 (the
 * directory cannot be identical to another). */
static int sign_entry(dd_dir_table *t, const char *child, const char *name, dir_stack *s,
                      sig_acc *a)
{
    struct stat st;
    if (stat_entry(t, child, &st) != 0)
        return 0;
    if (S_ISREG(st.st_mode)) {
        uint32_t k = find_inode(t, &st);
        uint64_t size = (uint64_t)st.st_size;
        a->files++;
        a->bytes += size;
        if (k == DD_DIR_CHANGED || (k == UINT32_MAX && !unscanned_ok(t, &st)))
            return 0;
        uint64_t v[2] = {size, k == UINT32_MAX || size == 0 ? UINT64_MAX : t->r->inodes[k].cls};
        sig_add(a, 'F', name, v, sizeof v);
        return 1;
    }
    if (S_ISDIR(st.st_mode)) {
        if (s->depth >= MAX_DEPTH || on_stack(s, &st))
            return 0;
        s->dev[s->depth] = st.st_dev;
        s->ino[s->depth++] = st.st_ino;
        uint8_t sub[20];
        uint64_t f = 0, b = 0;
        int ok = sign_subdir(t, child, s, sub, &f, &b);
        s->depth--;
        a->files += f;
        a->bytes += b;
        sig_add(a, 'D', name, sub, 20);
        return ok;
    }
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlink(child, target, sizeof target);
        if (n < 0 || (size_t)n >= sizeof target)
            return 0;
        sig_add(a, 'L', name, target, (size_t)n);
        return 1;
    }
    return 0;
}

/* sign_path: the signature of directory path and its files and bytes.
 * Returns 1 when it may be identical to another, else 0. */
static int sign_path(dd_dir_table *t, const char *path, dir_stack *s, uint8_t sig[20],
                     uint64_t *files, uint64_t *bytes)
{
    listing l;
    sig_acc a = {EVP_MD_CTX_new(), 0, 0};
    memset(sig, 0, 20);
    if (a.md == NULL || EVP_DigestInit_ex(a.md, EVP_sha1(), NULL) != 1) {
        EVP_MD_CTX_free(a.md);
        return 0;
    }
    int ok = list_dir(path, &l) == 0;
    for (size_t i = 0; ok && i < l.n; i++) {
        char *child = join(path, l.names[i]);
        ok = child != NULL && sign_entry(t, child, l.names[i], s, &a);
        free(child);
    }
    unsigned len = 20;
    EVP_DigestFinal_ex(a.md, sig, &len);
    EVP_MD_CTX_free(a.md);
    listing_free(&l);
    *files = a.files;
    *bytes = a.bytes;
    return ok;
}

void dd_dir_sign(dd_dir_table *t, uint32_t node, void *stack)
{
    dir_stack *s = stack, own;
    if (s == NULL) {
        own.depth = 0;
        s = &own;
    }
    dd_dir_node *nd = &t->nodes[node];
    nd->state = DD_DIR_BAD; /* while it is computed: a loop finds it bad */
    struct stat st;
    if (stat(nd->path, &st) != 0 || !S_ISDIR(st.st_mode))
        return;
    uint8_t sig[20] = {0};
    uint64_t files = 0, bytes = 0;
    int ok = s->depth < MAX_DEPTH;
    if (ok) {
        s->dev[s->depth] = st.st_dev;
        s->ino[s->depth++] = st.st_ino;
        ok = sign_path(t, nd->path, s, sig, &files, &bytes);
        s->depth--;
    }
    nd = &t->nodes[node];
    nd->dev = st.st_dev;
    nd->ino = st.st_ino;
    memcpy(nd->sig, sig, 20);
    nd->files = files;
    nd->bytes = bytes;
    nd->state = ok ? DD_DIR_OK : DD_DIR_BAD;
}

/* same_small: are the regular files a and b (sizes equal, both as
 * st_a and st_b) equal byte for byte? 1 or 0 (0 too when one cannot be
 * read: then they are not proven equal). */
static int same_small(dd_dir_table *t, const char *a, const char *b, const struct stat *sa,
                      const struct stat *sb)
{
    int fa = open(a, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int fb = open(b, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    unsigned char *x = malloc(CMP_CHUNK), *y = malloc(CMP_CHUNK);
    struct stat s1, s2;
    int eq = fa >= 0 && fb >= 0 && x != NULL && y != NULL && fstat(fa, &s1) == 0 &&
             fstat(fb, &s2) == 0 && s1.st_ino == sa->st_ino && s1.st_dev == sa->st_dev &&
             s2.st_ino == sb->st_ino && s2.st_dev == sb->st_dev;
    uint64_t left = (uint64_t)sa->st_size + 1; /* one more: the end must come */
    while (eq && left > 0) {
        size_t want = left < CMP_CHUNK ? (size_t)left : CMP_CHUNK;
        ssize_t n1 = read(fa, x, want), n2 = read(fb, y, want);
        if (n1 < 0 || n1 != n2 || memcmp(x, y, (size_t)n1) != 0)
            eq = 0;
        else if (n1 == 0)
            break;
        else
            left -= (uint64_t)n1;
    }
    if (eq && left != 1)
        eq = 0; /* not the size the stat said */
    if (eq)
        t->r->compared_bytes += (uint64_t)sa->st_size;
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    free(x);
    free(y);
    return eq;
}

/* same_file: are regular files a and b equal (see the top)? */
static int same_file(dd_dir_table *t, const char *a, const char *b, const struct stat *sa,
                     const struct stat *sb, uint64_t *reclaim)
{
    if (sa->st_size != sb->st_size)
        return 0;
    int one = sa->st_dev == sb->st_dev && sa->st_ino == sb->st_ino;
    if (!one)
        *reclaim += (uint64_t)sa->st_size;
    uint32_t ka = find_inode(t, sa), kb = find_inode(t, sb);
    if (ka == DD_DIR_CHANGED || kb == DD_DIR_CHANGED)
        return 0;
    if (sa->st_size == 0 || one)
        return 1;
    if (ka != UINT32_MAX && kb != UINT32_MAX)
        return t->r->inodes[ka].cls == t->r->inodes[kb].cls;
    if (ka == UINT32_MAX && kb == UINT32_MAX && unscanned_ok(t, sa))
        return same_small(t, a, b, sa, sb);
    return 0;
}

static int same_dir(dd_dir_table *t, const char *a, const char *b, size_t depth, uint64_t *reclaim);

/* same_entry: is entry a (in one directory) equal to entry b? */
static int same_entry(dd_dir_table *t, const char *a, const char *b, size_t depth,
                      uint64_t *reclaim)
{
    struct stat sa, sb;
    if (stat_entry(t, a, &sa) != 0 || stat_entry(t, b, &sb) != 0)
        return 0;
    if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT))
        return 0;
    if (S_ISREG(sa.st_mode))
        return same_file(t, a, b, &sa, &sb, reclaim);
    if (S_ISDIR(sa.st_mode))
        return depth < MAX_DEPTH && same_dir(t, a, b, depth + 1, reclaim);
    if (S_ISLNK(sa.st_mode)) {
        char ta[4096], tb[4096];
        ssize_t na = readlink(a, ta, sizeof ta), nb = readlink(b, tb, sizeof tb);
        return na >= 0 && na == nb && (size_t)na < sizeof ta && memcmp(ta, tb, (size_t)na) == 0;
    }
    return 0;
}

/* same_dir: are directories a and b identical (see the top)? */
static int same_dir(dd_dir_table *t, const char *a, const char *b, size_t depth, uint64_t *reclaim)
{
    listing la, lb;
    if (list_dir(a, &la) != 0)
        return 0;
    if (list_dir(b, &lb) != 0) {
        listing_free(&la);
        return 0;
    }
    int eq = la.n == lb.n;
    for (size_t i = 0; eq && i < la.n; i++) {
        if (strcmp(la.names[i], lb.names[i]) != 0) {
            eq = 0;
            break;
        }
        char *ca = join(a, la.names[i]), *cb = join(b, lb.names[i]);
        eq = ca != NULL && cb != NULL && same_entry(t, ca, cb, depth, reclaim);
        free(ca);
        free(cb);
    }
    listing_free(&la);
    listing_free(&lb);
    return eq;
}

int dd_dir_same(dd_dir_table *t, const char *a, const char *b, uint64_t *reclaim)
{
    *reclaim = 0;
    return same_dir(t, a, b, 0, reclaim);
}
