/*
 * dedup_output.c - what `hashbatch dedup` prints: the groups as text (the
 * fdupes/jdupes layout), NUL-separated, JSON or CSV, and the totals.
 *
 * Text: one path per line, a blank line after each group, so stdout can
 * be compared with fdupes' and jdupes'. A path that holds a control
 * character (a newline would break the layout) or starts with a quote is
 * written shell-quoted as in error messages ('a'$'\n''b'), so every line
 * is one path and quoted paths are never confused with plain ones;
 * --fdupes writes every path raw, as fdupes does; -z ends each path with
 * a NUL and each group with one more (jdupes -0). JSON paths that are not
 * UTF-8 also carry their bytes in hex ("path_hex"), since a JSON string
 * cannot hold them. File entries carry mtime_ns, so that a plan read
 * later (`link`, `remove`) can tell a file changed since, and "roots"
 * comes first: each DIR argument as given (for a FILE argument, the
 * directory holding it as written) with its device and inode as the walk
 * saw them, so that an action reaches every file beneath its root and
 * can tell the root was replaced (a merge has none: its indexes do not
 * record their roots' identities).
 *
 * With --dirs, the groups of identical directories (dedup_dirs.c) come
 * first: in the text layouts their paths end in '/', in JSON they are
 * "directory_groups", in CSV a "kind" column (dir, file) is added after
 * "group". With --merge, each group says what proves it ("proof":
 * "bytes" or "sha1" in JSON, a "proof" and a "host" column in CSV, and a
 * marker line before each group proven by SHA-1 only in the text
 * layouts). With `--index-out -` the index took stdout: no groups.
 *
 * Owns: the layouts and the totals. Must not: decide what is a group, or
 * write anything but the report to stdout.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dedup.h"
#include "dedup_dirs.h"
#include "utf8.h"
#include "walk.h"

/* Totals of a run, as reported. */
typedef struct {
    uint64_t groups, hardlink_groups, duplicate_files, reclaimable, paths;
    uint64_t dir_groups, duplicate_dirs;
} totals;

/* dir_groups: the directory groups of r (--dirs), or NULL. */
static const struct dd_dirs *dir_groups(const dd_run *r)
{
    return r->o->dirs && r->dirs != NULL ? r->dirs : NULL;
}

/* merged: the merge's state when r is a --merge, or NULL. */
static const struct dd_dirs *merged(const dd_run *r)
{
    return r->dirs != NULL && r->dirs->merged ? r->dirs : NULL;
}

/* sha1_only: does group g rest on SHA-1 alone (--merge)? */
static int sha1_only(const dd_run *r, size_t g)
{
    const struct dd_dirs *m = merged(r);
    return m != NULL && m->proof[g] == DD_PROOF_SHA1;
}

static totals count(const dd_run *r)
{
    totals t;
    memset(&t, 0, sizeof t);
    const struct dd_dirs *d = dir_groups(r);
    for (size_t g = 0; d != NULL && g < d->ngroups; g++) {
        t.dir_groups++;
        t.duplicate_dirs += d->groups[g].n - 1;
        t.reclaimable += d->groups[g].reclaimable;
    }
    for (size_t g = 0; g < r->ngroups; g++) {
        const dd_group *gr = &r->groups[g];
        t.groups++;
        t.hardlink_groups += gr->ninodes == 1;
        t.duplicate_files += gr->n - 1;
        t.reclaimable += (uint64_t)(gr->ninodes - 1) * gr->size;
        t.paths += gr->n;
    }
    return t;
}

static void put_hex(FILE *f, const uint8_t *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", d[i]);
}

/* needs_quoting: does name hold a control byte, or start with a quote? */
static int needs_quoting(const char *name)
{
    if (name[0] == '\'' || name[0] == '"')
        return 1;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

/* put_text_name: one path of the text layout. */
static void put_text_name(FILE *f, const char *name, int raw)
{
    if (raw || !needs_quoting(name))
        fputs(name, f);
    else
        cli_quote_name(f, name);
}

/* SHA1_MARK: the line before a merged group whose bytes were not all
 * compared, in the text layouts. */
#define SHA1_MARK "# proven by SHA-1 only (not every file is reachable here; bytes not compared):"

/* print_text_dirs: the directory groups, each path with a trailing '/'. */
static void print_text_dirs(const dd_run *r, int raw, char end)
{
    const struct dd_dirs *d = dir_groups(r);
    for (size_t g = 0; d != NULL && g < d->ngroups; g++) {
        const dd_dir_group *dg = &d->groups[g];
        if (r->o->show_size)
            printf("%" PRIu64 " file%s, %" PRIu64 " byte%s each:%c", dg->files,
                   dg->files == 1 ? "" : "s", dg->bytes, dg->bytes == 1 ? "" : "s", end);
        for (uint32_t i = 0; i < dg->n; i++) {
            const char *name = d->members[dg->first + i].path;
            if (end == '\0')
                fputs(name, stdout);
            else
                put_text_name(stdout, name, raw);
            putchar('/');
            putchar(end);
        }
        putchar(end);
    }
}

static void print_text(const dd_run *r, int raw, char end)
{
    print_text_dirs(r, raw, end);
    for (size_t g = 0; g < r->ngroups; g++) {
        const dd_group *gr = &r->groups[g];
        if (sha1_only(r, g)) {
            fputs(SHA1_MARK, stdout);
            putchar(end);
        }
        if (r->o->show_size)
            printf("%" PRIu64 " byte%s each:%c", gr->size, gr->size == 1 ? "" : "s", end);
        for (uint32_t i = 0; i < gr->n; i++) {
            const char *name = dd_path_name(r, r->group_paths[gr->first + i]);
            if (end == '\0')
                fputs(name, stdout);
            else
                put_text_name(stdout, name, raw);
            putchar(end);
        }
        putchar(end);
    }
}

/* dd_put_json_path: "path": "..." and, when it is not UTF-8, "path_hex". */
void dd_put_json_path(FILE *f, const char *name)
{
    fputs("\"path\": ", f);
    json_put_string(f, name, strlen(name));
    if (!utf8_valid(name)) {
        fputs(", \"path_hex\": \"", f);
        put_hex(f, (const uint8_t *)name, strlen(name));
        fputc('"', f);
    }
}

int dd_root_listed(const dd_run *r, size_t i)
{
    const walk_root *x = &r->roots[i];
    if (x->path == NULL)
        return 0;
    for (size_t j = 0; j < i; j++) {
        const walk_root *y = &r->roots[j];
        if (y->path != NULL && y->dev == x->dev && y->ino == x->ino &&
            strcmp(y->path, x->path) == 0)
            return 0;
    }
    return 1;
}

/* print_json_roots: "roots", where the walk started (dd_root_listed). */
static void print_json_roots(const dd_run *r)
{
    size_t listed = 0;
    printf("  \"roots\": [");
    for (size_t i = 0; i < r->nroots; i++) {
        if (!dd_root_listed(r, i))
            continue;
        printf("%s\n    {", listed++ ? "," : "");
        dd_put_json_path(stdout, r->roots[i].path);
        printf(", \"device\": %ju, \"inode\": %ju}", (uintmax_t)r->roots[i].dev,
               (uintmax_t)r->roots[i].ino);
    }
    printf("%s],\n", listed ? "\n  " : "");
}

/* print_json_dirs: "directory_groups" (--dirs only). */
static void print_json_dirs(const dd_run *r)
{
    const struct dd_dirs *d = dir_groups(r);
    if (!r->o->dirs)
        return;
    printf("  \"directory_groups\": [");
    for (size_t g = 0; d != NULL && g < d->ngroups; g++) {
        const dd_dir_group *dg = &d->groups[g];
        printf("%s\n    {\"files\": %" PRIu64 ", \"bytes\": %" PRIu64
               ", \"reclaimable_bytes\": %" PRIu64 ",\n     \"directories\": [",
               g ? "," : "", dg->files, dg->bytes, dg->reclaimable);
        for (uint32_t i = 0; i < dg->n; i++) {
            const dd_dir_member *m = &d->members[dg->first + i];
            printf("%s\n       {", i ? "," : "");
            dd_put_json_path(stdout, m->path);
            printf(", \"device\": %ju, \"inode\": %ju}", (uintmax_t)m->dev, (uintmax_t)m->ino);
        }
        printf("]}");
    }
    printf("%s],\n", d != NULL && d->ngroups ? "\n  " : "");
}

static void print_json_groups(const dd_run *r)
{
    const struct dd_dirs *m = merged(r);
    printf("  \"groups\": [");
    for (size_t g = 0; g < r->ngroups; g++) {
        const dd_group *gr = &r->groups[g];
        printf("%s\n    {\"size\": %" PRIu64 ", \"sha1\": ", g ? "," : "", gr->size);
        if (gr->hashed) {
            putchar('"');
            put_hex(stdout, gr->sha1, 20);
            putchar('"');
        } else {
            fputs("null", stdout);
        }
        printf(", \"distinct_files\": %u, \"hard_links_only\": %s, \"reclaimable_bytes\": %" PRIu64,
               gr->ninodes, gr->ninodes == 1 ? "true" : "false",
               (uint64_t)(gr->ninodes - 1) * gr->size);
        if (m != NULL)
            printf(", \"proof\": \"%s\"", sha1_only(r, g) ? "sha1" : "bytes");
        printf(",\n     \"files\": [");
        for (uint32_t i = 0; i < gr->n; i++) {
            uint32_t p = r->group_paths[gr->first + i];
            const dd_inode *k = &r->inodes[r->paths[p].inode];
            printf("%s\n       {", i ? "," : "");
            dd_put_json_path(stdout, dd_path_name(r, p));
            printf(", \"device\": %ju, \"inode\": %ju, \"mtime_ns\": %" PRId64, (uintmax_t)k->dev,
                   (uintmax_t)k->ino, dd_mtime_ns(k));
            if (m != NULL) {
                fputs(", \"host\": ", stdout);
                json_put_string(stdout, m->host[p], strlen(m->host[p]));
            }
            putchar('}');
        }
        printf("]}");
    }
    printf("%s],\n", r->ngroups ? "\n  " : "");
}

static void print_json_rest(const dd_run *r)
{
    printf("  \"collisions\": [");
    for (size_t i = 0; i < r->ncollisions; i++) {
        const dd_collision *c = &r->collisions[i];
        printf("%s\n    {\"sha1\": \"", i ? "," : "");
        put_hex(stdout, c->sha1, 20);
        printf("\", \"size\": %" PRIu64 ", \"files\": [{", r->inodes[c->a].size);
        dd_put_json_path(stdout, dd_inode_name(r, c->a));
        printf("}, {");
        dd_put_json_path(stdout, dd_inode_name(r, c->b));
        printf("}]}");
    }
    printf("%s],\n  \"errors\": [", r->ncollisions ? "\n  " : "");
    for (size_t i = 0; i < r->nerrs; i++) {
        printf("%s\n    {", i ? "," : "");
        dd_put_json_path(stdout, r->errs[i].path);
        fputs(", \"cause\": ", stdout);
        json_put_string(stdout, r->errs[i].cause, strlen(r->errs[i].cause));
        putchar('}');
    }
    totals t = count(r);
    printf("%s],\n", r->nerrs ? "\n  " : "");
    printf("  \"summary\": {\"files_scanned\": %" PRIu64 ", \"groups\": %" PRIu64
           ", \"hard_link_groups\": %" PRIu64 ", \"duplicate_files\": %" PRIu64
           ", \"reclaimable_bytes\": %" PRIu64 ", \"collisions\": %zu, \"errors\": %" PRIu64,
           r->scanned, t.groups, t.hardlink_groups, t.duplicate_files, t.reclaimable,
           r->ncollisions, r->skipped);
    if (r->o->dirs)
        printf(", \"directory_groups\": %" PRIu64 ", \"duplicate_directories\": %" PRIu64,
               t.dir_groups, t.duplicate_dirs);
    if (merged(r) != NULL)
        printf(", \"sha1_only_groups\": %" PRIu64, merged(r)->sha1_only);
    printf("}\n}\n");
}

/* put_csv_field: s as one RFC 4180 field. */
static void put_csv_field(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* print_csv_dirs: with --dirs, the directory groups first: kind "dir",
 * size the bytes of the files in each, no SHA-1, paths ending in '/'. */
static void print_csv_dirs(const dd_run *r)
{
    const struct dd_dirs *d = dir_groups(r);
    for (size_t g = 0; d != NULL && g < d->ngroups; g++) {
        const dd_dir_group *dg = &d->groups[g];
        for (uint32_t i = 0; i < dg->n; i++) {
            const dd_dir_member *m = &d->members[dg->first + i];
            printf("%zu,dir,%" PRIu64 ",,%ju,%ju,", g + 1, dg->bytes, (uintmax_t)m->dev,
                   (uintmax_t)m->ino);
            size_t len = strlen(m->path);
            char *slashed = malloc(len + 2);
            if (slashed != NULL) {
                memcpy(slashed, m->path, len);
                memcpy(slashed + len, "/", 2);
                put_csv_field(stdout, slashed);
                free(slashed);
            }
            fputs("\r\n", stdout);
        }
    }
}

/* print_csv: one row per path. --dirs adds a "kind" column (dir, file),
 * --merge "proof" (bytes, sha1) and "host" columns. */
static void print_csv(const dd_run *r)
{
    const struct dd_dirs *m = merged(r);
    size_t first = 0;
    if (r->o->dirs) {
        printf("group,kind,size,sha1,device,inode,path\r\n");
        print_csv_dirs(r);
        first = dir_groups(r) ? dir_groups(r)->ngroups : 0;
    } else if (m != NULL) {
        printf("group,proof,size,sha1,host,device,inode,path\r\n");
    } else {
        printf("group,size,sha1,device,inode,path\r\n");
    }
    for (size_t g = 0; g < r->ngroups; g++) {
        const dd_group *gr = &r->groups[g];
        for (uint32_t i = 0; i < gr->n; i++) {
            uint32_t p = r->group_paths[gr->first + i];
            const dd_inode *k = &r->inodes[r->paths[p].inode];
            printf("%zu,", first + g + 1);
            if (r->o->dirs)
                fputs("file,", stdout);
            if (m != NULL)
                printf("%s,", sha1_only(r, g) ? "sha1" : "bytes");
            printf("%" PRIu64 ",", gr->size);
            if (gr->hashed)
                put_hex(stdout, gr->sha1, 20);
            putchar(',');
            if (m != NULL) {
                put_csv_field(stdout, m->host[p]);
                putchar(',');
            }
            printf("%ju,%ju,", (uintmax_t)k->dev, (uintmax_t)k->ino);
            put_csv_field(stdout, dd_path_name(r, p));
            fputs("\r\n", stdout);
        }
    }
}

void dd_print_summary(const dd_run *r, FILE *f)
{
    totals t = count(r);
    double mib = (double)t.reclaimable / (1024.0 * 1024.0);
    fprintf(f,
            "%" PRIu64 " duplicate file%s in %" PRIu64 " group%s (%" PRIu64
            " of hard links only), %" PRIu64 " bytes (%.1f MiB) reclaimable; %" PRIu64
            " files scanned",
            t.duplicate_files, t.duplicate_files == 1 ? "" : "s", t.groups,
            t.groups == 1 ? "" : "s", t.hardlink_groups, t.reclaimable, mib, r->scanned);
    if (r->o->dirs)
        fprintf(f, ", %" PRIu64 " duplicate director%s in %" PRIu64 " group%s", t.duplicate_dirs,
                t.duplicate_dirs == 1 ? "y" : "ies", t.dir_groups, t.dir_groups == 1 ? "" : "s");
    if (merged(r) != NULL && merged(r)->sha1_only)
        fprintf(f, ", %" PRIu64 " group%s proven by SHA-1 only (bytes not compared)",
                merged(r)->sha1_only, merged(r)->sha1_only == 1 ? "" : "s");
    if (r->ncollisions)
        fprintf(f, ", %zu SHA-1 collision%s", r->ncollisions, r->ncollisions == 1 ? "" : "s");
    if (r->skipped)
        fprintf(f, ", %" PRIu64 " skipped or unreadable (see above)", r->skipped);
    fputc('\n', f);
}

void dd_print(const dd_run *r)
{
    if (r->o->index_out != NULL && strcmp(r->o->index_out, "-") == 0)
        return; /* the index took stdout */
    switch (r->o->format) {
    case DD_TEXT:
        print_text(r, 0, '\n');
        break;
    case DD_FDUPES:
        print_text(r, 1, '\n');
        break;
    case DD_ZERO:
        print_text(r, 1, '\0');
        break;
    case DD_JSON:
        printf("{\n");
        print_json_roots(r);
        print_json_dirs(r);
        print_json_groups(r);
        print_json_rest(r);
        break;
    case DD_CSV:
        print_csv(r);
        break;
    case DD_SUMMARY:
        dd_print_summary(r, stdout);
        break;
    }
}
