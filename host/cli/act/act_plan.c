/*
 * act_plan.c - the plan `link` and `remove` act on: what `dedup --json`
 * prints (roots[] of path, path_hex, device and inode; groups[] of size,
 * sha1 and files[] of path, path_hex, device, inode and, when present,
 * mtime_ns and host), read through json_read.c's cursor, or built
 * directly by `dedup --action`.
 *
 * A name is path_hex's bytes when present (a name that is not UTF-8),
 * else path. Every field a run relies on is checked here, so a plan that
 * is accepted can be acted on: a bad plan is refused whole, naming the
 * place ("roots[2]: ...", "groups[3].files[1]: ..."), before anything is
 * done. "roots" may be absent or null (plans made before roots were
 * recorded, or by a merge); a file's "host" equal to this machine's name
 * (gethostname) is this host, any other is kept once in hosts[].
 *
 * Memory: a plan is read a file entry at a time (the cursor holds a
 * window of the text and one entry's tree), and every name is kept in
 * one arena (act_names), so a plan in memory is about its files, groups
 * and names, not its text.
 *
 * Owns: the plan's layout, its arena and its validation. Must not: touch
 * the files it names, print, or exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act.h"
#include "cli.h"
#include "json_read.h"

/* ---- the names' arena -------------------------------------------------- */

#define NAMES_BLOCK ((size_t)1 << 20)

/* One block of the arena; the plan holds the newest, each the one before. */
struct act_names {
    struct act_names *next;
    size_t used, cap;
    char data[];
};

/* names_alloc: n bytes kept until act_plan_free, or NULL. */
static char *names_alloc(act_plan *p, size_t n)
{
    struct act_names *b = p->names;
    if (b == NULL || b->cap - b->used < n) {
        size_t cap = n > NAMES_BLOCK ? n : NAMES_BLOCK;
        if (cap > SIZE_MAX - sizeof *b || (b = malloc(sizeof *b + cap)) == NULL)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = p->names;
        p->names = b;
    }
    char *s = b->data + b->used;
    b->used += n;
    return s;
}

/* names_copy: s[0..len) and a NUL, kept in the arena, or NULL. */
static char *names_copy(act_plan *p, const char *s, size_t len)
{
    char *copy = len < SIZE_MAX ? names_alloc(p, len + 1) : NULL;
    if (copy != NULL) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

/* grow_pow2: room for one more in *arr of n elements (roots, hosts: no
 * capacity is kept, it is the power of two at or above n). 0 or ENOMEM. */
static int grow_pow2(void **arr, size_t n, size_t size)
{
    if (n != 0 && (n & (n - 1)) != 0)
        return 0;
    size_t cap = n ? 2 * n : 1;
    if (cap > SIZE_MAX / size)
        return ENOMEM;
    void *a = realloc(*arr, cap * size);
    if (a == NULL)
        return ENOMEM;
    *arr = a;
    return 0;
}

/* ---- building a plan --------------------------------------------------- */

int act_plan_add_group(act_plan *p, uint64_t size, const char *sha1_hex)
{
    if (cli_grow((void **)&p->groups, &p->cap_groups, p->ngroups + 1, sizeof *p->groups) != 0)
        return ENOMEM;
    act_group *g = &p->groups[p->ngroups++];
    memset(g, 0, sizeof *g);
    g->size = size;
    g->first = p->nfiles;
    if (sha1_hex)
        snprintf(g->sha1, sizeof g->sha1, "%s", sha1_hex);
    return 0;
}

/* push_file: a file whose name is kept already, into the last group. */
static int push_file(act_plan *p, char *name, uint64_t dev, uint64_t ino, int has_mtime,
                     int64_t mtime_ns, uint32_t host)
{
    if (cli_grow((void **)&p->files, &p->cap_files, p->nfiles + 1, sizeof *p->files) != 0)
        return ENOMEM;
    act_file *f = &p->files[p->nfiles++];
    f->path = name;
    f->dev = dev;
    f->ino = ino;
    f->has_mtime = has_mtime;
    f->mtime_ns = mtime_ns;
    f->host = host;
    p->groups[p->ngroups - 1].n++;
    return 0;
}

int act_plan_add_file(act_plan *p, const char *path, size_t len, uint64_t dev, uint64_t ino,
                      int has_mtime, int64_t mtime_ns)
{
    char *copy = names_copy(p, path, len);
    if (copy == NULL)
        return ENOMEM;
    return push_file(p, copy, dev, ino, has_mtime, mtime_ns, ACT_THIS_HOST);
}

/* push_root: a root whose path is kept already. */
static int push_root(act_plan *p, char *path, uint64_t dev, uint64_t ino)
{
    if (grow_pow2((void **)&p->roots, p->nroots, sizeof *p->roots) != 0)
        return ENOMEM;
    p->roots[p->nroots++] = (act_root){path, dev, ino};
    return 0;
}

int act_plan_add_root(act_plan *p, const char *path, uint64_t dev, uint64_t ino)
{
    char *copy = names_copy(p, path, strlen(path));
    if (copy == NULL)
        return ENOMEM;
    return push_root(p, copy, dev, ino);
}

void act_plan_free(act_plan *p)
{
    for (struct act_names *b = p->names, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    free(p->files);
    free(p->groups);
    free(p->roots);
    free(p->hosts);
    memset(p, 0, sizeof *p);
}

/* ---- reading a plan ---------------------------------------------------- */

/* A place in the plan, for messages: "groups[3].files[1]", "roots[2]". */
typedef enum { AT_GROUP, AT_FILE, AT_ROOT } place_kind;

typedef struct {
    place_kind kind;
    size_t i, f; /* the group or root; the file in the group */
} place;

/* The other hosts seen so far: open addressing over hosts[] (index + 1;
 * 0 is empty), a power of two slots, at most half full. */
typedef struct {
    uint32_t *slot;
    size_t nslots;
} host_set;

/* What a read of one plan holds. */
typedef struct {
    act_plan *p;
    json_cursor *c;
    char *err;
    size_t cap;
    int refused;    /* err says what is wrong in a value read whole */
    char self[256]; /* this machine's name ("" when unknown) */
    host_set hosts;
} reader;

/* refuse: what is wrong in the plan (not in its syntax) into err. */
static int refuse(reader *r, const char *what)
{
    snprintf(r->err, r->cap, "%s", what);
    r->refused = 1;
    return -1;
}

static int bad(reader *r, const place *at, const char *what)
{
    r->refused = 1;
    if (at->kind == AT_FILE)
        snprintf(r->err, r->cap, "groups[%zu].files[%zu]: %s", at->i, at->f, what);
    else
        snprintf(r->err, r->cap, "%s[%zu]: %s", at->kind == AT_ROOT ? "roots" : "groups", at->i,
                 what);
    return -1;
}

/* not_kind: the value at the cursor is not what was expected: its own
 * syntax errors first (they say the exact place), else what. */
static int not_kind(reader *r, const place *at, const char *what)
{
    if (json_cursor_value(r->c) == NULL)
        return -1;
    return bad(r, at, what);
}

static int not_a_plan(reader *r)
{
    return refuse(r, "not a dedup plan: no \"groups\" array at the top (made by "
                     "`hashbatch dedup --json`)");
}

/* twice: a member that may be given once only was repeated (which one
 * counts would be a guess); its value is read, for its syntax. */
static int twice(reader *r, const place *at, const char *member)
{
    if (json_cursor_value(r->c) == NULL)
        return -1;
    char what[64];
    snprintf(what, sizeof what, "\"%s\" given twice", member);
    return at != NULL ? bad(r, at, what) : refuse(r, what);
}

static int is_key(const char *key, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(key, want, len) == 0;
}

/* get_uint: member key of v as an unsigned integer. */
static int get_uint(const json_value *v, const char *key, uint64_t *out)
{
    const json_value *m = json_get(v, key);
    if (m == NULL || m->kind != JSON_NUMBER || !m->is_uint)
        return -1;
    *out = m->u;
    return 0;
}

/* get_mtime: the optional "mtime_ns" (an integer, possibly negative).
 * Returns 1 present, 0 absent or null, -1 malformed. */
static int get_mtime(const json_value *v, int64_t *out)
{
    const json_value *m = json_get(v, "mtime_ns");
    if (m == NULL || m->kind == JSON_NULL)
        return 0;
    if (m->kind != JSON_NUMBER)
        return -1;
    char *end;
    errno = 0;
    long long x = strtoll(m->str, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = (int64_t)x;
    return 1;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* get_name: the name of a file or root (path_hex's bytes, else path),
 * kept in p's arena, into *name. Returns 0 or -1 with *what. */
static int get_name(act_plan *p, const json_value *v, char **name, const char **what)
{
    const json_value *hex = json_get(v, "path_hex");
    const json_value *path = json_get(v, "path");
    if (hex != NULL) {
        if (hex->kind != JSON_STRING || hex->len % 2 != 0 || hex->len == 0) {
            *what = "\"path_hex\" is not an even number of hex digits";
            return -1;
        }
        char *s = names_alloc(p, hex->len / 2 + 1);
        if (s == NULL) {
            *what = strerror(ENOMEM);
            return -1;
        }
        for (size_t i = 0; i < hex->len / 2; i++) {
            int h = hex_digit(hex->str[2 * i]), l = hex_digit(hex->str[2 * i + 1]);
            if (h < 0 || l < 0 || (h == 0 && l == 0)) {
                *what = "\"path_hex\" is not hex digits of a name (or holds a NUL byte)";
                return -1;
            }
            s[i] = (char)(h * 16 + l);
        }
        s[hex->len / 2] = '\0';
        *name = s;
        return 0;
    }
    if (path == NULL || path->kind != JSON_STRING || path->len == 0 ||
        memchr(path->str, '\0', path->len) != NULL) {
        *what = "missing \"path\" (a non-empty string without NUL)";
        return -1;
    }
    if ((*name = names_copy(p, path->str, path->len)) == NULL) {
        *what = strerror(ENOMEM);
        return -1;
    }
    return 0;
}

/* hash_name: FNV-1a of s. */
static size_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return (size_t)h;
}

/* host_slot: the slot of name in the set: its own, or the empty one
 * where it belongs. */
static uint32_t *host_slot(const reader *r, const char *name)
{
    size_t mask = r->hosts.nslots - 1;
    for (size_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
        uint32_t *s = &r->hosts.slot[i];
        if (*s == 0 || strcmp(r->p->hosts[*s - 1], name) == 0)
            return s;
    }
}

/* host_rehash: room for one more host in the set. 0 or ENOMEM. */
static int host_rehash(reader *r)
{
    if (r->hosts.nslots / 2 > r->p->nhosts)
        return 0;
    size_t n = r->hosts.nslots ? r->hosts.nslots * 2 : 16;
    uint32_t *slot = calloc(n, sizeof *slot);
    if (slot == NULL)
        return ENOMEM;
    free(r->hosts.slot);
    r->hosts.slot = slot;
    r->hosts.nslots = n;
    for (size_t i = 0; i < r->p->nhosts; i++)
        *host_slot(r, r->p->hosts[i]) = (uint32_t)(i + 1);
    return 0;
}

/* get_host: the optional "host" of a file: ACT_THIS_HOST when absent,
 * null or this machine's name, else its index in hosts[] (added the first
 * time). Returns 0 or -1 with *what. */
static int get_host(reader *r, const json_value *f, uint32_t *host, const char **what)
{
    const json_value *h = json_get(f, "host");
    *host = ACT_THIS_HOST;
    if (h == NULL || h->kind == JSON_NULL)
        return 0;
    if (h->kind != JSON_STRING || memchr(h->str, '\0', h->len) != NULL) {
        *what = "\"host\" is not a machine's name (a string without NUL)";
        return -1;
    }
    if (r->self[0] != '\0' && strcmp(h->str, r->self) == 0)
        return 0;
    act_plan *p = r->p;
    *what = strerror(ENOMEM);
    if (p->nhosts >= ACT_THIS_HOST - 1 || host_rehash(r) != 0)
        return -1;
    uint32_t *s = host_slot(r, h->str);
    if (*s == 0) {
        char *name = names_copy(p, h->str, h->len);
        if (name == NULL || grow_pow2((void **)&p->hosts, p->nhosts, sizeof *p->hosts) != 0)
            return -1;
        p->hosts[p->nhosts++] = name;
        *s = (uint32_t)p->nhosts;
    }
    *host = *s - 1;
    return 0;
}

/* add_file: one entry of a group's files[]. */
static int add_file(reader *r, const json_value *f, const place *at)
{
    if (f->kind != JSON_OBJECT)
        return bad(r, at, "not an object");
    uint64_t dev, ino;
    if (get_uint(f, "device", &dev) != 0)
        return bad(r, at, "missing \"device\" (an unsigned integer)");
    if (get_uint(f, "inode", &ino) != 0)
        return bad(r, at, "missing \"inode\" (an unsigned integer)");
    int64_t mtime = 0;
    int has_mtime = get_mtime(f, &mtime);
    if (has_mtime < 0)
        return bad(r, at, "\"mtime_ns\" is not an integer");
    char *name;
    uint32_t host;
    const char *what;
    if (get_host(r, f, &host, &what) != 0 || get_name(r->p, f, &name, &what) != 0)
        return bad(r, at, what);
    int rc = push_file(r->p, name, dev, ino, has_mtime, mtime, host);
    return rc == 0 ? 0 : bad(r, at, strerror(rc));
}

/* read_files: a group's "files", an entry at a time. The first wrong
 * entry's message goes to wrong (cap bytes: the group's own faults are
 * said first, as when a plan was read whole) and the rest are read for
 * their syntax alone. Returns 0, 1 when "files" is not an array (read),
 * or -1 on a syntax error. */
static int read_files(reader *r, const place *at, char *wrong, size_t cap)
{
    int k = json_cursor_enter(r->c, JSON_ARRAY);
    if (k <= 0)
        return k < 0 || json_cursor_value(r->c) == NULL ? -1 : 1;
    place fat = {AT_FILE, at->i, 0};
    for (; (k = json_cursor_next(r->c, NULL, NULL)) > 0; fat.f++) {
        const json_value *f = json_cursor_value(r->c);
        if (f == NULL)
            return -1;
        if (wrong[0] == '\0' && add_file(r, f, &fat) != 0)
            snprintf(wrong, cap, "%s", r->err);
    }
    return k;
}

/* check_sha1: a group's "sha1": 40 hex digits (copied to out) or null.
 * Returns NULL, or what is wrong. */
static const char *check_sha1(const json_value *v, char out[41])
{
    if (v->kind == JSON_NULL) {
        out[0] = '\0';
        return NULL;
    }
    if (v->kind != JSON_STRING)
        return "\"sha1\" is neither a string nor null";
    if (v->len != 40)
        return "\"sha1\" is not 40 hex digits";
    for (size_t i = 0; i < 40; i++)
        if (hex_digit(v->str[i]) < 0)
            return "\"sha1\" is not 40 hex digits";
    memcpy(out, v->str, 41);
    return NULL;
}

/* read_group: one entry of groups[]: its members in any order (a member
 * named twice: the last one counts, as json_get has it; but "files" may
 * be given once only, since its entries are taken as they come). */
static int read_group(reader *r, const place *at)
{
    int k = json_cursor_enter(r->c, JSON_OBJECT);
    if (k <= 0)
        return k < 0 ? -1 : not_kind(r, at, "not an object");
    if (act_plan_add_group(r->p, 0, NULL) != 0)
        return bad(r, at, strerror(ENOMEM));
    size_t gi = r->p->ngroups - 1;
    int has_size = 0, has_files = 0, files_ok = 0;
    uint64_t size = 0;
    char sha1[41] = "", file_wrong[256] = "";
    const char *sha1_wrong = NULL, *key;
    size_t klen;
    while ((k = json_cursor_next(r->c, &key, &klen)) > 0) {
        if (is_key(key, klen, "files")) {
            if (has_files++)
                return twice(r, at, "files");
            if ((files_ok = read_files(r, at, file_wrong, sizeof file_wrong)) < 0)
                return -1;
            files_ok = files_ok == 0;
            continue;
        }
        int want_size = is_key(key, klen, "size"), want_sha1 = is_key(key, klen, "sha1");
        const json_value *v = json_cursor_value(r->c);
        if (v == NULL)
            return -1;
        if (want_size)
            has_size = v->kind == JSON_NUMBER && v->is_uint;
        if (want_size && has_size)
            size = v->u;
        if (want_sha1)
            sha1_wrong = check_sha1(v, sha1);
    }
    if (k < 0)
        return -1;
    if (!has_size)
        return bad(r, at, "missing \"size\" (an unsigned integer)");
    if (sha1_wrong != NULL)
        return bad(r, at, sha1_wrong);
    if (!files_ok)
        return bad(r, at, "missing \"files\" (an array)");
    if (file_wrong[0] != '\0')
        return refuse(r, file_wrong);
    r->p->groups[gi].size = size;
    memcpy(r->p->groups[gi].sha1, sha1, sizeof sha1);
    return 0;
}

static int read_groups(reader *r)
{
    int k = json_cursor_enter(r->c, JSON_ARRAY);
    if (k <= 0)
        return k < 0 || json_cursor_value(r->c) == NULL ? -1 : not_a_plan(r);
    place at = {AT_GROUP, 0, 0};
    for (; (k = json_cursor_next(r->c, NULL, NULL)) > 0; at.i++)
        if (read_group(r, &at) != 0)
            return -1;
    return k;
}

/* add_root: one entry of roots[]. */
static int add_root(reader *r, const json_value *v, const place *at)
{
    if (v->kind != JSON_OBJECT)
        return bad(r, at, "not an object");
    uint64_t dev, ino;
    if (get_uint(v, "device", &dev) != 0)
        return bad(r, at, "missing \"device\" (an unsigned integer)");
    if (get_uint(v, "inode", &ino) != 0)
        return bad(r, at, "missing \"inode\" (an unsigned integer)");
    char *name;
    const char *what;
    if (get_name(r->p, v, &name, &what) != 0)
        return bad(r, at, what);
    return push_root(r->p, name, dev, ino) == 0 ? 0 : bad(r, at, strerror(ENOMEM));
}

/* read_roots: "roots": an array of roots, or null (none recorded). */
static int read_roots(reader *r)
{
    int k = json_cursor_enter(r->c, JSON_ARRAY);
    if (k < 0)
        return -1;
    if (k == 0) {
        const json_value *v = json_cursor_value(r->c);
        if (v == NULL)
            return -1;
        return v->kind == JSON_NULL ? 0 : refuse(r, "\"roots\" is neither an array nor null");
    }
    place at = {AT_ROOT, 0, 0};
    for (; (k = json_cursor_next(r->c, NULL, NULL)) > 0; at.i++) {
        const json_value *v = json_cursor_value(r->c);
        if (v == NULL || add_root(r, v, &at) != 0)
            return -1;
    }
    return k;
}

/* read_plan: the document: an object with "groups" (once), "roots" (at
 * most once) and anything else (read, for its syntax, and passed over). */
static int read_plan(reader *r)
{
    int k = json_cursor_enter(r->c, JSON_OBJECT);
    if (k <= 0)
        return k < 0 || json_cursor_value(r->c) == NULL || json_cursor_end(r->c) != 0
                   ? -1
                   : not_a_plan(r);
    int groups = 0, roots = 0, rc = 0;
    const char *key;
    size_t klen;
    while (rc == 0 && (k = json_cursor_next(r->c, &key, &klen)) > 0) {
        if (is_key(key, klen, "groups"))
            rc = groups++ ? twice(r, NULL, "groups") : read_groups(r);
        else if (is_key(key, klen, "roots"))
            rc = roots++ ? twice(r, NULL, "roots") : read_roots(r);
        else
            rc = json_cursor_value(r->c) == NULL ? -1 : 0;
    }
    if (rc != 0 || k < 0 || json_cursor_end(r->c) != 0)
        return -1;
    return groups ? 0 : not_a_plan(r);
}

/* parse_with: reads a plan into p through cursor c (freed); on failure p
 * is emptied and err says why. */
static int parse_with(act_plan *p, json_cursor *c, char *err, size_t cap)
{
    if (c == NULL)
        return -1;
    reader r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.c = c;
    r.err = err;
    r.cap = cap;
    if (gethostname(r.self, sizeof r.self - 1) != 0)
        r.self[0] = '\0';
    int rc = read_plan(&r);
    if (rc != 0 && r.refused)
        (void)json_cursor_finish(c); /* a syntax error further on is said first */
    free(r.hosts.slot);
    json_cursor_free(c);
    if (rc != 0)
        act_plan_free(p);
    return rc;
}

int act_plan_parse(act_plan *p, const char *text, size_t len, char *err, size_t cap)
{
    return parse_with(p, json_cursor_new(text, len, NULL, NULL, err, cap), err, cap);
}

/* read_fd: the cursor's source: read(2) of the descriptor in ctx. */
static long read_fd(void *ctx, char *buf, size_t cap)
{
    return (long)read(*(const int *)ctx, buf, cap);
}

int act_plan_load(act_plan *p, const char *name, char *err, size_t cap)
{
    int fd = strcmp(name, "-") == 0 ? STDIN_FILENO : open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, cap, "%s", strerror(errno));
        return -1;
    }
    int rc = parse_with(p, json_cursor_new(NULL, 0, read_fd, &fd, err, cap), err, cap);
    if (fd != STDIN_FILENO)
        close(fd);
    return rc;
}
