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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The row stored for (dev, ino): digests made from the pair. */
static hc_row row_for(uint64_t dev, uint64_t ino)
{
    hc_row r;
    memset(&r, 0, sizeof r);
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(hcache_suite());
}
