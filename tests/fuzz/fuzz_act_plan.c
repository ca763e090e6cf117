/*
 * fuzz_act_plan.c - libFuzzer target: the plan `link` and `remove` act on
 * (act_plan.c), with its roots and the merge's records of other hosts.
 *
 * Input: the plan's text, as is.
 * Checks: no crash or sanitizer report; a refused plan says why; an
 * accepted one is whole (the groups tile the files in order, every file
 * has a non-empty name without NUL, a host is this one or one of the
 * plan's distinct hosts, every root has a name), and written back out
 * (names as path_hex, hosts by name, roots with their identities) it is
 * accepted again as the same plan.
 * Must not: take the reader's word: the second plan is compared with the
 * first, field by field.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...) FUZZ_CHECK("fuzz_act_plan", cond, __VA_ARGS__)

/* check_whole: the invariants of an accepted plan. */
static void check_whole(const act_plan *p)
{
    size_t next = 0;
    for (size_t g = 0; g < p->ngroups; g++) {
        CHECK(p->groups[g].first == next, "group %zu starts at %zu, not %zu", g, p->groups[g].first,
              next);
        next += p->groups[g].n;
    }
    CHECK(next == p->nfiles, "the groups hold %zu files of %zu", next, p->nfiles);
    for (size_t i = 0; i < p->nfiles; i++) {
        const act_file *f = &p->files[i];
        CHECK(f->path != NULL && f->path[0] != '\0', "file %zu has no name", i);
        CHECK(f->host == ACT_THIS_HOST || f->host < p->nhosts, "file %zu: host %u of %zu", i,
              f->host, p->nhosts);
    }
    for (size_t i = 0; i < p->nhosts; i++)
        for (size_t j = i + 1; j < p->nhosts; j++)
            CHECK(strcmp(p->hosts[i], p->hosts[j]) != 0, "host '%s' interned twice", p->hosts[i]);
    for (size_t i = 0; i < p->nroots; i++)
        CHECK(p->roots[i].path != NULL && p->roots[i].path[0] != '\0', "root %zu has no name", i);
}

/* put_hex: "KEY": "hex of s" */
static void put_hex(FILE *f, const char *key, const char *s)
{
    fprintf(f, "\"%s\": \"", key);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        fprintf(f, "%02x", *c);
    fputc('"', f);
}

/* put_string: s as a JSON string, every byte but plain ASCII escaped. */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\')
            fputc(*c, f);
        else if (*c < 0x80)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f); /* raw: the reader takes any byte above ASCII */
    fputc('"', f);
}

/* write_plan: p as a plan's text (malloc'd, *len). */
static char *write_plan(const act_plan *p, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    CHECK(f != NULL, "open_memstream");
    fputs("{\"roots\": [", f);
    for (size_t i = 0; i < p->nroots; i++) {
        fprintf(f, "%s{", i ? ", " : "");
        put_hex(f, "path_hex", p->roots[i].path);
        fprintf(f, ", \"path\": \"x\", \"device\": %llu, \"inode\": %llu}",
                (unsigned long long)p->roots[i].dev, (unsigned long long)p->roots[i].ino);
    }
    fputs("], \"groups\": [", f);
    for (size_t g = 0; g < p->ngroups; g++) {
        const act_group *gr = &p->groups[g];
        fprintf(f, "%s{\"size\": %llu, \"sha1\": ", g ? ", " : "", (unsigned long long)gr->size);
        if (gr->sha1[0])
            fprintf(f, "\"%s\"", gr->sha1);
        else
            fputs("null", f);
        fputs(", \"files\": [", f);
        for (size_t i = 0; i < gr->n; i++) {
            const act_file *x = &p->files[gr->first + i];
            fprintf(f, "%s{", i ? ", " : "");
            put_hex(f, "path_hex", x->path);
            fprintf(f, ", \"device\": %llu, \"inode\": %llu", (unsigned long long)x->dev,
                    (unsigned long long)x->ino);
            if (x->has_mtime)
                fprintf(f, ", \"mtime_ns\": %lld", (long long)x->mtime_ns);
            if (x->host != ACT_THIS_HOST) {
                fputs(", \"host\": ", f);
                put_string(f, p->hosts[x->host]);
            }
            fputc('}', f);
        }
        fputs("]}", f);
    }
    fputs("]}", f);
    CHECK(fclose(f) == 0, "fclose");
    return buf;
}

/* host_name: f's host as text ("" for this one). */
static const char *host_name(const act_plan *p, const act_file *f)
{
    return f->host == ACT_THIS_HOST ? "" : p->hosts[f->host];
}

/* check_same: b, read back from a's text, is a. */
static void check_same(const act_plan *a, const act_plan *b)
{
    CHECK(a->ngroups == b->ngroups && a->nfiles == b->nfiles && a->nroots == b->nroots,
          "%zu/%zu/%zu groups/files/roots read back as %zu/%zu/%zu", a->ngroups, a->nfiles,
          a->nroots, b->ngroups, b->nfiles, b->nroots);
    for (size_t g = 0; g < a->ngroups; g++)
        CHECK(a->groups[g].size == b->groups[g].size && a->groups[g].n == b->groups[g].n &&
                  strcmp(a->groups[g].sha1, b->groups[g].sha1) == 0,
              "group %zu differs", g);
    for (size_t i = 0; i < a->nfiles; i++) {
        const act_file *x = &a->files[i], *y = &b->files[i];
        CHECK(strcmp(x->path, y->path) == 0 && x->dev == y->dev && x->ino == y->ino &&
                  x->has_mtime == y->has_mtime && (!x->has_mtime || x->mtime_ns == y->mtime_ns) &&
                  strcmp(host_name(a, x), host_name(b, y)) == 0,
              "file %zu differs", i);
    }
    for (size_t i = 0; i < a->nroots; i++)
        CHECK(strcmp(a->roots[i].path, b->roots[i].path) == 0 &&
                  a->roots[i].dev == b->roots[i].dev && a->roots[i].ino == b->roots[i].ino,
              "root %zu differs", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    act_plan p, q;
    char err[512] = "";
    memset(&p, 0, sizeof p);
    if (act_plan_parse(&p, (const char *)data, size, err, sizeof err) != 0) {
        CHECK(err[0] != '\0', "a plan refused without a reason");
        return 0;
    }
    check_whole(&p);
    size_t len;
    char *text = write_plan(&p, &len);
    memset(&q, 0, sizeof q);
    err[0] = '\0';
    CHECK(act_plan_parse(&q, text, len, err, sizeof err) == 0, "written back, refused: %s", err);
    check_whole(&q);
    check_same(&p, &q);
    act_plan_free(&q);
    act_plan_free(&p);
    free(text);
    return 0;
}
