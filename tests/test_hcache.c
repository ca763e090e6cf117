/*
 * test_hcache.c - the hash cache's ordered lookup (host/cli/cache/hcache.c:
 * hc_lookup_many) against its point lookup (hc_lookup) as the oracle, on
 * a real SQLite file.
 *
 * Covers: every key of a dense cache found with its row; keys without a
 * row, and rows whose size, mtime or ctime differ from the key (another
 * version of the file), not found; keys spread thinly over many rows no
 * key asks for (the scan seeks forward again) and keys between rows;
 * several devices, including device and inode numbers past 2^63 (SQLite
 * stores them as negative 64-bit integers, so the keys must be sorted as
 * SQLite sorts them); one key; no key; an empty cache.
 *
 * And the filesystem in the key (issue 27): one device and inode on two
 * filesystems (a loop device reused) are two rows, neither found through
 * the other's key, nor through a third filesystem's; filesystem numbers
 * past 2^63; a key whose filesystem is unknown (0) neither stored nor
 * found; hc_key_of; a cache of the older version 1 (rows keyed without a
 * filesystem) emptied and upgraded when opened, one of a newer version
 * refused and left as it was.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sqlite3.h>

#include "hcache.h"
#include "test_util.h"

static char root[64];
static char db_path[128];
static hcache *hc;

static void setup(void)
{
    tu_temp_dir(root, sizeof root, "hb-hcache");
    snprintf(db_path, sizeof db_path, "%s/cache.sqlite", root);
    char err[HC_ERR_MAX];
    ck_assert_msg(hc_open(db_path, 1, &hc, err, sizeof err) == 0, "hc_open: %s", err);
}

static void teardown(void)
{
    hc_close(hc);
    hc = NULL;
    tu_remove_tree(root);
}

/* The filesystem the rows of device dev are on, unless a test says. */
static uint64_t fs_for(uint64_t dev)
{
    return dev ^ 0xf5f5f5f5f5f5f5f5ull;
}

/* The row stored for (dev, ino): digests made from the pair. */
static hc_row row_for(uint64_t dev, uint64_t ino)
{
    hc_row r;
    memset(&r, 0, sizeof r);
    r.key.fs = fs_for(dev);
    r.key.dev = dev;
    r.key.ino = ino;
    r.key.size = ino * 7 + 1;
    r.key.mtime_ns = (int64_t)(ino % 1000) * 1000000000LL + 1;
    r.key.ctime_ns = r.key.mtime_ns + 5;
    r.has_prefix = 1;
    r.has_full = (ino % 3) != 0;
    for (int i = 0; i < 20; i++) {
        r.prefix[i] = (uint8_t)(dev * 31 + ino + (uint64_t)i);
        r.full[i] = r.has_full ? (uint8_t)(ino * 17 + (uint64_t)i) : 0;
    }
    r.proof = (ino % 5) == 0 ? (int64_t)(ino + 1) : 0;
    return r;
}

static void store(const hc_row *rows, size_t n)
{
    ck_assert_int_eq(hc_write_begin(hc), 0);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(hc_put(hc, &rows[i], "/some/path") == 0, "hc_put: %s", hc_error(hc));
    ck_assert_int_eq(hc_write_commit(hc), 0);
}

static int cmp_key(const void *a, const void *b)
{
    return hc_key_cmp(a, b);
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* check_against_point_lookups: keys[0..n) sorted, then hc_lookup_many
 * compared with hc_lookup key by key; returns how many were found. */
static size_t check_against_point_lookups(hc_key *keys, size_t n)
{
    if (n > 1)
        qsort(keys, n, sizeof *keys, cmp_key);
    hc_row *rows = calloc(n ? n : 1, sizeof *rows);
    unsigned char *found = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(rows);
    ck_assert_ptr_nonnull(found);
    memset(found, 0xAA, n);
    ck_assert_int_eq(hc_read_begin(hc), 0);
    ck_assert_msg(hc_lookup_many(hc, keys, n, rows, found) == 0, "%s", hc_error(hc));
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        hc_row want;
        int f = hc_lookup(hc, &keys[i], &want);
        ck_assert_int_ge(f, 0);
        ck_assert_msg(found[i] == f, "key %zu (dev %llu ino %llu): many says %d, one says %d", i,
                      (unsigned long long)keys[i].dev, (unsigned long long)keys[i].ino, found[i],
                      f);
        if (f) {
            ck_assert_mem_eq(&rows[i].key, &keys[i], sizeof keys[i]);
            ck_assert_int_eq(rows[i].has_prefix, want.has_prefix);
            ck_assert_int_eq(rows[i].has_full, want.has_full);
            ck_assert_mem_eq(rows[i].prefix, want.prefix, 20);
            if (want.has_full)
                ck_assert_mem_eq(rows[i].full, want.full, 20);
            ck_assert_int_eq(rows[i].proof, want.proof);
            hits++;
        }
    }
    ck_assert_int_eq(hc_read_end(hc), 0);
    free(rows);
    free(found);
    return hits;
}

START_TEST(dense_every_key_found)
{
    size_t n = 5000;
    hc_row *rows = malloc(n * sizeof *rows);
    hc_key *keys = malloc(n * sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        rows[i] = row_for(42, 1000 + i);
        keys[n - 1 - i] = rows[i].key; /* unsorted on purpose */
    }
    store(rows, n);
    ck_assert_uint_eq(check_against_point_lookups(keys, n), n);
    free(rows);
    free(keys);
}
END_TEST

START_TEST(other_versions_and_missing_rows_not_found)
{
    size_t n = 3000;
    hc_row *rows = malloc(n * sizeof *rows);
    hc_key *keys = malloc(2 * n * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        rows[i] = row_for(7, 10 + 2 * i);
    store(rows, n);
    size_t k = 0, want = 0;
    for (size_t i = 0; i < n; i++) {
        hc_key key = rows[i].key;
        switch (i % 5) {
        case 1: key.size++; break;      /* appended */
        case 2: key.mtime_ns++; break;  /* touched */
        case 3: key.ctime_ns += 2; break; /* rewritten, mtime put back */
        default: want++; break;
        }
        keys[k++] = key;
        hc_key between = rows[i].key; /* an inode with no row */
        between.ino++;
        keys[k++] = between;
    }
    ck_assert_uint_eq(check_against_point_lookups(keys, k), want);
    free(rows);
    free(keys);
}
END_TEST

START_TEST(sparse_keys_among_many_rows)
{
    /* 20,000 rows, a key for one in 97 of them and for gaps: the scan
     * passes long stretches of rows no key wants. */
    size_t n = 20000;
    hc_row *rows = malloc(n * sizeof *rows);
    hc_key *keys = malloc(n * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        rows[i] = row_for(3, 5 * i + 1);
    store(rows, n);
    size_t k = 0, want = 0;
    uint64_t s = 12345;
    for (size_t i = 0; i < n; i += 1 + next_random(&s) % 193) {
        keys[k++] = rows[i].key;
        want++;
        if (i % 2) {
            hc_key gap = rows[i].key;
            gap.ino += 2; /* between this row and the next */
            keys[k++] = gap;
        }
    }
    ck_assert_uint_eq(check_against_point_lookups(keys, k), want);
    free(rows);
    free(keys);
}
END_TEST

START_TEST(devices_and_numbers_past_2_63)
{
    const uint64_t devs[] = {0, 1, 2049, (uint64_t)1 << 63, UINT64_MAX};
    const uint64_t inos[] = {1, 2, 3, 1000, ((uint64_t)1 << 63) + 5, UINT64_MAX - 1};
    size_t nd = sizeof devs / sizeof *devs, ni = sizeof inos / sizeof *inos;
    hc_row rows[5 * 6];
    hc_key keys[5 * 6 + 5];
    size_t n = 0, k = 0;
    for (size_t d = 0; d < nd; d++)
        for (size_t i = 0; i < ni; i++) {
            rows[n] = row_for(devs[d], inos[i]);
            keys[k++] = rows[n].key;
            n++;
        }
    store(rows, n);
    for (size_t d = 0; d < nd; d++) { /* a key per device with no row */
        hc_key none = rows[d * ni].key;
        none.ino = 500;
        keys[k++] = none;
    }
    ck_assert_uint_eq(check_against_point_lookups(keys, k), n);
}
END_TEST

START_TEST(one_key_no_key_empty_cache)
{
    hc_key key = row_for(9, 9).key;
    ck_assert_uint_eq(check_against_point_lookups(&key, 1), 0); /* empty cache */
    hc_key none[1];
    ck_assert_uint_eq(check_against_point_lookups(none, 0), 0);
    hc_row r = row_for(9, 9);
    store(&r, 1);
    ck_assert_uint_eq(check_against_point_lookups(&key, 1), 1);
}
END_TEST

START_TEST(random_mixes)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    size_t n = 4000;
    hc_row *rows = malloc(n * sizeof *rows);
    hc_key *keys = malloc(n * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        rows[i] = row_for(next_random(&s) % 3, next_random(&s) % 100000);
    store(rows, n); /* a repeated (dev, ino) keeps its last row */
    for (int round = 0; round < 20; round++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (next_random(&s) % 4 != 0)
                continue;
            hc_key key = rows[i].key;
            if (next_random(&s) % 3 == 0)
                key.ino = next_random(&s) % 100000; /* maybe a row, maybe not */
            int dup = 0; /* the contract: no two keys with one (dev, ino) */
            for (size_t j = 0; j < k && !dup; j++)
                dup = keys[j].dev == key.dev && keys[j].ino == key.ino;
            if (!dup)
                keys[k++] = key;
        }
        check_against_point_lookups(keys, k);
    }
    free(rows);
    free(keys);
}
END_TEST

/* on_fs: row_for(dev, ino) on filesystem fs, its digests told apart by
 * fs. */
static hc_row on_fs(uint64_t fs, uint64_t dev, uint64_t ino)
{
    hc_row r = row_for(dev, ino);
    r.key.fs = fs;
    for (int i = 0; i < 20; i++)
        r.prefix[i] ^= (uint8_t)(fs >> (i % 8 * 8));
    r.prefix[0] ^= 0x80; /* never equal to row_for's */
    return r;
}

START_TEST(filesystem_is_part_of_the_key)
{
    const uint64_t fa = ((uint64_t)1 << 63) | 3, fb = 5, fc = UINT64_MAX;
    size_t n = 2000;
    hc_row *rows = malloc(2 * n * sizeof *rows);
    hc_key *keys = malloc(3 * n * sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        rows[i] = on_fs(fa, 11, 1 + i);        /* the first image */
        rows[n + i] = on_fs(fb, 11, 1001 + i); /* the next, on the same loop device */
    }
    store(rows, 2 * n);
    size_t k = 0;
    for (size_t i = 0; i < 2 * n; i++)
        keys[k++] = rows[i].key;
    for (size_t i = 0; i < n; i++) { /* a third filesystem: nothing of it */
        keys[k] = rows[i].key;
        keys[k++].fs = fc;
    }
    ck_assert_uint_eq(check_against_point_lookups(keys, k), 2 * n);
    for (size_t i = 1000; i < n; i++) { /* one dev, ino, size and times on both: two files */
        const hc_row *b = &rows[n + i - 1000];
        hc_key ka = rows[i].key;
        ka.fs = fb;
        ck_assert_mem_eq(&ka, &b->key, sizeof ka); /* they differ in fs alone */
        hc_row got;
        ck_assert_int_eq(hc_lookup(hc, &rows[i].key, &got), 1);
        ck_assert_mem_eq(got.prefix, rows[i].prefix, 20);
        ck_assert_int_eq(hc_lookup(hc, &b->key, &got), 1);
        ck_assert_mem_eq(got.prefix, b->prefix, 20);
        ck_assert_int_ne(memcmp(b->prefix, rows[i].prefix, 20), 0);
    }
    hc_row same = on_fs(fb, 11, 5); /* fb's row for a's file 5, its key otherwise equal */
    same.key = rows[4].key;
    same.key.fs = fb;
    store(&same, 1);
    hc_row got;
    ck_assert_int_eq(hc_lookup(hc, &rows[4].key, &got), 1);
    ck_assert_mem_eq(got.prefix, rows[4].prefix, 20); /* a's row untouched */
    ck_assert_int_eq(hc_lookup(hc, &same.key, &got), 1);
    ck_assert_mem_eq(got.prefix, same.prefix, 20);
    ck_assert_int_ne(memcmp(same.prefix, rows[4].prefix, 20), 0);
    free(rows);
    free(keys);
}
END_TEST

START_TEST(unknown_filesystem_never_stored_nor_found)
{
    hc_row r = row_for(9, 9);
    r.key.fs = 0;
    store(&r, 1); /* accepted, not stored */
    hc_stats st;
    ck_assert_int_eq(hc_get_stats(hc, &st), 0);
    ck_assert_int_eq(st.entries, 0);
    hc_row known = row_for(9, 9);
    store(&known, 1);
    hc_key keys[2] = {r.key, known.key};
    ck_assert_uint_eq(check_against_point_lookups(keys, 2), 1);
    hc_row got;
    ck_assert_int_eq(hc_lookup(hc, &r.key, &got), 0);

    struct stat sb;
    memset(&sb, 0, sizeof sb);
    sb.st_dev = 2049;
    sb.st_ino = 77;
    sb.st_size = 123;
    sb.st_mtim.tv_sec = 1577836800;
    sb.st_ctim.tv_sec = 1577836800;
    sb.st_ctim.tv_nsec = 7;
    hc_key k;
    hc_key_of(&sb, 0xabcdef, &k);
    ck_assert_uint_eq(k.fs, 0xabcdef);
    ck_assert_uint_eq(k.dev, 2049);
    ck_assert_uint_eq(k.ino, 77);
    ck_assert_uint_eq(k.size, 123);
    ck_assert_int_eq(k.mtime_ns, 1577836800LL * 1000000000LL);
    ck_assert_int_eq(k.ctime_ns, 1577836800LL * 1000000000LL + 7);
}
END_TEST

/* make_db: a SQLite file at path made by sql. */
static void make_db(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* The schema of version 1: rows keyed by device and inode only. */
#define V1_SCHEMA                                                                                  \
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"                                \
    "INSERT INTO meta VALUES('format', 'hashbatch-hash-cache');"                                   \
    "CREATE TABLE files(dev INTEGER NOT NULL, ino INTEGER NOT NULL, size INTEGER NOT NULL,"        \
    " mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, prefix BLOB, sha1 BLOB,"               \
    " proof INTEGER, path TEXT NOT NULL, PRIMARY KEY(dev, ino)) WITHOUT ROWID;"                    \
    "INSERT INTO files VALUES(11, 5, 36, 1, 2, zeroblob(20), zeroblob(20), 7, '/x');"

START_TEST(older_version_emptied_newer_left_alone)
{
    char old[160], newer[160], err[HC_ERR_MAX];
    snprintf(old, sizeof old, "%s/v1.sqlite", root);
    snprintf(newer, sizeof newer, "%s/v3.sqlite", root);
    make_db(old, V1_SCHEMA "PRAGMA user_version = 1;");
    hcache *c = NULL;
    ck_assert_msg(hc_open(old, 0, &c, err, sizeof err) == 0, "hc_open: %s", err);
    hc_stats st;
    ck_assert_int_eq(hc_get_stats(c, &st), 0);
    ck_assert_int_eq(st.version, HC_VERSION);
    ck_assert_int_eq(st.entries, 0); /* the old row is gone, never used */
    hc_row r = row_for(11, 5);
    ck_assert_int_eq(hc_write_begin(c), 0);
    ck_assert_int_eq(hc_put(c, &r, "/x"), 0);
    ck_assert_int_eq(hc_write_commit(c), 0);
    hc_close(c);
    ck_assert_msg(hc_open(old, 0, &c, err, sizeof err) == 0, "hc_open again: %s", err);
    hc_row got;
    ck_assert_int_eq(hc_lookup(c, &r.key, &got), 1); /* upgraded once: rows kept after */
    hc_close(c);

    make_db(newer, V1_SCHEMA "PRAGMA user_version = 3;");
    c = NULL;
    ck_assert_int_eq(hc_open(newer, 0, &c, err, sizeof err), -1);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err, "format version (3") != NULL, "%s", err);
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_open(newer, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM files", -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(s, 0), 1); /* left as it was */
    sqlite3_finalize(s);
    sqlite3_close(db);
}
END_TEST

static Suite *hcache_suite(void)
{
    Suite *s = suite_create("hcache");
    TCase *tc = tcase_create("lookup_many");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, dense_every_key_found);
    tcase_add_test(tc, other_versions_and_missing_rows_not_found);
    tcase_add_test(tc, sparse_keys_among_many_rows);
    tcase_add_test(tc, devices_and_numbers_past_2_63);
    tcase_add_test(tc, one_key_no_key_empty_cache);
    tcase_add_test(tc, random_mixes);
    tcase_add_test(tc, filesystem_is_part_of_the_key);
    tcase_add_test(tc, unknown_filesystem_never_stored_nor_found);
    tcase_add_test(tc, older_version_emptied_newer_left_alone);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(hcache_suite());
}
