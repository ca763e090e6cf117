/*
 * test_model_cache.c - the scheduler's model cache (sched/model_cache.h):
 * the text file that keeps each backend's cost terms between runs.
 *
 * Covers, in TCase "cache": store then load round-trips the doubles
 * bitwise (thirds, subnormals, DBL_MAX, zero) for two keys, a store keeps
 * the other keys and replaces its own; folders are made (0700); reading
 * finds nothing in a missing, empty, foreign-version or garbage file, in
 * every prefix of a good file that cuts an entry's line (and finds each
 * entry in every prefix that holds its whole line), in an entry with NaN,
 * inf, a negative, 8 or 10 numbers, trailing junk, bad spacing, a bad
 * key or time, a stale or future time, in a directory, a FIFO (without
 * blocking) or an unreadable file; a bad line does not hide the good ones
 * after it; of one key's entries the newest counts; only the first MiB
 * is read and only the 64 newest entries are kept; store fails, leaving
 * nothing behind, where the folder cannot be made or written, where the
 * path is a directory, and for keys with control characters or over
 * 1000 bytes, or terms that are negative or not finite; the numbers are
 * written in the C locale whatever the caller's; hb_model_cache_path
 * follows HASHBATCH_MODEL_CACHE, XDG_CACHE_HOME and HOME.
 * In TCase "engine" (backend cpu, so no OpenCL): a first open calibrates
 * and writes the file, a second reads it and reports the file's terms;
 * calibrate = 1 measures again; a garbage, truncated, directory or
 * unreachable cache still opens (calibrating) and hashes right; "off"
 * writes nothing. Each test works in a fresh folder made with mkdtemp
 * under /tmp, removed at the end even when the test fails.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hb_testing.h"
#include "machine_key.h"
#include "sched/model_cache.h"
#include "test_util.h"

/* ---- temporary folders ---------------------------------------------- */

/* The suite's folder, made and removed by the parent process (an
 * unchecked fixture), so a failing test's files go too; each test makes
 * its own fresh folder inside. */
static char root[64];

static void root_setup(void)
{
    tu_temp_dir(root, sizeof root, "hb-model-cache");
}

static void root_teardown(void)
{
    tu_remove_tree(root);
}

static void join(char *out, const char *dir, const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    ck_assert(n > 0 && n < PATH_MAX);
}

/* entries_in: how many names (besides . and ..) the folder holds */
static int entries_in(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static void write_text(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

/* ---- terms ---------------------------------------------------------- */

/* sample_terms: awkward values (no short decimal, subnormal, extremes)
 * that differ with seed */
static void sample_terms(hb_cost_terms t[HB_COST_CLASSES], int seed)
{
    double v[3 * HB_COST_CLASSES] = {
        1.0 / 3,   5e-324, DBL_MAX,     0.0, 123456.789, 2.2250738585072014e-308,
        0.1 + 0.2, 1e300,  7.0 / 11e15,
    };
    for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
        t[c].fixed_ns = v[3 * c] * (seed + 1) / (seed + 1.5);
        t[c].ns_per_message = v[3 * c + 1] + seed;
        t[c].ns_per_byte = v[3 * c + 2] / (seed + 1);
    }
}

static int terms_same(const hb_cost_terms *a, const hb_cost_terms *b)
{
    return memcmp(a, b, sizeof(hb_cost_terms) * HB_COST_CLASSES) == 0;
}

/* sentinel_terms: a value no load writes, to see terms left untouched */
static void sentinel_terms(hb_cost_terms t[HB_COST_CLASSES])
{
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        t[c] = (hb_cost_terms){-7, -7, -7};
}

static int untouched(const hb_cost_terms t[HB_COST_CLASSES])
{
    hb_cost_terms s[HB_COST_CLASSES];
    sentinel_terms(s);
    return terms_same(t, s);
}

/* load_none: load finds nothing for key at path and leaves terms alone */
static void assert_load_none(const char *path, const char *key, const char *what)
{
    hb_cost_terms t[HB_COST_CLASSES];
    sentinel_terms(t);
    ck_assert_msg(hb_model_cache_load(path, key, t) == 0, "%s: loaded", what);
    ck_assert_msg(untouched(t), "%s: terms written", what);
}

static const char *const GOOD_NUMBERS = "1 2 3 4 5 6 7 8 9";

/* entry_file: a hand-written file: the header, then a line of key, time
 * (now + dt) and the numbers text */
static void entry_file(const char *path, const char *key, long dt, const char *numbers)
{
    char text[4096];
    snprintf(text, sizeof text, "hashbatch-models 1\n%s\t%lld\t%s\n", key,
             (long long)time(NULL) + dt, numbers);
    write_text(path, text);
}

/* ---- store and load ------------------------------------------------- */

START_TEST(test_round_trip_two_keys)
{
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    hb_cost_terms a[HB_COST_CLASSES], b[HB_COST_CLASSES], a2[HB_COST_CLASSES], got[HB_COST_CLASSES];
    sample_terms(a, 0);
    sample_terms(b, 1);
    sample_terms(a2, 2);
    ck_assert(!terms_same(a, b) && !terms_same(a, a2));

    ck_assert_int_eq(hb_model_cache_store(path, "host/cpu pool/v1", a), 1);
    ck_assert_int_eq(hb_model_cache_load(path, "host/cpu pool/v1", got), 1);
    ck_assert(terms_same(got, a));
    assert_load_none(path, "host/opencl 0:0/v1", "other key, not stored yet");

    ck_assert_int_eq(hb_model_cache_store(path, "host/opencl 0:0/v1", b), 1);
    ck_assert_int_eq(hb_model_cache_load(path, "host/cpu pool/v1", got), 1);
    ck_assert_msg(terms_same(got, a), "storing b lost a");
    ck_assert_int_eq(hb_model_cache_load(path, "host/opencl 0:0/v1", got), 1);
    ck_assert(terms_same(got, b));

    ck_assert_int_eq(hb_model_cache_store(path, "host/cpu pool/v1", a2), 1);
    ck_assert_int_eq(hb_model_cache_load(path, "host/cpu pool/v1", got), 1);
    ck_assert_msg(terms_same(got, a2), "re-storing did not replace");
    ck_assert_int_eq(hb_model_cache_load(path, "host/opencl 0:0/v1", got), 1);
    ck_assert_msg(terms_same(got, b), "re-storing a lost b");

    /* one line per key (the replaced one is gone), nothing else beside */
    size_t len;
    char *text = (char *)tu_read_file(path, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert(len > 19 && memcmp(text, "hashbatch-models 1\n", 19) == 0);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    ck_assert_int_eq(lines, 3);
    free(text);
    ck_assert_int_eq(entries_in(dir), 1);
}
END_TEST

START_TEST(test_store_makes_folders)
{
    char dir[PATH_MAX], path[PATH_MAX], sub[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "cache/hashbatch/models.txt");
    hb_cost_terms a[HB_COST_CLASSES], got[HB_COST_CLASSES];
    sample_terms(a, 3);
    ck_assert_int_eq(hb_model_cache_store(path, "k", a), 1);
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    ck_assert(terms_same(got, a));
    const char *made[] = {"cache", "cache/hashbatch"};
    for (int i = 0; i < 2; i++) {
        struct stat st;
        join(sub, dir, made[i]);
        ck_assert_int_eq(stat(sub, &st), 0);
        ck_assert(S_ISDIR(st.st_mode));
        ck_assert_msg((st.st_mode & 077) == 0, "%s: mode %o", made[i], st.st_mode & 0777);
    }
    ck_assert_int_eq(entries_in(sub), 1);
}
END_TEST

START_TEST(test_load_missing_empty_foreign)
{
    char dir[PATH_MAX], path[PATH_MAX], line[256];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    assert_load_none(path, "k", "missing file");
    snprintf(line, sizeof line, "k\t%lld\t%s\n", (long long)time(NULL), GOOD_NUMBERS);
    const char *heads[] = {
        "",
        "hashbatch-models 2\n",
        "hashbatch-models 10\n",
        "hashbatch-models 1\r\n",
        " hashbatch-models 1\n",
        "Hashbatch-models 1\n",
        "hashbatch-models 1 \n",
        "\xff\xfe garbage \x01\n",
    };
    char text[512];
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        write_text(path, heads[i]);
        assert_load_none(path, "k", "header only");
        snprintf(text, sizeof text, "%s%s", heads[i], line);
        write_text(path, text);
        assert_load_none(path, "k", heads[i]);
    }
    /* the same line under the right header is found: the cases above
     * failed for their header alone */
    snprintf(text, sizeof text, "hashbatch-models 1\n%s", line);
    write_text(path, text);
    hb_cost_terms got[HB_COST_CLASSES];
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    ck_assert(got[0].fixed_ns == 1 && got[2].ns_per_byte == 9);
    /* and garbage alone, and zero bytes */
    write_bytes(path, "\0\0\0\0", 4);
    assert_load_none(path, "k", "NUL bytes");
    write_text(path, "garbage");
    assert_load_none(path, "k", "garbage");
}
END_TEST

/* line_end: the offset just past the newline of key's line in text */
static size_t line_end(const char *text, size_t len, const char *key)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\n%s\t", key);
    const char *at = strstr(text, needle);
    ck_assert_ptr_nonnull(at);
    const char *nl = memchr(at + 1, '\n', len - (size_t)(at + 1 - text));
    ck_assert_ptr_nonnull(nl);
    return (size_t)(nl - text) + 1;
}

START_TEST(test_load_every_prefix)
{
    char dir[PATH_MAX], path[PATH_MAX], cut[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    join(cut, dir, "cut.txt");
    hb_cost_terms a[HB_COST_CLASSES], b[HB_COST_CLASSES], got[HB_COST_CLASSES];
    sample_terms(a, 4);
    sample_terms(b, 5);
    ck_assert_int_eq(hb_model_cache_store(path, "first", a), 1);
    ck_assert_int_eq(hb_model_cache_store(path, "second", b), 1);
    size_t len;
    char *text = (char *)tu_read_file(path, &len);
    ck_assert_ptr_nonnull(text);
    text = realloc(text, len + 1);
    text[len] = '\0';
    size_t end_a = line_end(text, len, "first"), end_b = line_end(text, len, "second");
    ck_assert_uint_eq(end_a > end_b ? end_a : end_b, len);
    for (size_t n = 0; n <= len; n++) {
        write_bytes(cut, text, n);
        int want_a = n >= end_a, want_b = n >= end_b;
        sentinel_terms(got);
        ck_assert_msg(hb_model_cache_load(cut, "first", got) == want_a, "prefix %zu of %zu", n,
                      len);
        ck_assert(want_a ? terms_same(got, a) : untouched(got));
        sentinel_terms(got);
        ck_assert_msg(hb_model_cache_load(cut, "second", got) == want_b, "prefix %zu of %zu", n,
                      len);
        ck_assert(want_b ? terms_same(got, b) : untouched(got));
    }
    free(text);
}
END_TEST

/* Entry lines that are not exactly right; their time is now unless the
 * case says otherwise. */
static const struct {
    const char *what;
    const char *line; /* "@" stands for now's unix seconds */
} bad_lines[] = {
    {"NaN", "k\t@\t1 2 3 4 nan 6 7 8 9"},
    {"NaN first", "k\t@\tNAN 2 3 4 5 6 7 8 9"},
    {"inf", "k\t@\t1 2 3 4 5 6 7 8 inf"},
    {"-inf", "k\t@\t1 2 3 -inf 5 6 7 8 9"},
    {"overflow", "k\t@\t1 2 3 4 5 6 1e999 8 9"},
    {"negative", "k\t@\t1 2 3 4 5 -6 7 8 9"},
    {"tiny negative", "k\t@\t-1e-300 2 3 4 5 6 7 8 9"},
    {"8 numbers", "k\t@\t1 2 3 4 5 6 7 8"},
    {"10 numbers", "k\t@\t1 2 3 4 5 6 7 8 9 10"},
    {"trailing junk", "k\t@\t1 2 3 4 5 6 7 8 9x"},
    {"junk in a number", "k\t@\t1 2 3 4q 5 6 7 8 9"},
    {"trailing space", "k\t@\t1 2 3 4 5 6 7 8 9 "},
    {"trailing tab", "k\t@\t1 2 3 4 5 6 7 8 9\t"},
    {"CR LF", "k\t@\t1 2 3 4 5 6 7 8 9\r"},
    {"two spaces", "k\t@\t1 2 3  4 5 6 7 8 9"},
    {"leading space", "k\t@\t 1 2 3 4 5 6 7 8 9"},
    {"tab separator", "k\t@\t1 2 3\t4 5 6 7 8 9"},
    {"empty number", "k\t@\t1 2 3 4 5 6 7 8 "},
    {"no numbers", "k\t@\t"},
    {"no numbers field", "k\t@"},
    {"empty key", "\t@\t1 2 3 4 5 6 7 8 9"},
    {"key only", "k"},
    {"empty line", ""},
    {"time missing", "k\t\t1 2 3 4 5 6 7 8 9"},
    {"time junk", "k\t@x\t1 2 3 4 5 6 7 8 9"},
    {"time words", "k\tyesterday\t1 2 3 4 5 6 7 8 9"},
    {"time negative", "k\t-@\t1 2 3 4 5 6 7 8 9"},
    {"time plus", "k\t+@\t1 2 3 4 5 6 7 8 9"},
    {"time space", "k\t @\t1 2 3 4 5 6 7 8 9"},
    {"time overflow", "k\t99999999999999999999999\t1 2 3 4 5 6 7 8 9"},
    {"time far ahead", "k\t99999999999\t1 2 3 4 5 6 7 8 9"},
    {"time zero", "k\t0\t1 2 3 4 5 6 7 8 9"},
    {"spaces for tabs", "k @ 1 2 3 4 5 6 7 8 9"},
};

/* expand: tmpl into out with its first "@" replaced by now */
static void expand(char *out, size_t size, const char *tmpl, long long now)
{
    const char *at = strchr(tmpl, '@');
    if (at == NULL)
        snprintf(out, size, "%s", tmpl);
    else
        snprintf(out, size, "%.*s%lld%s", (int)(at - tmpl), tmpl, now, at + 1);
}

START_TEST(test_load_bad_entries)
{
    char dir[PATH_MAX], path[PATH_MAX], line[256], text[1024];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    long long now = (long long)time(NULL);
    /* the template itself, right, is found */
    snprintf(text, sizeof text, "hashbatch-models 1\nk\t%lld\t%s\n", now, GOOD_NUMBERS);
    write_text(path, text);
    hb_cost_terms got[HB_COST_CLASSES];
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        expand(line, sizeof line, bad_lines[i].line, now);
        snprintf(text, sizeof text, "hashbatch-models 1\n%s\n", line);
        write_text(path, text);
        assert_load_none(path, "k", bad_lines[i].what);
        /* a good entry after the bad line is still found */
        snprintf(text, sizeof text, "hashbatch-models 1\n%s\nk\t%lld\t9 8 7 6 5 4 3 2 1\n", line,
                 now);
        write_text(path, text);
        sentinel_terms(got);
        ck_assert_msg(hb_model_cache_load(path, "k", got) == 1, "%s hid the next line",
                      bad_lines[i].what);
        ck_assert(got[0].fixed_ns == 9 && got[2].ns_per_byte == 1);
    }
    /* a NUL byte ending the line early: what follows it is junk */
    snprintf(text, sizeof text, "hashbatch-models 1\nk\t%lld\t1 2 3 4 5 6 7 8 9#junk\n", now);
    size_t len = strlen(text);
    *strchr(text, '#') = '\0';
    write_bytes(path, text, len);
    assert_load_none(path, "k", "NUL in the line");
}
END_TEST

START_TEST(test_load_good_spellings)
{
    /* what strtod reads exactly, beyond %.17g's own output */
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    entry_file(path, "k", 0, "0 -0 1e3 1.5E-3 0x1p4 .5 5. 00012 3");
    hb_cost_terms got[HB_COST_CLASSES];
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    ck_assert(got[0].fixed_ns == 0 && got[0].ns_per_message == 0);
    ck_assert(got[0].ns_per_byte == 1000 && got[1].fixed_ns == 1.5e-3);
    ck_assert(got[1].ns_per_message == 16 && got[1].ns_per_byte == 0.5);
    ck_assert(got[2].fixed_ns == 5 && got[2].ns_per_message == 12 && got[2].ns_per_byte == 3);
}
END_TEST

START_TEST(test_load_age)
{
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    hb_cost_terms got[HB_COST_CLASSES];
    entry_file(path, "k", -HB_MODEL_CACHE_MAX_AGE_S - 60, GOOD_NUMBERS);
    assert_load_none(path, "k", "older than the maximum age");
    entry_file(path, "k", -HB_MODEL_CACHE_MAX_AGE_S + 3600, GOOD_NUMBERS);
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    entry_file(path, "k", 3600, GOOD_NUMBERS); /* an hour ahead: clock skew */
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    entry_file(path, "k", 10L * 24 * 3600, GOOD_NUMBERS); /* never stale: no */
    assert_load_none(path, "k", "ten days ahead");
}
END_TEST

START_TEST(test_load_newest_of_a_key)
{
    char dir[PATH_MAX], path[PATH_MAX], text[512];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    long long now = (long long)time(NULL);
    snprintf(text, sizeof text,
             "hashbatch-models 1\nk\t%lld\t1 1 1 1 1 1 1 1 1\nk\t%lld\t2 2 2 2 2 2 2 2 2\n",
             now - 50, now - 100);
    write_text(path, text);
    hb_cost_terms got[HB_COST_CLASSES];
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    ck_assert(got[0].fixed_ns == 1);
    /* storing another key keeps one line of k: the newest */
    hb_cost_terms a[HB_COST_CLASSES];
    sample_terms(a, 6);
    ck_assert_int_eq(hb_model_cache_store(path, "other", a), 1);
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    ck_assert(got[0].fixed_ns == 1);
    size_t len;
    char *t = (char *)tu_read_file(path, &len);
    ck_assert_ptr_nonnull(t);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += t[i] == '\n';
    ck_assert_int_eq(lines, 3);
    free(t);
}
END_TEST

START_TEST(test_load_size_cap)
{
    /* a 3 MiB file: an entry near its start is found, one past the first
     * MiB is not (the rest is never read) */
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    size_t cap = 3u << 20;
    char *text = malloc(cap + 1);
    ck_assert_ptr_nonnull(text);
    long long now = (long long)time(NULL);
    size_t at =
        (size_t)snprintf(text, cap, "hashbatch-models 1\nnear\t%lld\t%s\n", now, GOOD_NUMBERS);
    while (at + 200 < cap - 200)
        at += (size_t)snprintf(text + at, cap - at, "junk line %zu, not an entry\n", at);
    at += (size_t)snprintf(text + at, cap - at, "far\t%lld\t%s\n", now, GOOD_NUMBERS);
    write_bytes(path, text, at);
    free(text);
    hb_cost_terms got[HB_COST_CLASSES];
    ck_assert_int_eq(hb_model_cache_load(path, "near", got), 1);
    assert_load_none(path, "far", "past the first MiB");
}
END_TEST

START_TEST(test_store_entry_cap)
{
    /* 64 entries, written 1000 s ago and later; a 65th key drops the oldest */
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    char *text = malloc(64 * 128 + 64);
    ck_assert_ptr_nonnull(text);
    long long now = (long long)time(NULL);
    size_t at = (size_t)sprintf(text, "hashbatch-models 1\n");
    for (int i = 0; i < 64; i++)
        at += (size_t)sprintf(text + at, "key%d\t%lld\t%s\n", i, now - 1000 + i, GOOD_NUMBERS);
    write_text(path, text);
    free(text);
    hb_cost_terms a[HB_COST_CLASSES], got[HB_COST_CLASSES];
    ck_assert_int_eq(hb_model_cache_load(path, "key0", got), 1);
    sample_terms(a, 7);
    ck_assert_int_eq(hb_model_cache_store(path, "new", a), 1);
    ck_assert_int_eq(hb_model_cache_load(path, "new", got), 1);
    ck_assert(terms_same(got, a));
    assert_load_none(path, "key0", "the oldest of 65");
    char key[16];
    for (int i = 1; i < 64; i++) {
        snprintf(key, sizeof key, "key%d", i);
        ck_assert_msg(hb_model_cache_load(path, key, got) == 1, "%s lost", key);
    }
    /* re-storing a key already there drops nothing */
    ck_assert_int_eq(hb_model_cache_store(path, "key1", a), 1);
    for (int i = 1; i < 64; i++) {
        snprintf(key, sizeof key, "key%d", i);
        ck_assert_msg(hb_model_cache_load(path, key, got) == 1, "%s lost", key);
    }
    ck_assert_int_eq(hb_model_cache_load(path, "new", got), 1);
}
END_TEST

START_TEST(test_load_not_a_file)
{
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    hb_cost_terms a[HB_COST_CLASSES];
    sample_terms(a, 8);
    /* a directory where the file should be: load finds nothing, store
     * cannot rename over it and leaves nothing beside it */
    join(path, dir, "models.txt");
    ck_assert_int_eq(mkdir(path, 0700), 0);
    assert_load_none(path, "k", "a directory");
    ck_assert_int_eq(hb_model_cache_store(path, "k", a), 0);
    ck_assert_int_eq(entries_in(dir), 1);
    ck_assert_int_eq(entries_in(path), 0);
    /* a FIFO with no writer: load returns at once, finding nothing */
    join(path, dir, "fifo.txt");
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    assert_load_none(path, "k", "a FIFO");
    /* a path through a regular file */
    join(path, dir, "plain");
    write_text(path, "not a folder\n");
    join(path, dir, "plain/models.txt");
    assert_load_none(path, "k", "parent is a file");
    /* no path at all */
    assert_load_none("", "k", "empty path");
    hb_cost_terms t[HB_COST_CLASSES];
    ck_assert_int_eq(hb_model_cache_load(NULL, "k", t), 0);
    ck_assert_int_eq(hb_model_cache_load(path, NULL, t), 0);
    ck_assert_int_eq(hb_model_cache_load(path, "k", NULL), 0);
}
END_TEST

START_TEST(test_load_unreadable)
{
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    hb_cost_terms a[HB_COST_CLASSES];
    sample_terms(a, 9);
    ck_assert_int_eq(hb_model_cache_store(path, "k", a), 1);
    if (geteuid() == 0) {
        /* root reads a file whatever its mode, so chmod proves nothing
         * here; instead a path that cannot be opened: its parent is a
         * regular file (the good file itself) */
        char under[PATH_MAX];
        join(under, path, "models.txt");
        assert_load_none(under, "k", "parent is a file (as root)");
        return;
    }
    ck_assert_int_eq(chmod(path, 0), 0);
    assert_load_none(path, "k", "no read permission");
    ck_assert_int_eq(chmod(path, 0600), 0);
}
END_TEST

/* ---- store failures ------------------------------------------------- */

START_TEST(test_store_parent_is_file)
{
    char dir[PATH_MAX], plain[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(plain, dir, "plain");
    write_text(plain, "x\n");
    hb_cost_terms a[HB_COST_CLASSES];
    sample_terms(a, 10);
    join(path, dir, "plain/models.txt");
    ck_assert_int_eq(hb_model_cache_store(path, "k", a), 0);
    join(path, dir, "plain/hashbatch/models.txt");
    ck_assert_int_eq(hb_model_cache_store(path, "k", a), 0);
    ck_assert_int_eq(entries_in(dir), 1);
    size_t len;
    uint8_t *b = tu_read_file(plain, &len);
    ck_assert(b != NULL && len == 2 && memcmp(b, "x\n", 2) == 0);
    free(b);
}
END_TEST

START_TEST(test_store_read_only_folder)
{
    char dir[PATH_MAX], ro[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    hb_cost_terms a[HB_COST_CLASSES], got[HB_COST_CLASSES];
    sample_terms(a, 11);
    if (geteuid() == 0) {
        /* root writes into a 0500 folder anyway: use /proc/1/, where no
         * one can make files or folders (when /proc is there) */
        struct stat st;
        if (stat("/proc/1", &st) == 0 && S_ISDIR(st.st_mode)) {
            ck_assert_int_eq(hb_model_cache_store("/proc/1/hb-model-cache-test.txt", "k", a), 0);
            ck_assert(!exists("/proc/1/hb-model-cache-test.txt"));
            ck_assert_int_eq(hb_model_cache_store("/proc/1/hb-model-cache-test/models.txt", "k", a),
                             0);
            ck_assert(!exists("/proc/1/hb-model-cache-test"));
        }
        return;
    }
    join(ro, dir, "ro");
    ck_assert_int_eq(mkdir(ro, 0700), 0);
    join(path, ro, "models.txt");
    ck_assert_int_eq(hb_model_cache_store(path, "k", a), 1);
    ck_assert_int_eq(chmod(ro, 0500), 0);
    hb_cost_terms b[HB_COST_CLASSES];
    sample_terms(b, 12);
    ck_assert_int_eq(hb_model_cache_store(path, "k", b), 0);
    join(path, ro, "sub/models.txt");
    ck_assert_int_eq(hb_model_cache_store(path, "k", b), 0);
    ck_assert_int_eq(chmod(ro, 0700), 0);
    ck_assert_int_eq(entries_in(ro), 1);
    join(path, ro, "models.txt");
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    ck_assert_msg(terms_same(got, a), "the failed store changed the file");
}
END_TEST

START_TEST(test_store_refuses)
{
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    hb_cost_terms a[HB_COST_CLASSES], got[HB_COST_CLASSES];
    sample_terms(a, 13);
    const char *keys[] = {"", "a\tb", "a\nb", "a\rb", "\x01", "a\x7f", "tail\n"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(hb_model_cache_store(path, keys[i], a) == 0, "key %zu stored", i);
    char key[1002];
    memset(key, 'k', 1001);
    key[1001] = '\0';
    ck_assert_int_eq(hb_model_cache_store(path, key, a), 0);
    ck_assert_int_eq(hb_model_cache_load(path, key, got), 0);
    ck_assert_int_eq(hb_model_cache_store(NULL, "k", a), 0);
    ck_assert_int_eq(hb_model_cache_store("", "k", a), 0);
    ck_assert_int_eq(hb_model_cache_store(path, NULL, a), 0);
    ck_assert_int_eq(hb_model_cache_store(path, "k", NULL), 0);
    /* terms a load would refuse are not written */
    double badv[] = {NAN, INFINITY, -1, -DBL_MIN};
    for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
        hb_cost_terms b[HB_COST_CLASSES];
        memcpy(b, a, sizeof b);
        b[i % HB_COST_CLASSES].ns_per_message = badv[i];
        ck_assert_msg(hb_model_cache_store(path, "k", b) == 0, "bad term %zu stored", i);
    }
    ck_assert_int_eq(entries_in(dir), 0);
    /* 1000 bytes, and any byte from space up but DEL, are a key */
    key[1000] = '\0';
    ck_assert_int_eq(hb_model_cache_store(path, key, a), 1);
    ck_assert_int_eq(hb_model_cache_load(path, key, got), 1);
    ck_assert(terms_same(got, a));
    const char *odd = "cpu pool \xc3\xa9 ~!@#$%^&*()[]{};:'\",.<>/?\\|";
    ck_assert_int_eq(hb_model_cache_store(path, odd, a), 1);
    ck_assert_int_eq(hb_model_cache_load(path, odd, got), 1);
    ck_assert_int_eq(entries_in(dir), 1);
}
END_TEST

START_TEST(test_store_c_locale)
{
    /* the caller's locale may spell 1.5 as "1,5": the file never does */
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") == NULL &&
        setlocale(LC_NUMERIC, "fr_FR.UTF-8") == NULL)
        return; /* no such locale here: the C locale is what is tested */
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    join(path, dir, "models.txt");
    hb_cost_terms a[HB_COST_CLASSES], got[HB_COST_CLASSES];
    sample_terms(a, 14);
    ck_assert_int_eq(hb_model_cache_store(path, "k", a), 1);
    setlocale(LC_NUMERIC, "C");
    size_t len;
    char *t = (char *)tu_read_file(path, &len);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_null(memchr(t, ',', len));
    free(t);
    ck_assert_int_eq(hb_model_cache_load(path, "k", got), 1);
    ck_assert(terms_same(got, a));
}
END_TEST

/* ---- the path ------------------------------------------------------- */

static const char *const env_names[] = {"HASHBATCH_MODEL_CACHE", "XDG_CACHE_HOME", "HOME"};
enum { ENV_N = 3 };

typedef struct {
    char *value[ENV_N]; /* NULL: was unset */
} saved_env;

static saved_env env_save(void)
{
    saved_env s;
    for (int i = 0; i < ENV_N; i++) {
        const char *v = getenv(env_names[i]);
        s.value[i] = v ? strdup(v) : NULL;
    }
    return s;
}

static void env_restore(saved_env *s)
{
    for (int i = 0; i < ENV_N; i++) {
        if (s->value[i])
            setenv(env_names[i], s->value[i], 1);
        else
            unsetenv(env_names[i]);
        free(s->value[i]);
    }
}

/* env_set: the three variables (NULL: unset) */
static void env_set(const char *cache, const char *xdg, const char *home)
{
    const char *v[ENV_N] = {cache, xdg, home};
    for (int i = 0; i < ENV_N; i++) {
        if (v[i])
            setenv(env_names[i], v[i], 1);
        else
            unsetenv(env_names[i]);
    }
}

static const struct {
    const char *cache, *xdg, *home;
    const char *want; /* NULL: no cache */
} path_cases[] = {
    {"off", "/xdg", "/home/u", NULL},
    {"", "/xdg", "/home/u", NULL},
    {"/some/where/m.txt", "/xdg", "/home/u", "/some/where/m.txt"},
    {"rel/m.txt", NULL, NULL, "rel/m.txt"},
    {"OFF", NULL, NULL, "OFF"}, /* only "off" itself turns it off */
    {NULL, "/xdg", "/home/u", "/xdg/hashbatch/models.txt"},
    {NULL, NULL, "/home/u", "/home/u/.cache/hashbatch/models.txt"},
    {NULL, "", "/home/u", "/home/u/.cache/hashbatch/models.txt"},
    {NULL, "relative", "/home/u", "/home/u/.cache/hashbatch/models.txt"},
    {NULL, NULL, NULL, NULL},
    {NULL, NULL, "", NULL},
};

START_TEST(test_path_environment)
{
    saved_env saved = env_save();
    char buf[PATH_MAX];
    for (size_t i = 0; i < sizeof path_cases / sizeof path_cases[0]; i++) {
        env_set(path_cases[i].cache, path_cases[i].xdg, path_cases[i].home);
        memset(buf, 'x', sizeof buf);
        int got = hb_model_cache_path(buf, sizeof buf);
        if (path_cases[i].want == NULL) {
            ck_assert_msg(got == 0, "case %zu: a path (%.40s)", i, buf);
            continue;
        }
        ck_assert_msg(got == 1, "case %zu: no path", i);
        ck_assert_str_eq(buf, path_cases[i].want);
        /* it fits exactly, or not at all */
        size_t need = strlen(path_cases[i].want) + 1;
        ck_assert_int_eq(hb_model_cache_path(buf, need), 1);
        ck_assert_str_eq(buf, path_cases[i].want);
        ck_assert_int_eq(hb_model_cache_path(buf, need - 1), 0);
    }
    env_set(NULL, "/xdg", NULL);
    ck_assert_int_eq(hb_model_cache_path(NULL, 100), 0);
    ck_assert_int_eq(hb_model_cache_path(buf, 0), 0);
    env_restore(&saved);
}
END_TEST

/* ---- the engine ----------------------------------------------------- */

/* engine_env: the cache file at dir/models.txt, and XDG_CACHE_HOME and
 * HOME inside dir too, so no test touches the real cache */
static void engine_env(const char *dir, char *path)
{
    char xdg[PATH_MAX], home[PATH_MAX];
    join(path, dir, "models.txt");
    join(xdg, dir, "xdg");
    join(home, dir, "home");
    env_set(path, xdg, home);
}

static hb_engine *open_cpu(int calibrate, hb_stats *st)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.calibrate = calibrate;
    hb_engine *e = tu_open_cfg(&cfg);
    ck_assert_int_eq(hb_engine_stats(e, st), HB_OK);
    return e;
}

/* hash_some: a few messages through e, checked against OpenSSL */
static void hash_some(hb_engine *e, uint64_t seed)
{
    tu_msgset s;
    tu_msgset_random(&s, 40, 5000, seed);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "cpu engine");
    free(got);
    tu_msgset_free(&s);
}

/* first_open: an engine opened on an empty cache calibrates and writes
 * the file */
static void first_open(const char *path)
{
    hb_stats st;
    hb_engine *e = open_cpu(0, &st);
    ck_assert_int_eq(st.models_from_cache, 0);
    ck_assert_msg(st.calibration_ns > 0, "no calibration on an empty cache");
    hash_some(e, 1);
    hb_engine_close(e);
    size_t len;
    char *t = (char *)tu_read_file(path, &len);
    ck_assert_msg(t != NULL, "the engine wrote no model cache at %s", path);
    ck_assert(len > 19 && memcmp(t, "hashbatch-models 1\n", 19) == 0 && t[len - 1] == '\n');
    free(t);
}

START_TEST(test_engine_calibrates_then_reads)
{
    saved_env saved = env_save();
    char dir[PATH_MAX], path[PATH_MAX], xdg[PATH_MAX];
    tu_fresh_subdir(dir, root);
    engine_env(dir, path);
    first_open(path);
    hb_stats st;
    hb_engine *e = open_cpu(0, &st);
    ck_assert_int_eq(st.models_from_cache, 1);
    ck_assert_uint_eq(st.calibration_ns, 0);
    hash_some(e, 2);
    hb_engine_close(e);
    join(xdg, dir, "xdg");
    ck_assert_msg(!exists(xdg), "the default cache folder was made");
    env_restore(&saved);
}
END_TEST

/* file_terms: every entry's terms in the file at path (up to max) */
static int file_terms(const char *path, hb_cost_terms (*out)[HB_COST_CLASSES], int max)
{
    size_t len;
    char *t = (char *)tu_read_file(path, &len);
    ck_assert_ptr_nonnull(t);
    t = realloc(t, len + 1);
    t[len] = '\0';
    int n = 0;
    for (char *line = strchr(t, '\n'); line && line[1] && n < max; line = strchr(line + 1, '\n')) {
        char *p = strchr(line + 1, '\t');
        ck_assert_ptr_nonnull(p);
        p = strchr(p + 1, '\t');
        ck_assert_ptr_nonnull(p);
        double v[9];
        for (int k = 0; k < 9; k++)
            v[k] = strtod(p + 1, &p);
        for (unsigned c = 0; c < HB_COST_CLASSES; c++)
            out[n][c] = (hb_cost_terms){v[3 * c], v[3 * c + 1], v[3 * c + 2]};
        n++;
    }
    free(t);
    return n;
}

START_TEST(test_engine_reports_cached_terms)
{
    saved_env saved = env_save();
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    engine_env(dir, path);
    first_open(path);
    hb_cost_terms in_file[8][HB_COST_CLASSES];
    int n = file_terms(path, in_file, 8);
    ck_assert_int_ge(n, 1);
    hb_stats st;
    hb_engine *e = open_cpu(0, &st);
    ck_assert_int_eq(st.models_from_cache, 1);
    /* before any batch, the pool's model is one of the file's, bitwise */
    int found = 0;
    for (unsigned d = 0; d < st.ndevices && d < HB_STATS_MAX_DEVICES; d++) {
        if (!st.device[d].is_cpu)
            continue;
        for (int i = 0; i < n; i++)
            found |= terms_same(st.device[d].model, in_file[i]);
    }
    ck_assert_msg(found, "the pool's model is none of the %d in the file", n);
    hb_engine_close(e);
    env_restore(&saved);
}
END_TEST

START_TEST(test_engine_calibrate_forced)
{
    saved_env saved = env_save();
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    engine_env(dir, path);
    first_open(path);
    hb_stats st;
    hb_engine *e = open_cpu(1, &st);
    ck_assert_int_eq(st.models_from_cache, 0);
    ck_assert_msg(st.calibration_ns > 0, "calibrate = 1 did not calibrate");
    hash_some(e, 3);
    hb_engine_close(e);
    env_restore(&saved);
}
END_TEST

/* cpuinfo_field: the first value of /proc/cpuinfo's field name into out
 * (read here independently of machine_key.c); 0 if it has none. */
static int cpuinfo_field(const char *name, char *out, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    int found = 0;
    size_t n = strlen(name);
    while (!found && f != NULL && fgets(line, sizeof line, f) != NULL) {
        char *colon = strchr(line, ':');
        if (colon == NULL || strncmp(line, name, n) != 0 ||
            strspn(line + n, " \t") != (size_t)(colon - line) - n)
            continue;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, size, "%s", colon + 2);
        found = 1;
    }
    if (f != NULL)
        fclose(f);
    return found;
}

/* The machine key names the CPU's generation, not only its brand string
 * (a VM's "AMD EPYC" is Zen 3, 4 or 5), and fits on one line. */
START_TEST(test_machine_key_names_generation)
{
    char key[1024], family[128], model[128], want[300];
    size_t len = hb_machine_key(key, sizeof key);
    ck_assert_uint_eq(len, strlen(key));
    ck_assert_msg(strncmp(key, "hashbatch ", 10) == 0 && len > 3 &&
                      strcmp(key + len - 3, " | ") == 0,
                  "key '%s'", key);
    for (size_t i = 0; i < len; i++)
        ck_assert_msg((unsigned char)key[i] >= 0x20 && key[i] != 0x7f, "control character in '%s'",
                      key);
    if (!cpuinfo_field("cpu family", family, sizeof family) ||
        !cpuinfo_field("model", model, sizeof model)) {
        fprintf(stderr,
                "note: /proc/cpuinfo has no cpu family and model here; checked the form only\n");
        return;
    }
    snprintf(want, sizeof want, "family %s model %s ", family, model);
    ck_assert_msg(strstr(key, want) != NULL, "key '%s' lacks '%s'", key, want);
}
END_TEST

/* run_delayed: an engine read from the cache at path hashes batches; with
 * delay, every pool batch is held up 2 ms by an injected fault, so that
 * its model learns a pool far slower than this machine's. */
static void run_delayed(int delay)
{
    hb_stats st;
    hb_engine *e = open_cpu(0, &st);
    ck_assert_int_eq(st.models_from_cache, 1);
    if (delay) {
        hb_fault_plan plan = {.kind = HB_FAULT_DELAY_CPU, .delay_ns = 2000000};
        ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
    }
    for (uint64_t seed = 10; seed < 22; seed++)
        hash_some(e, seed);
    hb_engine_close(e);
}

/* A run whose costs a testing hook distorted (here: delays) stores
 * nothing; the same run undelayed does store what it learnt (so the first
 * half can fail). */
START_TEST(test_engine_distorted_run_stores_nothing)
{
    saved_env saved = env_save();
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    engine_env(dir, path);
    first_open(path);
    size_t before_len, after_len;
    uint8_t *before = tu_read_file(path, &before_len);
    run_delayed(1);
    uint8_t *after = tu_read_file(path, &after_len);
    ck_assert_ptr_nonnull(after);
    ck_assert_msg(after_len == before_len && memcmp(before, after, before_len) == 0,
                  "a run with injected delays changed the model cache");
    free(after);
    run_delayed(0);
    after = tu_read_file(path, &after_len);
    ck_assert_ptr_nonnull(after);
    ck_assert_msg(after_len != before_len || memcmp(before, after, before_len) != 0,
                  "an undelayed run stored nothing either: the check above proves nothing");
    free(after);
    free(before);
    env_restore(&saved);
}
END_TEST

/* The damaged caches: garbage, cut in half, a directory, a path whose
 * parent is a regular file. */
enum { DAMAGE_GARBAGE, DAMAGE_TRUNCATED, DAMAGE_DIRECTORY, DAMAGE_UNREACHABLE, DAMAGE_N };

static void damage(const char *dir, char *path, int how)
{
    if (how == DAMAGE_UNREACHABLE) {
        char plain[PATH_MAX];
        join(plain, dir, "plain");
        write_text(plain, "x\n");
        join(path, dir, "plain/models.txt");
        setenv("HASHBATCH_MODEL_CACHE", path, 1);
        return;
    }
    if (how == DAMAGE_DIRECTORY) {
        ck_assert_int_eq(mkdir(path, 0700), 0);
        return;
    }
    first_open(path);
    size_t len;
    uint8_t *t = tu_read_file(path, &len);
    ck_assert_ptr_nonnull(t);
    if (how == DAMAGE_GARBAGE)
        for (size_t i = 19; i < len; i++)
            t[i] = (uint8_t)(t[i] * 7 + 3);
    size_t keep = len;
    if (how == DAMAGE_TRUNCATED) {
        /* the header and half the first entry line: no entry survives */
        const uint8_t *nl = memchr(t + 19, '\n', len - 19);
        ck_assert_ptr_nonnull(nl);
        keep = 19 + (size_t)(nl - (t + 19)) / 2;
    }
    write_bytes(path, t, keep);
    free(t);
}

START_TEST(test_engine_damaged_cache)
{
    saved_env saved = env_save();
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    engine_env(dir, path);
    damage(dir, path, _i);
    hb_stats st;
    hb_engine *e = open_cpu(0, &st);
    ck_assert_int_eq(st.models_from_cache, 0);
    ck_assert_msg(st.calibration_ns > 0, "damage %d: no calibration", _i);
    hash_some(e, 4 + (uint64_t)_i);
    hb_engine_close(e);
    /* a damaged file is replaced by a good one, read by the next open */
    if (_i == DAMAGE_GARBAGE || _i == DAMAGE_TRUNCATED) {
        e = open_cpu(0, &st);
        ck_assert_msg(st.models_from_cache == 1, "damage %d: not rewritten", _i);
        hash_some(e, 10);
        hb_engine_close(e);
    }
    env_restore(&saved);
}
END_TEST

START_TEST(test_engine_cache_off)
{
    saved_env saved = env_save();
    char dir[PATH_MAX], path[PATH_MAX];
    tu_fresh_subdir(dir, root);
    engine_env(dir, path);
    setenv("HASHBATCH_MODEL_CACHE", "off", 1);
    for (int round = 0; round < 2; round++) {
        hb_stats st;
        hb_engine *e = open_cpu(0, &st);
        ck_assert_int_eq(st.models_from_cache, 0);
        ck_assert(st.calibration_ns > 0);
        hash_some(e, 20 + (uint64_t)round);
        hb_engine_close(e);
    }
    ck_assert_msg(entries_in(dir) == 0, "\"off\" wrote something");
    env_restore(&saved);
}
END_TEST

static Suite *model_cache_suite(void)
{
    Suite *s = suite_create("model_cache");
    TCase *tc = tcase_create("cache");
    tcase_set_timeout(tc, 60);
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_test(tc, test_round_trip_two_keys);
    tcase_add_test(tc, test_store_makes_folders);
    tcase_add_test(tc, test_load_missing_empty_foreign);
    tcase_add_test(tc, test_load_every_prefix);
    tcase_add_test(tc, test_load_bad_entries);
    tcase_add_test(tc, test_load_good_spellings);
    tcase_add_test(tc, test_load_age);
    tcase_add_test(tc, test_load_newest_of_a_key);
    tcase_add_test(tc, test_load_size_cap);
    tcase_add_test(tc, test_store_entry_cap);
    tcase_add_test(tc, test_load_not_a_file);
    tcase_add_test(tc, test_load_unreadable);
    tcase_add_test(tc, test_store_parent_is_file);
    tcase_add_test(tc, test_store_read_only_folder);
    tcase_add_test(tc, test_store_refuses);
    tcase_add_test(tc, test_store_c_locale);
    tcase_add_test(tc, test_path_environment);
    tcase_add_test(tc, test_machine_key_names_generation);
    suite_add_tcase(s, tc);

    TCase *te = tcase_create("engine");
    tcase_set_timeout(te, 120);
    tcase_add_unchecked_fixture(te, root_setup, root_teardown);
    tcase_add_test(te, test_engine_calibrates_then_reads);
    tcase_add_test(te, test_engine_reports_cached_terms);
    tcase_add_test(te, test_engine_calibrate_forced);
    tcase_add_test(te, test_engine_distorted_run_stores_nothing);
    tcase_add_loop_test(te, test_engine_damaged_cache, 0, DAMAGE_N);
    tcase_add_test(te, test_engine_cache_off);
    suite_add_tcase(s, te);
    return s;
}

int main(void)
{
    return tu_run_suite(model_cache_suite());
}
