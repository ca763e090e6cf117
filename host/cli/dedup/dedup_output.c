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
 * cannot hold them.
 *
 * Owns: the layouts and the totals. Must not: decide what is a group, or
 * write anything but the report to stdout.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "dedup.h"

/* Totals of a run, as reported. */
typedef struct {
    uint64_t groups, hardlink_groups, duplicate_files, reclaimable, paths;
} totals;

static totals count(const dd_run *r)
{
    totals t;
    memset(&t, 0, sizeof t);
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

static void print_text(const dd_run *r, int raw, char end)
{
    for (size_t g = 0; g < r->ngroups; g++) {
        const dd_group *gr = &r->groups[g];
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

/* is_utf8: is name valid UTF-8 (no overlong forms, no surrogates)? */
static int is_utf8(const char *name)
{
    const unsigned char *s = (const unsigned char *)name;
    while (*s) {
        unsigned c = *s, len, cp, min;
        if (c < 0x80) {
            s++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            len = 2, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4, min = 0x10000;
        else
            return 0;
        cp = c & (0x7fu >> len);
        for (unsigned i = 1; i < len; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i] & 0x3fu);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        s += len;
    }
    return 1;
}

/* put_json_path: "path": "..." and, when it is not UTF-8, "path_hex". */
static void put_json_path(FILE *f, const char *name)
{
    fputs("\"path\": ", f);
    json_put_string(f, name, strlen(name));
    if (!is_utf8(name)) {
        fputs(", \"path_hex\": \"", f);
        put_hex(f, (const uint8_t *)name, strlen(name));
        fputc('"', f);
    }
}

static void print_json_groups(const dd_run *r)
{
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
        printf(", \"distinct_files\": %u, \"hard_links_only\": %s, \"reclaimable_bytes\": %" PRIu64
               ",\n     \"files\": [",
               gr->ninodes, gr->ninodes == 1 ? "true" : "false",
               (uint64_t)(gr->ninodes - 1) * gr->size);
        for (uint32_t i = 0; i < gr->n; i++) {
            uint32_t p = r->group_paths[gr->first + i];
            const dd_inode *k = &r->inodes[r->paths[p].inode];
            printf("%s\n       {", i ? "," : "");
            put_json_path(stdout, dd_path_name(r, p));
            printf(", \"device\": %ju, \"inode\": %ju}", (uintmax_t)k->dev, (uintmax_t)k->ino);
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
        put_json_path(stdout, dd_inode_name(r, c->a));
        printf("}, {");
        put_json_path(stdout, dd_inode_name(r, c->b));
        printf("}]}");
    }
    printf("%s],\n  \"errors\": [", r->ncollisions ? "\n  " : "");
    for (size_t i = 0; i < r->nerrs; i++) {
        printf("%s\n    {", i ? "," : "");
        put_json_path(stdout, r->errs[i].path);
        fputs(", \"cause\": ", stdout);
        json_put_string(stdout, r->errs[i].cause, strlen(r->errs[i].cause));
        putchar('}');
    }
    totals t = count(r);
    printf("%s],\n", r->nerrs ? "\n  " : "");
    printf("  \"summary\": {\"files_scanned\": %" PRIu64 ", \"groups\": %" PRIu64
           ", \"hard_link_groups\": %" PRIu64 ", \"duplicate_files\": %" PRIu64
           ", \"reclaimable_bytes\": %" PRIu64 ", \"collisions\": %zu, \"errors\": %" PRIu64
           "}\n}\n",
           r->scanned, t.groups, t.hardlink_groups, t.duplicate_files, t.reclaimable,
           r->ncollisions, r->skipped);
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

static void print_csv(const dd_run *r)
{
    printf("group,size,sha1,device,inode,path\r\n");
    for (size_t g = 0; g < r->ngroups; g++) {
        const dd_group *gr = &r->groups[g];
        for (uint32_t i = 0; i < gr->n; i++) {
            uint32_t p = r->group_paths[gr->first + i];
            const dd_inode *k = &r->inodes[r->paths[p].inode];
            printf("%zu,%" PRIu64 ",", g + 1, gr->size);
            if (gr->hashed)
                put_hex(stdout, gr->sha1, 20);
            printf(",%ju,%ju,", (uintmax_t)k->dev, (uintmax_t)k->ino);
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
    if (r->ncollisions)
        fprintf(f, ", %zu SHA-1 collision%s", r->ncollisions, r->ncollisions == 1 ? "" : "s");
    if (r->skipped)
        fprintf(f, ", %" PRIu64 " skipped or unreadable (see above)", r->skipped);
    fputc('\n', f);
}

void dd_print(const dd_run *r)
{
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
