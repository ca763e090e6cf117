/*
 * test_program_cache.c - built OpenCL programs kept between runs
 * (host/src/program_cache.h) and the OpenCL backend's use of them.
 *
 * Covers, in TCase "file": the key changes with every part and with the
 * source, and does not run parts together; store then load round-trips
 * the bytes and makes the folders; load finds nothing for another key, in
 * a missing, empty or foreign file, in every prefix of a good file, with
 * any one byte of the binary or of its header's digest changed, with
 * bytes after the binary, in a directory or a FIFO (without blocking);
 * store fails, leaving nothing behind, where the folder cannot be made;
 * hb_program_cache_path follows HASHBATCH_PROGRAM_CACHE ("off" and ""
 * turn it off), XDG_CACHE_HOME and HOME.
 * In TCase "engine" (the OpenCL backend on the real device, pocl here):
 * a first open builds from source and writes one file; a second open
 * loads it (the file is not rewritten: same inode) and hashes right; a
 * file whose binary was damaged, truncated, or replaced by a directory
 * still opens (building from source), hashes right and, where it can, is
 * replaced by a good one; a cache that cannot be written still opens;
 * "off" writes nothing. Digests are checked against OpenSSL's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "program_cache.h"
#include "test_util.h"

static char root[64];

static void root_setup(void)
{
    tu_temp_dir(root, sizeof root, "hb-program-cache");
}

static void root_teardown(void)
{
    tu_remove_tree(root);
}

static int entries_in(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void write_bytes(const char *path, const void *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static char *read_bytes(const char *path, size_t *len)
{
    char *b = (char *)tu_read_file(path, len);
    ck_assert_ptr_nonnull(b);
    return b;
}

static const char *const KEY = "0123456789abcdef0123456789abcdef01234567";
static const char *const OTHER_KEY = "89abcdef0123456789abcdef0123456789abcdef";

/* A binary of len bytes, every byte different from its neighbours. */
static unsigned char *sample_binary(size_t len)
{
    unsigned char *b = malloc(len);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)(i * 131u + 7u);
    return b;
}

static int loads(const char *path, const char *key, const unsigned char *want, size_t want_len)
{
    unsigned char *got = NULL;
    size_t len = 0;
    int ok = hb_program_cache_load(path, key, &got, &len);
    if (ok && want != NULL)
        ck_assert(len == want_len && memcmp(got, want, len) == 0);
    free(got);
    return ok;
}

/* ---- file ------------------------------------------------------------ */

START_TEST(test_key_parts)
{
    char a[HB_PROGRAM_KEY_HEX], b[HB_PROGRAM_KEY_HEX];
    const char *p1[] = {"pocl", "dev", "-DX"};
    const char *p2[] = {"pocl", "dev", "-DY"};
    const char *p3[] = {"poc", "ldev", "-DX"}; /* the same bytes run together */
    hb_program_key(a, p1, 3, "src", 3);
    ck_assert_uint_eq(strlen(a), 40);
    hb_program_key(b, p1, 3, "src", 3);
    ck_assert_str_eq(a, b);
    hb_program_key(b, p2, 3, "src", 3);
    ck_assert_str_ne(a, b);
    hb_program_key(b, p3, 3, "src", 3);
    ck_assert_str_ne(a, b);
    hb_program_key(b, p1, 3, "srd", 3);
    ck_assert_str_ne(a, b);
    hb_program_key(b, p1, 2, "src", 3);
    ck_assert_str_ne(a, b);
}
END_TEST

START_TEST(test_round_trip_and_folders)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    tu_fresh_subdir(dir, root);
    snprintf(path, sizeof path, "%s/a/b/%s.bin", dir, KEY);
    unsigned char *bin = sample_binary(100000);
    ck_assert_int_eq(hb_program_cache_store(path, KEY, bin, 100000), 1);
    ck_assert(loads(path, KEY, bin, 100000));
    ck_assert(!loads(path, OTHER_KEY, NULL, 0));
    snprintf(path, sizeof path, "%s/a/b", dir);
    ck_assert_int_eq(entries_in(path), 1); /* no temporary file left */
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    free(bin);
}
END_TEST

START_TEST(test_load_damaged)
{
    char dir[PATH_MAX], path[PATH_MAX + 64], bad[PATH_MAX + 64];
    tu_fresh_subdir(dir, root);
    snprintf(path, sizeof path, "%s/%s.bin", dir, KEY);
    snprintf(bad, sizeof bad, "%s/bad.bin", dir);
    size_t n = 3000;
    unsigned char *bin = sample_binary(n);
    ck_assert_int_eq(hb_program_cache_store(path, KEY, bin, n), 1);
    size_t len;
    char *good = read_bytes(path, &len);
    ck_assert_uint_gt(len, n);
    ck_assert(!loads("/nonexistent/x.bin", KEY, NULL, 0));
    for (size_t cut = 0; cut < len; cut += (cut < 200 ? 1 : 97)) { /* every prefix of the header */
        write_bytes(bad, good, cut);
        ck_assert_msg(!loads(bad, KEY, NULL, 0), "a prefix of %zu bytes loaded", cut);
    }
    for (size_t at = 0; at < len; at += (at < 200 ? 1 : 61)) { /* one byte changed */
        good[at] ^= 0x01;
        write_bytes(bad, good, len);
        good[at] ^= 0x01;
        ck_assert_msg(!loads(bad, KEY, NULL, 0), "a file with byte %zu changed loaded", at);
    }
    char *longer = malloc(len + 1);
    memcpy(longer, good, len);
    longer[len] = 'x';
    write_bytes(bad, longer, len + 1);
    ck_assert(!loads(bad, KEY, NULL, 0));
    write_bytes(bad, "hashbatch-program 2 ", 20);
    ck_assert(!loads(bad, KEY, NULL, 0));
    write_bytes(bad, good, len); /* the same bytes at another name load */
    ck_assert(loads(bad, KEY, bin, n));
    free(longer);
    free(good);
    free(bin);
}
END_TEST

START_TEST(test_not_a_file)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    tu_fresh_subdir(dir, root);
    ck_assert(!loads(dir, KEY, NULL, 0));
    snprintf(path, sizeof path, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert(!loads(path, KEY, NULL, 0)); /* returns: does not wait for a writer */
}
END_TEST

START_TEST(test_store_fails_cleanly)
{
    char dir[PATH_MAX], path[PATH_MAX + 64], file[PATH_MAX + 64];
    tu_fresh_subdir(dir, root);
    snprintf(file, sizeof file, "%s/plain", dir);
    write_bytes(file, "x", 1);
    snprintf(path, sizeof path, "%s/plain/sub/%s.bin", dir, KEY);
    unsigned char *bin = sample_binary(64);
    ck_assert_int_eq(hb_program_cache_store(path, KEY, bin, 64), 0);
    ck_assert_int_eq(hb_program_cache_store(path, KEY, bin, 0), 0);
    ck_assert_int_eq(entries_in(dir), 1);
    free(bin);
}
END_TEST

START_TEST(test_path_rules)
{
    char buf[PATH_MAX];
    setenv("HASHBATCH_PROGRAM_CACHE", "/x/y", 1);
    ck_assert(hb_program_cache_path(buf, sizeof buf, KEY));
    ck_assert_str_eq(buf, "/x/y/0123456789abcdef0123456789abcdef01234567.bin");
    setenv("HASHBATCH_PROGRAM_CACHE", "off", 1);
    ck_assert(!hb_program_cache_path(buf, sizeof buf, KEY));
    setenv("HASHBATCH_PROGRAM_CACHE", "", 1);
    ck_assert(!hb_program_cache_path(buf, sizeof buf, KEY));
    unsetenv("HASHBATCH_PROGRAM_CACHE");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    ck_assert(hb_program_cache_path(buf, sizeof buf, KEY));
    ck_assert_str_eq(buf, "/xdg/hashbatch/programs/0123456789abcdef0123456789abcdef01234567.bin");
    setenv("XDG_CACHE_HOME", "relative", 1); /* ignored, as XDG says */
    setenv("HOME", "/home/u", 1);
    ck_assert(hb_program_cache_path(buf, sizeof buf, KEY));
    ck_assert_str_eq(buf,
                     "/home/u/.cache/hashbatch/programs/0123456789abcdef0123456789abcdef01234567.bin");
    ck_assert(!hb_program_cache_path(buf, 20, KEY));
}
END_TEST

/* ---- engine ---------------------------------------------------------- */

/* An OpenCL engine with its program cache in dir; hashes a mixed batch
 * and checks it against OpenSSL's digests. */
static void open_hash_close(const char *dir)
{
    setenv("HASHBATCH_PROGRAM_CACHE", dir, 1);
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    enum { N = 300 };
    static uint8_t data[N * 97];
    hb_msg m[N];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7u + 3u);
    for (size_t i = 0; i < N; i++)
        m[i] = (hb_msg){data + i * 3, i * 97 / 3};
    hb_digest got[N];
    tu_batch(e, m, N, got);
    hb_digest *want = tu_oracle(m, N);
    tu_assert_digests(m, N, want, got, "program cache");
    free(want);
    tu_assert_clean(e);
    hb_engine_close(e);
}

/* The one file in dir, its path into out; fails unless there is one. */
static void only_file(const char *dir, char *out, size_t size)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(out, size, "%s/%s", dir, e->d_name);
            n++;
        }
    closedir(d);
    ck_assert_int_eq(n, 1);
}

static ino_t inode_of(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_ino;
}

/* A fresh cache folder into dir, an engine's first open in it, and the
 * one file that open wrote into file. */
static void first_build(char *dir, char *file, size_t file_size)
{
    tu_fresh_subdir(dir, root);
    open_hash_close(dir);
    only_file(dir, file, file_size);
}

START_TEST(test_engine_builds_then_loads)
{
    char dir[PATH_MAX], file[PATH_MAX + 300];
    first_build(dir, file, sizeof file);
    size_t len;
    char *b = read_bytes(file, &len);
    ck_assert(len > 100 && memcmp(b, "hashbatch-program 1 ", 20) == 0);
    free(b);
    ino_t first = inode_of(file);
    open_hash_close(dir);
    ck_assert_msg(inode_of(file) == first, "the second open rebuilt the program");
    only_file(dir, file, sizeof file);
}
END_TEST

START_TEST(test_engine_survives_damage)
{
    char dir[PATH_MAX], file[PATH_MAX + 300];
    first_build(dir, file, sizeof file);
    size_t len;
    char *good = read_bytes(file, &len);
    /* the binary's last byte changed: the digest check refuses it */
    good[len - 1] ^= 0x55;
    write_bytes(file, good, len);
    ino_t damaged = inode_of(file);
    open_hash_close(dir);
    ck_assert_msg(inode_of(file) != damaged, "the damaged file was not replaced");
    /* truncated to half */
    write_bytes(file, good, len / 2);
    open_hash_close(dir);
    size_t now_len;
    char *now = read_bytes(file, &now_len);
    ck_assert_uint_eq(now_len, len); /* rebuilt and stored whole again */
    free(now);
    /* a directory where the file was: opens, and cannot store */
    ck_assert_int_eq(unlink(file), 0);
    ck_assert_int_eq(mkdir(file, 0700), 0);
    open_hash_close(dir);
    struct stat st;
    ck_assert_int_eq(stat(file, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    free(good);
}
END_TEST

START_TEST(test_engine_unwritable_and_off)
{
    char dir[PATH_MAX], below[PATH_MAX + 64];
    tu_fresh_subdir(dir, root);
    snprintf(below, sizeof below, "%s/plain", dir);
    write_bytes(below, "x", 1);
    snprintf(below, sizeof below, "%s/plain/sub", dir); /* cannot be made */
    open_hash_close(below);
    ck_assert_int_eq(entries_in(dir), 1);
    setenv("HASHBATCH_PROGRAM_CACHE", "off", 1);
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    hb_engine_close(e);
    ck_assert_int_eq(entries_in(dir), 1);
}
END_TEST

static Suite *program_cache_suite(void)
{
    Suite *s = suite_create("program_cache");
    TCase *tc = tcase_create("file");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_test(tc, test_key_parts);
    tcase_add_test(tc, test_round_trip_and_folders);
    tcase_add_test(tc, test_load_damaged);
    tcase_add_test(tc, test_not_a_file);
    tcase_add_test(tc, test_store_fails_cleanly);
    tcase_add_test(tc, test_path_rules);
    suite_add_tcase(s, tc);
    tc = tcase_create("engine");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_engine_builds_then_loads);
    tcase_add_test(tc, test_engine_survives_damage);
    tcase_add_test(tc, test_engine_unwritable_and_off);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(program_cache_suite());
}
