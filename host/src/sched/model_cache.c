/*
 * model_cache.c - the scheduler's cost models kept in a text file between
 * runs (see model_cache.h).
 *
 * Owns: the file's format, parsing and formatting (the path rule, the
 * bounded read and the atomic replace are cache_file.c's). The format:
 *
 *     hashbatch-models 1
 *     KEY<TAB>UNIX-SECONDS<TAB>F0 M0 B0 F1 M1 B1 F2 M2 B2
 *
 * one entry a line, each ended by a newline, the nine numbers being each
 * class's fixed_ns, ns_per_message and ns_per_byte (%.17g in the C locale,
 * so they read back bitwise). A line that is not exactly that (a field
 * missing or extra, a number that does not parse, is negative or is not
 * finite, a key with a control character or over 1000 bytes, a time
 * more than a day ahead) is skipped; so is an entry older than
 * HB_MODEL_CACHE_MAX_AGE_S. At most MAX_FILE_BYTES of a file are read and
 * at most MAX_ENTRIES entries kept (the newest), so a huge or hostile file
 * costs little. Only regular files are read, opened without blocking (a
 * FIFO at the path is not waited on: cache_file.c).
 * Must not: print, report errors, hold locks, or leave a temporary file
 * behind: every failure unlinks what it made and returns 0.
 */
#include "sched/model_cache.h"

#include "cache_file.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    KEY_MAX = 1000,                /* bytes of a key, as model_cache.h says */
    MAX_ENTRIES = 64,              /* entries a file keeps: the newest */
    MAX_FILE_BYTES = 1 << 20,      /* bytes of a file read; the rest ignored */
    MAX_LINE = 2048,               /* a longer line is not one of ours */
    NUMBERS = 3 * HB_COST_CLASSES, /* numbers on an entry line */
    NUMBER_MAX = 32,               /* chars of one %.17g number, with room */
    FUTURE_SLACK_S = 24 * 3600     /* clock skew tolerated on a timestamp */
};

#define STRINGIFY(x) #x
#define VERSION_TEXT(v) STRINGIFY(v)
#define HEADER "hashbatch-models " VERSION_TEXT(HB_MODEL_CACHE_VERSION) "\n"

typedef struct {
    char key[KEY_MAX + 1];
    int64_t written; /* unix seconds */
    hb_cost_terms terms[HB_COST_CLASSES];
} entry;

typedef struct {
    entry *e; /* MAX_ENTRIES of them */
    size_t n;
} table;

/* ---- the path ------------------------------------------------------- */

int hb_model_cache_path(char *buf, size_t size)
{
    return hb_cache_file_path(buf, size, "HASHBATCH_MODEL_CACHE", "models.txt");
}

/* ---- numbers in the C locale ---------------------------------------- */

/* The caller's locale may write "1,5"; the file always says "1.5". */
typedef struct {
    locale_t c;
    locale_t old;
} c_numeric;

static c_numeric c_numeric_enter(void)
{
    c_numeric s = {newlocale(LC_NUMERIC_MASK, "C", (locale_t)0), (locale_t)0};
    if (s.c != (locale_t)0)
        s.old = uselocale(s.c);
    return s;
}

static void c_numeric_leave(c_numeric s)
{
    if (s.c == (locale_t)0)
        return;
    uselocale(s.old);
    freelocale(s.c);
}

/* ---- validity ------------------------------------------------------- */

static int key_ok(const char *key, size_t len)
{
    if (len == 0 || len > KEY_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c < 0x20 || c == 0x7f)
            return 0;
    }
    return 1;
}

static int term_ok(double v)
{
    return isfinite(v) && v >= 0;
}

static int terms_ok(const hb_cost_terms t[HB_COST_CLASSES])
{
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        if (!term_ok(t[c].fixed_ns) || !term_ok(t[c].ns_per_message) || !term_ok(t[c].ns_per_byte))
            return 0;
    return 1;
}

/* fresh: written no longer than the maximum age ago, nor in the future */
static int fresh(int64_t written, int64_t now)
{
    return written <= now + FUTURE_SLACK_S && now - written <= HB_MODEL_CACHE_MAX_AGE_S;
}

/* ---- parsing one line ----------------------------------------------- */

static int parse_time(const char *p, const char **end, int64_t *out)
{
    if (*p < '0' || *p > '9')
        return 0;
    errno = 0;
    char *e;
    long long v = strtoll(p, &e, 10);
    if (errno != 0 || e == p)
        return 0;
    *out = (int64_t)v;
    *end = e;
    return 1;
}

/* parse_number: one term at p, then the separator sep; *end past it */
static int parse_number(const char *p, char sep, const char **end, double *out)
{
    /* strtod skips leading white space; the format has none */
    if (*p == '\0' || *p == ' ' || (*p >= '\t' && *p <= '\r'))
        return 0;
    char *e;
    double v = strtod(p, &e); /* underflow (ERANGE) still gives the number */
    if (e == p || *e != sep || !term_ok(v))
        return 0;
    *out = v;
    *end = sep == '\0' ? e : e + 1;
    return 1;
}

static int parse_terms(const char *p, hb_cost_terms t[HB_COST_CLASSES])
{
    double v[NUMBERS];
    for (unsigned i = 0; i < NUMBERS; i++)
        if (!parse_number(p, i + 1 < NUMBERS ? ' ' : '\0', &p, &v[i]))
            return 0;
    for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
        t[c].fixed_ns = v[3 * c];
        t[c].ns_per_message = v[3 * c + 1];
        t[c].ns_per_byte = v[3 * c + 2];
    }
    return 1;
}

/* parse_line: line (NUL-terminated, no newline) into *out; 0 if bad */
static int parse_line(const char *line, entry *out)
{
    const char *tab = strchr(line, '\t');
    if (tab == NULL || !key_ok(line, (size_t)(tab - line)))
        return 0;
    const char *p;
    if (!parse_time(tab + 1, &p, &out->written) || *p != '\t')
        return 0;
    if (!parse_terms(p + 1, out->terms))
        return 0;
    memcpy(out->key, line, (size_t)(tab - line));
    out->key[tab - line] = '\0';
    return 1;
}

/* ---- the table of entries ------------------------------------------- */

static entry *table_find(table *t, const char *key)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->e[i].key, key) == 0)
            return &t->e[i];
    return NULL;
}

static entry *table_oldest(table *t)
{
    entry *o = &t->e[0];
    for (size_t i = 1; i < t->n; i++)
        if (t->e[i].written < o->written)
            o = &t->e[i];
    return o;
}

/* table_put: e into t: a key's newer entry wins, and a full table drops
 * its oldest entry for a newer one; with force, e goes in whatever its age. */
static void table_put(table *t, const entry *e, int force)
{
    entry *slot = table_find(t, e->key);
    if (slot != NULL) {
        if (force || e->written >= slot->written)
            *slot = *e;
        return;
    }
    if (t->n < MAX_ENTRIES) {
        t->e[t->n++] = *e;
        return;
    }
    slot = table_oldest(t);
    if (force || e->written > slot->written)
        *slot = *e;
}

/* ---- reading a file ------------------------------------------------- */

/* load_table: the good, fresh entries of the file at path into t (which
 * stays empty when the file is missing, unreadable or foreign). */
static void load_table(const char *path, table *t, int64_t now)
{
    char *buf;
    size_t len;
    if (!hb_cache_file_read(path, MAX_FILE_BYTES, &buf, &len))
        return;
    size_t hl = sizeof HEADER - 1;
    if (len < hl || memcmp(buf, HEADER, hl) != 0) {
        free(buf);
        return;
    }
    char line[MAX_LINE + 1];
    entry e;
    c_numeric loc = c_numeric_enter();
    for (size_t at = hl; at < len;) {
        const char *nl = memchr(buf + at, '\n', len - at);
        if (nl == NULL)
            break; /* a last line cut short */
        size_t n = (size_t)(nl - (buf + at));
        if (n <= MAX_LINE && memchr(buf + at, '\0', n) == NULL) {
            memcpy(line, buf + at, n);
            line[n] = '\0';
            if (parse_line(line, &e) && fresh(e.written, now))
                table_put(t, &e, 0);
        }
        at += n + 1;
    }
    c_numeric_leave(loc);
    free(buf);
}

static int table_init(table *t)
{
    t->n = 0;
    t->e = calloc(MAX_ENTRIES, sizeof *t->e);
    return t->e != NULL;
}

int hb_model_cache_load(const char *path, const char *key, hb_cost_terms terms[HB_COST_CLASSES])
{
    if (path == NULL || path[0] == '\0' || key == NULL || terms == NULL)
        return 0;
    table t;
    if (!key_ok(key, strlen(key)) || !table_init(&t))
        return 0;
    load_table(path, &t, (int64_t)time(NULL));
    const entry *e = table_find(&t, key);
    if (e != NULL)
        memcpy(terms, e->terms, sizeof e->terms);
    free(t.e);
    return e != NULL;
}

/* ---- writing a file ------------------------------------------------- */

/* format_table: the whole file's text into a malloc'd buffer */
static char *format_table(const table *t, size_t *len)
{
    size_t line_max = KEY_MAX + 2 + 24 + NUMBERS * (NUMBER_MAX + 1) + 2;
    size_t cap = sizeof HEADER + t->n * line_max;
    char *b = malloc(cap);
    if (b == NULL)
        return NULL;
    size_t at = (size_t)snprintf(b, cap, "%s", HEADER);
    c_numeric loc = c_numeric_enter();
    for (size_t i = 0; i < t->n && at < cap; i++) {
        const entry *e = &t->e[i];
        int w = snprintf(b + at, cap - at, "%s\t%lld\t", e->key, (long long)e->written);
        at += w > 0 ? (size_t)w : cap;
        for (unsigned c = 0; c < HB_COST_CLASSES && at < cap; c++) {
            w = snprintf(b + at, cap - at, "%.17g %.17g %.17g%c", e->terms[c].fixed_ns,
                         e->terms[c].ns_per_message, e->terms[c].ns_per_byte,
                         c + 1 < HB_COST_CLASSES ? ' ' : '\n');
            at += w > 0 ? (size_t)w : cap;
        }
    }
    c_numeric_leave(loc);
    if (at >= cap) {
        free(b);
        return NULL;
    }
    *len = at;
    return b;
}

int hb_model_cache_store(const char *path, const char *key,
                         const hb_cost_terms terms[HB_COST_CLASSES])
{
    if (path == NULL || path[0] == '\0' || key == NULL || terms == NULL)
        return 0;
    size_t klen = strlen(key);
    table t;
    if (!key_ok(key, klen) || !terms_ok(terms) || !table_init(&t))
        return 0;
    int64_t now = (int64_t)time(NULL);
    load_table(path, &t, now);
    entry e;
    memcpy(e.key, key, klen + 1);
    e.written = now;
    memcpy(e.terms, terms, sizeof e.terms);
    table_put(&t, &e, 1);
    size_t len;
    char *text = format_table(&t, &len);
    free(t.e);
    if (text == NULL)
        return 0;
    int ok = hb_cache_file_replace(path, text, len);
    free(text);
    return ok;
}
