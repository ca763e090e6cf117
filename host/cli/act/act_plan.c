/*
 * act_plan.c - the plan `link` and `remove` act on: what `dedup --json`
 * prints (groups[] of size, sha1 and files[] of path, path_hex, device,
 * inode and, when present, mtime_ns), read through json_read.c, or built
 * directly by `dedup --action`.
 *
 * A file's name is path_hex's bytes when present (a name that is not
 * UTF-8), else path. Every field a run relies on is checked here, so a
 * plan that is accepted can be acted on: a bad plan is refused whole,
 * before anything is done.
 *
 * Owns: the plan's layout and its validation. Must not: touch the files
 * it names, print, or exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act.h"
#include "cli.h"
#include "json_read.h"

#define PLAN_MAX_BYTES ((size_t)1 << 34)

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

int act_plan_add_file(act_plan *p, const char *path, size_t len, uint64_t dev, uint64_t ino,
                      int has_mtime, int64_t mtime_ns)
{
    if (cli_grow((void **)&p->files, &p->cap_files, p->nfiles + 1, sizeof *p->files) != 0)
        return ENOMEM;
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return ENOMEM;
    memcpy(copy, path, len);
    copy[len] = '\0';
    act_file *f = &p->files[p->nfiles++];
    f->path = copy;
    f->dev = dev;
    f->ino = ino;
    f->has_mtime = has_mtime;
    f->mtime_ns = mtime_ns;
    p->groups[p->ngroups - 1].n++;
    return 0;
}

void act_plan_free(act_plan *p)
{
    for (size_t i = 0; i < p->nfiles; i++)
        free(p->files[i].path);
    free(p->files);
    free(p->groups);
    memset(p, 0, sizeof *p);
}

/* A place in the plan, for messages: "groups[3].files[1]". */
typedef struct {
    size_t g, f;
    int in_file;
} place;

static int bad(char *err, size_t cap, const place *at, const char *what)
{
    if (at->in_file)
        snprintf(err, cap, "groups[%zu].files[%zu]: %s", at->g, at->f, what);
    else
        snprintf(err, cap, "groups[%zu]: %s", at->g, what);
    return -1;
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

/* get_name: the file's name (path_hex's bytes, else path) into *name,
 * *len (malloc'd). Returns 0 or -1 with *what. */
static int get_name(const json_value *f, char **name, size_t *len, const char **what)
{
    const json_value *hex = json_get(f, "path_hex");
    const json_value *path = json_get(f, "path");
    if (hex != NULL) {
        if (hex->kind != JSON_STRING || hex->len % 2 != 0 || hex->len == 0) {
            *what = "\"path_hex\" is not an even number of hex digits";
            return -1;
        }
        char *s = malloc(hex->len / 2 + 1);
        if (s == NULL) {
            *what = strerror(ENOMEM);
            return -1;
        }
        for (size_t i = 0; i < hex->len / 2; i++) {
            int h = hex_digit(hex->str[2 * i]), l = hex_digit(hex->str[2 * i + 1]);
            if (h < 0 || l < 0 || (h == 0 && l == 0)) {
                free(s);
                *what = "\"path_hex\" is not hex digits of a name (or holds a NUL byte)";
                return -1;
            }
            s[i] = (char)(h * 16 + l);
        }
        *len = hex->len / 2;
        s[*len] = '\0';
        *name = s;
        return 0;
    }
    if (path == NULL || path->kind != JSON_STRING || path->len == 0 ||
        memchr(path->str, '\0', path->len) != NULL) {
        *what = "missing \"path\" (a non-empty string without NUL)";
        return -1;
    }
    *name = malloc(path->len + 1);
    if (*name == NULL) {
        *what = strerror(ENOMEM);
        return -1;
    }
    memcpy(*name, path->str, path->len + 1);
    *len = path->len;
    return 0;
}

/* add_file: one entry of a group's files[]. */
static int add_file(act_plan *p, const json_value *f, place *at, char *err, size_t cap)
{
    if (f->kind != JSON_OBJECT)
        return bad(err, cap, at, "not an object");
    uint64_t dev, ino;
    if (get_uint(f, "device", &dev) != 0)
        return bad(err, cap, at, "missing \"device\" (an unsigned integer)");
    if (get_uint(f, "inode", &ino) != 0)
        return bad(err, cap, at, "missing \"inode\" (an unsigned integer)");
    int64_t mtime = 0;
    int has_mtime = get_mtime(f, &mtime);
    if (has_mtime < 0)
        return bad(err, cap, at, "\"mtime_ns\" is not an integer");
    char *name;
    size_t len;
    const char *what;
    if (get_name(f, &name, &len, &what) != 0)
        return bad(err, cap, at, what);
    int rc = act_plan_add_file(p, name, len, dev, ino, has_mtime, mtime);
    free(name);
    return rc == 0 ? 0 : bad(err, cap, at, strerror(rc));
}

/* add_group: one entry of groups[]. */
static int add_group(act_plan *p, const json_value *g, place *at, char *err, size_t cap)
{
    if (g->kind != JSON_OBJECT)
        return bad(err, cap, at, "not an object");
    uint64_t size;
    if (get_uint(g, "size", &size) != 0)
        return bad(err, cap, at, "missing \"size\" (an unsigned integer)");
    const json_value *sha1 = json_get(g, "sha1");
    const char *hex = NULL;
    if (sha1 != NULL && sha1->kind == JSON_STRING) {
        if (sha1->len != 40)
            return bad(err, cap, at, "\"sha1\" is not 40 hex digits");
        for (size_t i = 0; i < 40; i++)
            if (hex_digit(sha1->str[i]) < 0)
                return bad(err, cap, at, "\"sha1\" is not 40 hex digits");
        hex = sha1->str;
    } else if (sha1 != NULL && sha1->kind != JSON_NULL) {
        return bad(err, cap, at, "\"sha1\" is neither a string nor null");
    }
    const json_value *files = json_get(g, "files");
    if (files == NULL || files->kind != JSON_ARRAY)
        return bad(err, cap, at, "missing \"files\" (an array)");
    if (act_plan_add_group(p, size, hex) != 0)
        return bad(err, cap, at, strerror(ENOMEM));
    at->in_file = 1;
    for (at->f = 0; at->f < files->n; at->f++)
        if (add_file(p, files->items[at->f], at, err, cap) != 0)
            return -1;
    at->in_file = 0;
    return 0;
}

int act_plan_parse(act_plan *p, const char *text, size_t len, char *err, size_t cap)
{
    json_doc *d = json_parse(text, len, err, cap);
    if (d == NULL)
        return -1;
    const json_value *root = json_root(d);
    const json_value *groups = json_get(root, "groups");
    int rc = 0;
    if (groups == NULL || groups->kind != JSON_ARRAY) {
        snprintf(err, cap,
                 "not a dedup plan: no \"groups\" array at the top (made by "
                 "`hashbatch dedup --json`)");
        rc = -1;
    }
    place at = {0, 0, 0};
    for (at.g = 0; rc == 0 && at.g < groups->n; at.g++)
        rc = add_group(p, groups->items[at.g], &at, err, cap);
    json_free(d);
    if (rc != 0)
        act_plan_free(p);
    return rc;
}

/* slurp: the whole of fd into *buf (malloc'd), *len. Returns 0 or errno. */
static int slurp(int fd, char **buf, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (b == NULL)
        return ENOMEM;
    for (;;) {
        if (n == cap) {
            if (cap >= PLAN_MAX_BYTES) {
                free(b);
                return EFBIG;
            }
            char *nb = realloc(b, cap * 2);
            if (nb == NULL) {
                free(b);
                return ENOMEM;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t k = read(fd, b + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            free(b);
            return e;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    *buf = b;
    *len = n;
    return 0;
}

int act_plan_load(act_plan *p, const char *name, char *err, size_t cap)
{
    int fd = strcmp(name, "-") == 0 ? STDIN_FILENO : open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, cap, "%s", strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    int e = slurp(fd, &text, &len);
    if (fd != STDIN_FILENO)
        close(fd);
    if (e != 0) {
        snprintf(err, cap, "%s", strerror(e));
        return -1;
    }
    int rc = act_plan_parse(p, text, len, err, cap);
    free(text);
    return rc;
}
