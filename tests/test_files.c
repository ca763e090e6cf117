/*
 * test_files.c - files jobs (hb_submit_files, hb_hash_files and the
 * hb_files_job_* calls): hashing files by path or descriptor.
 *
 * Covers: 400 files of 0 B to 3 MiB (block boundaries, the small/stream
 * threshold and its neighbours) through the cpu, opencl and auto
 * backends, with several reader counts and memory caps, against
 * OpenSSL; the memory cap holds (peak_memory); the callback comes exactly
 * once per file; per-file errors (missing, directory, FIFO with no writer
 * - no hang -, dangling symlink, symlink loop, /proc/self/mem, not a
 * failure of the job) while the other files still hash; /proc files that
 * report size 0, /proc/self/pagemap (reads of multiples of 8 only);
 * descriptors (a pipe fed by a thread, a file from an offset); a file
 * truncated or grown while it is streamed (HB_ERR_FILE_CHANGED, not
 * SIGBUS); files rewritten in place while read (issue 11, defect 3: the
 * snapshot's fields one by one, a ctime-only change, a rewrite whose mtime
 * is put back, and a writer rewriting 200 KiB files with known contents
 * round after round: no digest of a content that never was); cancel, also
 * of a 16 GiB stream (stops within a chunk); the SHA-1 collision pairs
 * (tests/vectors, grown by equal suffixes); argument errors; big files
 * streamed side by side through every CPU implementation's lanes (issue
 * 12): right under every verify mode, and with the lanes corrupted on
 * purpose wrong digests show with verification off and are caught (and
 * corrected) with full and sampled verification; fewer big files than
 * the readers' lanes, shared among the readers (issue 31), also when
 * cancelled. The oracle is
 * OpenSSL (tu_sha1) on the same bytes. Missing test data fails a test.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "files/files_input.h"
#include "hb_testing.h"
#include "test_util.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define NFILES 400

static const hb_backend_kind backends[] = {HB_BACKEND_CPU, HB_BACKEND_OPENCL, HB_BACKEND_AUTO};
#define NBACKENDS (sizeof backends / sizeof backends[0])

/* A folder of test files with their contents' digests. */
typedef struct {
    char dir[64];
    char **paths;
    size_t *sizes;
    hb_digest *want;
    size_t n;
} tree;

/* write_file: path with len bytes of data. */
static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* make_dir: a fresh temporary folder in t->dir. */
static void make_dir(tree *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/hb-files-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
}

/* pick_size: boundary sizes first, then mostly small random ones. */
static size_t pick_size(tu_rng *r, size_t i)
{
    static const size_t fixed[] = {0,       1,   55,      56,      63,      64,
                                   65,      119, 120,     4095,    4096,    65536,
                                   MIB - 1, MIB, MIB + 1, 2 * MIB, 3 * MIB, 3 * MIB - 7};
    if (i < sizeof fixed / sizeof fixed[0])
        return fixed[i];
    size_t k = tu_rng_below(r, 100);
    if (k < 5) /* empty files take the unknown-size path, between slices */
        return 0;
    if (k < 70)
        return tu_rng_below(r, 2000);
    if (k < 95)
        return tu_rng_below(r, 200 * KIB);
    return tu_rng_below(r, 3 * MIB);
}

/* A file size for file i of a tree. */
typedef size_t (*size_picker)(tu_rng *r, size_t i);

/* make_tree_of: n files named PREFIX%04zu of random content, of the sizes
 * pick gives, and their digests. */
static void make_tree_of(tree *t, size_t n, uint64_t seed, const char *prefix, size_picker pick)
{
    tu_rng r;
    tu_rng_seed(&r, seed);
    make_dir(t);
    t->n = n;
    t->paths = calloc(n, sizeof *t->paths);
    t->sizes = calloc(n, sizeof *t->sizes);
    t->want = tu_digests(n);
    uint8_t *buf = malloc(3 * MIB);
    ck_assert(t->paths && t->sizes && buf);
    for (size_t i = 0; i < n; i++) {
        size_t len = pick(&r, i);
        char path[128];
        snprintf(path, sizeof path, "%s/%s%04zu", t->dir, prefix, i);
        tu_rng_fill(&r, buf, len);
        write_file(path, buf, len);
        tu_sha1(buf, len, t->want[i]);
        t->paths[i] = strdup(path);
        t->sizes[i] = len;
    }
    free(buf);
}

/* make_tree: n files of random content and sizes (pick_size), and their
 * digests. */
static void make_tree(tree *t, size_t n, uint64_t seed)
{
    make_tree_of(t, n, seed, "f", pick_size);
}

static void free_tree(tree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        unlink(t->paths[i]);
        free(t->paths[i]);
    }
    rmdir(t->dir);
    free(t->paths);
    free(t->sizes);
    free(t->want);
}

/* Counts callbacks per index. */
typedef struct {
    pthread_mutex_t lock;
    unsigned *calls;
    int concurrent, inside;
} calls;

static void count_call(void *ctx, size_t i, const hb_file_result *r)
{
    calls *c = ctx;
    (void)r;
    /* calls are documented as never concurrent: no lock needed, but a
     * trylock tells when two overlap */
    if (pthread_mutex_trylock(&c->lock) != 0) {
        c->concurrent = 1;
        return;
    }
    c->calls[i]++;
    pthread_mutex_unlock(&c->lock);
}

/* submit_tree: every file of t by path as one files job on e, each
 * callback counted in c; *res and *in are the job's arrays (the caller
 * frees them and c->calls). */
static hb_files_job *submit_tree(hb_engine *e, const tree *t, hb_files_options *o, calls *c,
                                 hb_file_result **res, hb_file_input **in)
{
    *c = (calls){PTHREAD_MUTEX_INITIALIZER, calloc(t->n, sizeof(unsigned)), 0, 0};
    o->on_file = count_call;
    o->ctx = c;
    *res = calloc(t->n, sizeof **res);
    *in = calloc(t->n, sizeof **in);
    for (size_t i = 0; i < t->n; i++) {
        (*in)[i].path = t->paths[i];
        (*in)[i].fd = -1;
    }
    hb_files_job *j = NULL;
    ck_assert_int_eq(hb_submit_files(e, *in, t->n, *res, o, &j), HB_OK);
    return j;
}

/* hash_tree: every file of t as one files job on e, waited for (it must
 * end HB_OK); *res gets the results, *st the job's counts, c the
 * callbacks (the caller frees *res and c->calls). */
static void hash_tree(hb_engine *e, const tree *t, hb_files_options *o, calls *c,
                      hb_file_result **res, hb_files_stats *st)
{
    hb_file_input *in;
    hb_files_job *j = submit_tree(e, t, o, c, res, &in);
    ck_assert_int_eq(hb_files_job_wait(j, -1), HB_OK);
    ck_assert_int_eq(hb_files_job_stats(j, st), HB_OK);
    hb_files_job_free(j);
    free(in);
}

/* expect_all_ok: every result OK with the right digest and size. */
static void expect_all_ok(const tree *t, const hb_file_result *res, const char *what)
{
    for (size_t i = 0; i < t->n; i++) {
        ck_assert_msg(res[i].status == HB_OK, "%s: %s: %s (errno %d)", what, t->paths[i],
                      hb_status_name(res[i].status), res[i].err);
        ck_assert_msg(memcmp(res[i].digest, t->want[i], 20) == 0, "%s: %s (%zu bytes): digest",
                      what, t->paths[i], t->sizes[i]);
        ck_assert_uint_eq(res[i].size, t->sizes[i]);
    }
}

/* One configuration of the readers. */
typedef struct {
    unsigned io_threads;
    size_t small_max, memory_max, batch_bytes, chunk_bytes;
} reader_cfg;

static const reader_cfg reader_cfgs[] = {
    {0, 0, 0, 0, 0},                             /* defaults */
    {1, 64 * KIB, 256 * KIB, 64 * KIB, 4 * KIB}, /* one reader, tight memory */
    {8, 2 * MIB, 8 * MIB, 1 * MIB, 256 * KIB},   /* many readers, big batches */
    {1, 0, 1 * MIB, 0, 0},                       /* two arenas fill the cap: an empty file's
                                                    buffer must make an idle one give way */
};
#define NREADER_CFGS (sizeof reader_cfgs / sizeof reader_cfgs[0])

START_TEST(test_tree_digests)
{
    hb_backend_kind kind = backends[_i / (int)NREADER_CFGS];
    const reader_cfg *rc = &reader_cfgs[_i % (int)NREADER_CFGS];
    tree t;
    make_tree(&t, NFILES, 1000u + (unsigned)_i);
    hb_engine *e = tu_open(kind);
    hb_files_options o;
    hb_files_options_init(&o);
    o.io_threads = rc->io_threads;
    o.small_max = rc->small_max;
    o.memory_max = rc->memory_max;
    o.batch_bytes = rc->batch_bytes;
    o.chunk_bytes = rc->chunk_bytes;
    calls c;
    hb_file_result *res;
    hb_files_stats st;
    hash_tree(e, &t, &o, &c, &res, &st);

    char what[96];
    snprintf(what, sizeof what, "%s, readers config %d", hb_backend_name(kind),
             _i % (int)NREADER_CFGS);
    expect_all_ok(&t, res, what);
    ck_assert_msg(!c.concurrent, "%s: callbacks overlapped", what);
    for (size_t i = 0; i < t.n; i++)
        ck_assert_msg(c.calls[i] == 1, "%s: callback for %zu came %u times", what, i, c.calls[i]);
    uint64_t total = 0;
    for (size_t i = 0; i < t.n; i++)
        total += t.sizes[i];
    ck_assert_uint_eq(st.files, t.n);
    ck_assert_uint_eq(st.files_done, t.n);
    ck_assert_uint_eq(st.files_failed, 0);
    ck_assert_uint_eq(st.bytes_read, total);
    ck_assert_uint_eq(st.batched_files + st.streamed_files, t.n);
    ck_assert_uint_eq(st.batched_bytes + st.streamed_bytes, total);
    ck_assert_msg(st.streamed_files > 0 && st.batched_files > 0,
                  "%s: expected both paths used (%llu streamed, %llu batched)", what,
                  (unsigned long long)st.streamed_files, (unsigned long long)st.batched_files);
    size_t cap = rc->memory_max ? rc->memory_max : 64 * MIB;
    ck_assert_msg(st.peak_memory <= cap, "%s: %llu bytes held, cap %zu", what,
                  (unsigned long long)st.peak_memory, cap);
    ck_assert_msg(st.peak_memory > 0, "%s: no memory counted", what);
    /* the engine hashed the batched bytes, nothing else */
    hb_stats es;
    ck_assert_int_eq(hb_engine_stats(e, &es), HB_OK);
    ck_assert_uint_eq(es.bytes, st.batched_bytes);
    if (kind == HB_BACKEND_OPENCL)
        ck_assert_uint_eq(es.device_bytes, st.batched_bytes);
    hb_engine_close(e);
    free(res);
    free(c.calls);
    free_tree(&t);
}
END_TEST

START_TEST(test_hash_files_sync)
{
    tree t;
    make_tree(&t, 40, 77);
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    hb_file_result *res = calloc(t.n, sizeof *res);
    ck_assert_int_eq(hb_hash_files(e, (const char *const *)t.paths, t.n, res, NULL), HB_OK);
    expect_all_ok(&t, res, "hb_hash_files");
    ck_assert_int_eq(hb_hash_files(e, NULL, 0, NULL, NULL), HB_OK);
    hb_engine_close(e);
    free(res);
    free_tree(&t);
}
END_TEST

/* Bad inputs among good ones. */
START_TEST(test_per_file_errors)
{
    hb_backend_kind kind = backends[_i];
    tree t;
    make_dir(&t);
    char good[128], fifo[128], dangling[128], loop[128], missing[128];
    snprintf(good, sizeof good, "%s/good", t.dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", t.dir);
    snprintf(dangling, sizeof dangling, "%s/dangling", t.dir);
    snprintf(loop, sizeof loop, "%s/loop", t.dir);
    snprintf(missing, sizeof missing, "%s/missing", t.dir);
    write_file(good, "hello\n", 6);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(symlink("nowhere", dangling), 0);
    ck_assert_int_eq(symlink("loop", loop), 0);
    const char *paths[] = {good, missing, t.dir, fifo, dangling, loop, "/proc/self/mem", good};
    const hb_status want_st[] = {HB_OK,     HB_ERR_IO, HB_ERR_IO, HB_ERR_NOT_REGULAR,
                                 HB_ERR_IO, HB_ERR_IO, HB_ERR_IO, HB_OK};
    const int want_err[] = {0, ENOENT, EISDIR, 0, ENOENT, ELOOP, EIO, 0};
    size_t n = sizeof paths / sizeof paths[0];
    hb_file_result res[sizeof paths / sizeof paths[0]];
    hb_engine *e = tu_open(kind);
    /* a FIFO with no writer that held the job up would hang it: the case's
     * timeout fails it (no clock is read here: the machine may be loaded) */
    ck_assert_int_eq(hb_hash_files(e, paths, n, res, NULL), HB_OK);
    uint8_t want[20];
    tu_sha1("hello\n", 6, want);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(res[i].status == want_st[i], "%s: %s, expected %s", paths[i],
                      hb_status_name(res[i].status), hb_status_name(want_st[i]));
        ck_assert_msg(res[i].err == want_err[i], "%s: errno %d, expected %d", paths[i], res[i].err,
                      want_err[i]);
        if (want_st[i] == HB_OK)
            ck_assert(memcmp(res[i].digest, want, 20) == 0);
    }
    hb_engine_close(e);
    unlink(good);
    unlink(fifo);
    unlink(dangling);
    unlink(loop);
    rmdir(t.dir);
}
END_TEST

/* /proc files report size 0 but have content: read to the end. */
START_TEST(test_proc_files)
{
    const char *path = "/proc/version";
    size_t len = 0;
    uint8_t *data = tu_read_file(path, &len);
    struct stat st;
    if (data == NULL || stat(path, &st) != 0)
        ck_abort_msg("%s: cannot read it (%s): this test needs a mounted /proc", path,
                     strerror(errno));
    ck_assert_msg(st.st_size == 0 && len > 0,
                  "%s: expected size 0 in stat and content, got %lld and %zu bytes", path,
                  (long long)st.st_size, len);
    uint8_t want[20];
    tu_sha1(data, len, want);
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    hb_file_result r;
    hb_files_options o;
    hb_files_options_init(&o);
    o.small_max = 16; /* also: grows past small_max, then streams */
    o.memory_max = 64;
    ck_assert_int_eq(hb_hash_files(e, &path, 1, &r, NULL), HB_OK);
    ck_assert_int_eq(r.status, HB_OK);
    ck_assert_uint_eq(r.size, len);
    ck_assert(memcmp(r.digest, want, 20) == 0);
    ck_assert_int_eq(hb_hash_files(e, &path, 1, &r, &o), HB_OK);
    ck_assert_int_eq(r.status, HB_OK);
    ck_assert(memcmp(r.digest, want, 20) == 0);
    hb_engine_close(e);
    free(data);
}
END_TEST

/* pagemap_end: the size of the pagemap open on fd (8 bytes per page of the
 * address space, which stat does not tell): the first 8-aligned offset
 * where an 8-byte read returns nothing, found by bisection. */
static uint64_t pagemap_end(int fd)
{
    uint64_t lo = 0, hi = (uint64_t)1 << 60; /* an entry at lo; none at hi */
    uint8_t entry[8];
    ck_assert_int_eq(pread(fd, entry, 8, 0), 8);
    while (hi - lo > 8) {
        uint64_t mid = (lo + (hi - lo) / 2) & ~(uint64_t)7;
        ssize_t got = pread(fd, entry, 8, (off_t)mid);
        ck_assert_msg(got == 0 || got == 8, "pagemap at %llu: %zd (%s)", (unsigned long long)mid,
                      got, strerror(errno));
        if (got == 8)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* plain_read_length: bytes from fd's offset to its end with 1 MiB reads. */
static uint64_t plain_read_length(int fd)
{
    uint8_t *buf = malloc(MIB);
    uint64_t total = 0;
    ssize_t got;
    while ((got = read(fd, buf, MIB)) > 0)
        total += (uint64_t)got;
    ck_assert_msg(got == 0, "plain read: %s", strerror(errno));
    free(buf);
    return total;
}

/* /proc/self/pagemap takes only reads of a multiple of 8 bytes at 8-aligned
 * offsets (EINVAL otherwise) and says size 0: the unknown-size path must
 * read in whole buffers, also where it grows past small_max and streams.
 * Read from an offset 3 MiB before its end (the whole map is 2^35 bytes or
 * more), by descriptor; the byte count is checked against a plain read
 * loop (the entries of the stack's pages may change between two reads,
 * so the digests are not compared). */
START_TEST(test_proc_pagemap)
{
    const char *path = "/proc/self/pagemap";
    int fd = open(path, O_RDONLY);
    ck_assert_msg(fd >= 0, "%s: %s: this test needs a mounted /proc", path, strerror(errno));
    uint64_t end = pagemap_end(fd);
    ck_assert_msg(end % 8 == 0 && end > 4 * MIB, "%s: implausible size %llu", path,
                  (unsigned long long)end);
    off_t from = (off_t)(end - 3 * MIB - 8 * 1001);
    ck_assert_int_eq(lseek(fd, from, SEEK_SET), from);
    uint64_t want = plain_read_length(fd);
    ck_assert_uint_eq(want, end - (uint64_t)from);
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    for (int k = 0; k < 2; k++) {
        hb_files_options o;
        hb_files_options_init(&o);
        o.small_max = k ? 64 * KIB : 0; /* default, then a small one */
        ck_assert_int_eq(lseek(fd, from, SEEK_SET), from);
        hb_file_input in = {NULL, fd};
        hb_file_result r;
        hb_files_job *j = NULL;
        ck_assert_int_eq(hb_submit_files(e, &in, 1, &r, &o, &j), HB_OK);
        ck_assert_int_eq(hb_files_job_wait(j, -1), HB_OK);
        hb_files_job_free(j);
        ck_assert_msg(r.status == HB_OK, "%s from %lld (small_max %zu): %s, errno %d (%s)", path,
                      (long long)from, o.small_max, hb_status_name(r.status), r.err,
                      strerror(r.err));
        ck_assert_uint_eq(r.size, want);
    }
    hb_engine_close(e);
    close(fd);
}
END_TEST

/* Feeds a pipe from a thread. */
typedef struct {
    int fd;
    const uint8_t *data;
    size_t len;
} feeder;

static void *feed(void *arg)
{
    feeder *f = arg;
    size_t off = 0;
    while (off < f->len) {
        ssize_t w = write(f->fd, f->data + off, f->len - off > 65536 ? 65536 : f->len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(f->fd);
    return NULL;
}

START_TEST(test_descriptors)
{
    tu_rng r;
    tu_rng_seed(&r, 5);
    size_t plen = 3 * MIB + 17;
    uint8_t *pdata = malloc(plen);
    tu_rng_fill(&r, pdata, plen);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    feeder f = {p[1], pdata, plen};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, feed, &f), 0);

    tree t;
    make_dir(&t);
    char path[128];
    snprintf(path, sizeof path, "%s/file", t.dir);
    write_file(path, pdata, 100000);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(lseek(fd, 1000, SEEK_SET), 1000);

    hb_file_input in[2] = {{NULL, p[0]}, {NULL, fd}};
    hb_file_result res[2];
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    hb_files_job *j = NULL;
    ck_assert_int_eq(hb_submit_files(e, in, 2, res, NULL, &j), HB_OK);
    ck_assert_int_eq(hb_files_job_wait(j, -1), HB_OK);
    hb_files_job_free(j);
    pthread_join(th, NULL);
    uint8_t want[20];
    tu_sha1(pdata, plen, want);
    ck_assert_int_eq(res[0].status, HB_OK);
    ck_assert_uint_eq(res[0].size, plen);
    ck_assert(memcmp(res[0].digest, want, 20) == 0);
    tu_sha1(pdata + 1000, 99000, want);
    ck_assert_int_eq(res[1].status, HB_OK);
    ck_assert_uint_eq(res[1].size, 99000);
    ck_assert(memcmp(res[1].digest, want, 20) == 0);
    /* the descriptors stay open: the job does not close what it did not open */
    ck_assert_int_eq(fcntl(fd, F_GETFD), 0);
    ck_assert_int_ne(fcntl(p[0], F_GETFD), -1);
    close(fd);
    close(p[0]);
    hb_engine_close(e);
    unlink(path);
    rmdir(t.dir);
    free(pdata);
}
END_TEST

/* Changes a file once the job has started reading it. */
typedef struct {
    hb_files_job *job;
    const char *path;
    int grow;
} changer;

static void *change_file(void *arg)
{
    changer *c = arg;
    hb_files_stats st;
    do {
        hb_files_job_stats(c->job, &st);
    } while (st.bytes_read == 0);
    if (c->grow) {
        int fd = open(c->path, O_WRONLY | O_APPEND);
        ck_assert_int_eq(write(fd, "more", 4), 4);
        close(fd);
    } else {
        ck_assert_int_eq(truncate(c->path, 1000), 0);
    }
    return NULL;
}

/* A file truncated or grown while streamed: HB_ERR_FILE_CHANGED. The
 * stream reads one byte per read() so the change always lands mid-way
 * (4 MiB of one-byte reads take seconds; the change takes microseconds). */
START_TEST(test_changed_while_read)
{
    tree t;
    make_dir(&t);
    char path[128];
    snprintf(path, sizeof path, "%s/changing", t.dir);
    uint8_t *data = calloc(1, 4 * MIB);
    write_file(path, data, 4 * MIB);
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    hb_files_options o;
    hb_files_options_init(&o);
    o.io_threads = 1;
    o.chunk_bytes = 1;
    o.small_max = 4096;
    const char *paths[] = {path};
    hb_file_input in = {path, -1};
    hb_file_result r;
    hb_files_job *j = NULL;
    ck_assert_int_eq(hb_submit_files(e, &in, 1, &r, &o, &j), HB_OK);
    changer c = {j, path, _i};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, change_file, &c), 0);
    ck_assert_int_eq(hb_files_job_wait(j, -1), HB_OK);
    pthread_join(th, NULL);
    hb_files_job_free(j);
    ck_assert_msg(r.status == HB_ERR_FILE_CHANGED, "%s while read: got %s",
                  _i ? "grown" : "truncated", hb_status_name(r.status));
    /* unchanged now: the same file hashes fine */
    ck_assert_int_eq(hb_hash_files(e, paths, 1, &r, NULL), HB_OK);
    ck_assert_int_eq(r.status, HB_OK);
    hb_engine_close(e);
    unlink(path);
    rmdir(t.dir);
    free(data);
}
END_TEST

/* wait_coarse_past: until the coarse wall clock, which timestamps file
 * changes on kernels without fine-grained ones, is past t (so a change
 * made now gets a ctime other than t there too). */
static void wait_coarse_past(const struct timespec *t)
{
    struct timespec now;
    for (;;) {
        ck_assert_int_eq(clock_gettime(CLOCK_REALTIME_COARSE, &now), 0);
        if (now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec > t->tv_nsec))
            return;
        sched_yield();
    }
}

/* The "unchanged" predicate looks at every field of the snapshot: two
 * snapshots that differ in one field only, whichever, are two versions. */
START_TEST(test_snapshot_fields)
{
    const hb_file_snapshot a = {.size = 204800,
                                .mtime_sec = 1700000000,
                                .mtime_nsec = 123456789,
                                .ctime_sec = 1700000000,
                                .ctime_nsec = 123456789,
                                .ino = 4242,
                                .dev_major = 254,
                                .dev_minor = 1,
                                .change_cookie = 7,
                                .has_change_cookie = 1};
    ck_assert(hb_file_snapshot_same(&a, &a));
    hb_file_snapshot b[9];
    for (int k = 0; k < 9; k++)
        b[k] = a;
    b[0].size++;
    b[1].mtime_sec++;
    b[2].mtime_nsec++;
    b[3].ctime_sec++;
    b[4].ctime_nsec++; /* a rewrite within one tick, seen by multigrain ctime */
    b[5].ino++;
    b[6].dev_major++;
    b[7].dev_minor++;
    b[8].change_cookie++;
    static const char *field[9] = {"size",         "mtime s",      "mtime ns",
                                   "ctime s",      "ctime ns",     "inode",
                                   "device major", "device minor", "change cookie"};
    for (int k = 0; k < 9; k++)
        ck_assert_msg(!hb_file_snapshot_same(&a, &b[k]), "a difference in %s only is not seen",
                      field[k]);
    /* a cookie is compared only when both snapshots have one */
    hb_file_snapshot c = b[8];
    c.has_change_cookie = 0;
    ck_assert(hb_file_snapshot_same(&a, &c));
}
END_TEST

/* A real file whose ctime alone changes (chmod to its own mode keeps size,
 * mtime and content) is no longer the file hb_file_open saw. */
START_TEST(test_ctime_only_change)
{
    tree t;
    make_dir(&t);
    char path[128];
    snprintf(path, sizeof path, "%s/chmod", t.dir);
    write_file(path, "same bytes\n", 11);
    struct stat before, after;
    ck_assert_int_eq(stat(path, &before), 0);
    hb_file_input in = {path, -1};
    hb_open_file f;
    int err = 0;
    ck_assert_int_eq(hb_file_open(&in, -1, 0, &f, &err), HB_OK);
    ck_assert_int_eq(hb_file_unchanged(&f, &err), HB_OK);
    wait_coarse_past(&before.st_ctim);
    ck_assert_int_eq(chmod(path, before.st_mode & 07777), 0);
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert(after.st_size == before.st_size && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
              after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    ck_assert_int_eq(hb_file_unchanged(&f, &err), HB_ERR_FILE_CHANGED);
    hb_file_close(&f);
    unlink(path);
    rmdir(t.dir);
}
END_TEST

/* Rewrites a file in place once the job has started reading it, then
 * sets its mtime back, as `touch -r`, `cp -p` or rsync do. */
typedef struct {
    hb_files_job *job;
    const char *path;
    const uint8_t *data; /* the new content, as long as the old one */
    size_t len;
    struct stat before;      /* the file as the job first saw it */
    uint64_t read_when_done; /* the job's bytes_read once rewritten */
    int err;
} rewriter;

static void *rewrite_keeping_mtime(void *arg)
{
    rewriter *w = arg;
    hb_files_stats st;
    do {
        hb_files_job_stats(w->job, &st);
    } while (st.bytes_read == 0);
    wait_coarse_past(&w->before.st_ctim);
    struct timespec times[2] = {{0, UTIME_OMIT}, w->before.st_mtim};
    int fd = open(w->path, O_WRONLY);
    if (fd < 0 || pwrite(fd, w->data, w->len, 0) != (ssize_t)w->len || futimens(fd, times) != 0)
        w->err = errno ? errno : EIO;
    if (fd >= 0)
        close(fd);
    hb_files_job_stats(w->job, &st);
    w->read_when_done = st.bytes_read;
    return NULL;
}

/* A file rewritten in place (same size) while it is read, its mtime then
 * put back: size and mtime are as before, but the bytes read are half old,
 * half new. The ctime (which no one can set) tells: HB_ERR_FILE_CHANGED.
 * One-byte reads of 4 MiB make sure the rewrite lands mid-way (that is
 * checked, not assumed: bytes_read when it was done). */
START_TEST(test_rewrite_keeping_mtime)
{
    tree t;
    make_dir(&t);
    char path[128];
    snprintf(path, sizeof path, "%s/rewritten", t.dir);
    size_t len = 4 * MIB;
    uint8_t *old_data = malloc(len), *new_data = malloc(len), old_md[20], new_md[20];
    tu_rng r;
    tu_rng_seed(&r, 31);
    tu_rng_fill(&r, old_data, len);
    tu_rng_fill(&r, new_data, len);
    tu_sha1(old_data, len, old_md);
    tu_sha1(new_data, len, new_md);
    write_file(path, old_data, len);
    rewriter w = {NULL, path, new_data, len, {0}, 0, 0};
    ck_assert_int_eq(stat(path, &w.before), 0);
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    hb_files_options o;
    hb_files_options_init(&o);
    o.io_threads = 1;
    o.chunk_bytes = 1;
    o.small_max = 4096;
    hb_file_input in = {path, -1};
    hb_file_result res;
    ck_assert_int_eq(hb_submit_files(e, &in, 1, &res, &o, &w.job), HB_OK);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, rewrite_keeping_mtime, &w), 0);
    ck_assert_int_eq(hb_files_job_wait(w.job, -1), HB_OK);
    pthread_join(th, NULL);
    hb_files_job_free(w.job);
    ck_assert_msg(w.err == 0, "rewriting %s: %s", path, strerror(w.err));
    ck_assert_msg(w.read_when_done < len, "the rewrite came after the file was read (%llu bytes)",
                  (unsigned long long)w.read_when_done);
    struct stat after;
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert_msg(after.st_size == w.before.st_size &&
                      after.st_mtim.tv_sec == w.before.st_mtim.tv_sec &&
                      after.st_mtim.tv_nsec == w.before.st_mtim.tv_nsec,
                  "the mtime was not put back: the test proves nothing");
    const char *got = res.status != HB_OK                   ? "no digest"
                      : memcmp(res.digest, old_md, 20) == 0 ? "the old content"
                      : memcmp(res.digest, new_md, 20) == 0 ? "the new content"
                                                            : "a torn read";
    ck_assert_msg(res.status == HB_ERR_FILE_CHANGED,
                  "rewritten mid-read with its mtime put back: got %s (%s)",
                  hb_status_name(res.status), got);
    hb_engine_close(e);
    unlink(path);
    rmdir(t.dir);
    free(old_data);
    free(new_data);
}
END_TEST

#define REWRITE_FILES 32
#define REWRITE_SIZE (200 * KIB)
#define REWRITE_VERSIONS 3
#define REWRITE_ROUNDS 60       /* rounds at least, */
#define REWRITE_CHANGED_MIN 3   /* then more until this many reads saw a rewrite, */
#define REWRITE_ROUNDS_MAX 2000 /* up to this many rounds */

/* Files rewritten in place, each time whole and in one write(), always
 * with one of a few known contents. */
typedef struct {
    char path[REWRITE_FILES][128];
    uint8_t *version[REWRITE_FILES][REWRITE_VERSIONS];
    uint8_t want[REWRITE_FILES][REWRITE_VERSIONS][20];
    atomic_int stop;
    atomic_uint_fast64_t writes;
    int err;
    int64_t gap_ns; /* 0: rewrite at will; else a file's rewrites are at
                       least this far apart (coarse timestamps) */
} rewrite_set;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t ctime_ns(int fd)
{
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* timestamp_tick: 0 when the filesystem under dir gives every change a
 * distinct ctime (Linux 6.13's multigrain timestamps: a change after the
 * ctime was read gets a fine-grained one); else its timestamp tick in ns.
 * The probe: 20 times, two one-byte writes a few microseconds apart, the
 * ctime read after each. Coarse timestamps give both the same ctime unless
 * a tick boundary fell between them (a few us in a tick of 1-10 ms), so
 * one equal pair says coarse; multigrain never gives an equal pair. The
 * tick is then the median step between the distinct ctimes seen while
 * writing for up to 500 ms. */
static int64_t timestamp_tick(const char *dir)
{
    char path[128];
    snprintf(path, sizeof path, "%s/timestamp-probe", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    int equal = 0;
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(pwrite(fd, "a", 1, 0), 1);
        int64_t a = ctime_ns(fd);
        ck_assert_int_eq(pwrite(fd, "b", 1, 0), 1);
        equal += ctime_ns(fd) == a;
    }
    int64_t tick = 0;
    if (equal > 0) {
        int64_t last = ctime_ns(fd), end = mono_ns() + 500000000, step[21];
        int steps = 0;
        while (mono_ns() < end && steps < 21) {
            ck_assert_int_eq(pwrite(fd, "c", 1, 0), 1);
            int64_t now = ctime_ns(fd);
            if (now != last) {
                step[steps++] = now - last; /* the first one may be partial */
                last = now;
            }
        }
        ck_assert_msg(steps >= 6,
                      "coarse timestamps (%d of 20 pairs of writes with one ctime) "
                      "that changed only %d times in 500 ms",
                      equal, steps);
        /* The median step: the ticks jitter, and a preempted writer sees
         * several at once. */
        qsort(step + 1, (size_t)steps - 1, sizeof step[0], cmp_i64);
        tick = step[1 + (steps - 1) / 2];
    }
    close(fd);
    unlink(path);
    return tick;
}

static void *rewrite_loop(void *arg)
{
    rewrite_set *s = arg;
    int fd[REWRITE_FILES];
    tu_rng r;
    tu_rng_seed(&r, 4242);
    for (size_t f = 0; f < REWRITE_FILES; f++)
        if ((fd[f] = open(s->path[f], O_WRONLY)) < 0)
            s->err = errno;
    int64_t last[REWRITE_FILES] = {0};
    size_t next = 0;
    while (s->err == 0 && !atomic_load(&s->stop)) {
        size_t f = tu_rng_below(&r, REWRITE_FILES), v = tu_rng_below(&r, REWRITE_VERSIONS);
        if (s->gap_ns > 0) { /* round robin, each file gap_ns after its last write */
            f = next++ % REWRITE_FILES;
            int64_t wait = last[f] + s->gap_ns - mono_ns();
            if (wait > 0)
                nanosleep(&(struct timespec){wait / 1000000000, wait % 1000000000}, NULL);
            last[f] = mono_ns();
        }
        if (pwrite(fd[f], s->version[f][v], REWRITE_SIZE, 0) != (ssize_t)REWRITE_SIZE)
            s->err = errno ? errno : EIO;
        atomic_fetch_add(&s->writes, 1);
    }
    for (size_t f = 0; f < REWRITE_FILES; f++)
        if (fd[f] >= 0)
            close(fd[f]);
    return NULL;
}

/* version_of: which known content of file f has digest md; -1: none. */
static int version_of(const rewrite_set *s, size_t f, const uint8_t *md)
{
    for (int v = 0; v < REWRITE_VERSIONS; v++)
        if (memcmp(s->want[f][v], md, 20) == 0)
            return v;
    return -1;
}

/* Issue 11, defect 3: files of 200 KiB rewritten in place by another
 * thread while files jobs hash them, round after round. Every digest
 * reported must be that of a content the file really had; a file caught
 * mid-rewrite must be HB_ERR_FILE_CHANGED. What README promises depends on
 * the timestamps (probed at run time, timestamp_tick): with fine-grained
 * ones (Linux 6.13 multigrain) every write between the two snapshots is
 * seen, so the writer rewrites at will; with coarse ones (older kernels,
 * other filesystems) a rewrite within one tick of the previous change is
 * not seen, so each file's rewrites are kept 3 ticks apart (the other
 * files are rewritten meanwhile) and must then all be seen. */
START_TEST(test_rewrite_in_place)
{
    static rewrite_set s;
    memset(&s, 0, sizeof s);
    tree t;
    make_dir(&t);
    tu_rng r;
    tu_rng_seed(&r, 77);
    const char *paths[REWRITE_FILES];
    for (size_t f = 0; f < REWRITE_FILES; f++) {
        snprintf(s.path[f], sizeof s.path[f], "%s/r%02zu", t.dir, f);
        paths[f] = s.path[f];
        for (size_t v = 0; v < REWRITE_VERSIONS; v++) {
            s.version[f][v] = malloc(REWRITE_SIZE);
            tu_rng_fill(&r, s.version[f][v], REWRITE_SIZE);
            tu_sha1(s.version[f][v], REWRITE_SIZE, s.want[f][v]);
        }
        write_file(s.path[f], s.version[f][0], REWRITE_SIZE);
    }
    atomic_init(&s.stop, 0);
    atomic_init(&s.writes, 0);
    int64_t tick = timestamp_tick(t.dir);
    s.gap_ns = 3 * tick;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, rewrite_loop, &s), 0);
    while (atomic_load(&s.writes) == 0 && s.err == 0)
        sched_yield();
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    hb_file_result res[REWRITE_FILES];
    size_t changed = 0, torn = 0, other = 0;
    int rounds = 0;
    for (;
         rounds < REWRITE_ROUNDS || (changed < REWRITE_CHANGED_MIN && rounds < REWRITE_ROUNDS_MAX);
         rounds++) {
        ck_assert_int_eq(hb_hash_files(e, paths, REWRITE_FILES, res, NULL), HB_OK);
        for (size_t f = 0; f < REWRITE_FILES; f++) {
            if (res[f].status == HB_ERR_FILE_CHANGED)
                changed++;
            else if (res[f].status != HB_OK || res[f].size != REWRITE_SIZE)
                other++;
            else if (version_of(&s, f, res[f].digest) < 0)
                torn++;
        }
    }
    atomic_store(&s.stop, 1);
    pthread_join(th, NULL);
    fprintf(stderr,
            "rewrite in place (%s timestamps, tick %.1f ms, a file's rewrites at least %.1f ms "
            "apart): %d results, %zu changed, %zu torn, %llu rewrites\n",
            tick ? "coarse" : "fine-grained", (double)tick / 1e6, (double)s.gap_ns / 1e6,
            rounds * REWRITE_FILES, changed, torn, (unsigned long long)s.writes);
    ck_assert_msg(s.err == 0, "the rewriting thread: %s", strerror(s.err));
    ck_assert_msg(torn == 0, "%zu of %d digests were of no content the file ever had (%s)", torn,
                  rounds * REWRITE_FILES,
                  tick ? "coarse timestamps, rewrites 3 ticks apart" : "fine-grained timestamps");
    ck_assert_msg(changed >= REWRITE_CHANGED_MIN,
                  "only %zu of %d reads overlapped a rewrite, %d needed: no torn digest proves "
                  "nothing",
                  changed, rounds * REWRITE_FILES, REWRITE_CHANGED_MIN);
    ck_assert_msg(other == 0, "%zu results neither OK (200 KiB) nor changed", other);
    hb_engine_close(e);
    for (size_t f = 0; f < REWRITE_FILES; f++) {
        unlink(s.path[f]);
        for (size_t v = 0; v < REWRITE_VERSIONS; v++)
            free(s.version[f][v]);
    }
    rmdir(t.dir);
}
END_TEST

START_TEST(test_cancel)
{
    tree t;
    make_tree(&t, 200, 99);
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    hb_files_options o;
    hb_files_options_init(&o);
    o.io_threads = 1;
    o.chunk_bytes = 64; /* slow enough to be cancelled half-way */
    calls c;
    hb_file_result *res;
    hb_file_input *in;
    hb_files_job *j = submit_tree(e, &t, &o, &c, &res, &in);
    ck_assert_int_eq(hb_files_job_wait(j, 0), HB_ERR_TIMEOUT);
    ck_assert_int_eq(hb_files_job_cancel(j), HB_OK);
    ck_assert_int_eq(hb_files_job_wait(j, -1), HB_ERR_CANCELLED);
    hb_files_job_free(j);
    size_t cancelled = 0;
    for (size_t i = 0; i < t.n; i++) {
        ck_assert_msg(c.calls[i] == 1, "callback for %zu came %u times", i, c.calls[i]);
        if (res[i].status == HB_ERR_CANCELLED)
            cancelled++;
        else
            ck_assert_msg(res[i].status == HB_OK && memcmp(res[i].digest, t.want[i], 20) == 0,
                          "%zu: %s", i, hb_status_name(res[i].status));
    }
    ck_assert_msg(cancelled > 0, "nothing was cancelled");
    hb_engine_close(e);
    free(res);
    free(in);
    free(c.calls);
    free_tree(&t);
}
END_TEST

/* A job streaming a 16 GiB (sparse) file stops between chunks when
 * cancelled or freed: after hb_files_job_cancel returns, the reader reads
 * at most the chunk it is in; freed, the file ends HB_ERR_CANCELLED, not
 * hashed to its end. Loop 0: cancel then wait; loop 1: free at once. */
START_TEST(test_cancel_stream)
{
    tree t;
    make_dir(&t);
    char path[128];
    snprintf(path, sizeof path, "%s/huge", t.dir);
    const uint64_t size = (uint64_t)16 << 30;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
    close(fd);
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    hb_files_options o;
    hb_files_options_init(&o);
    o.io_threads = 1;
    o.chunk_bytes = MIB;
    hb_file_input in = {path, -1};
    hb_file_result res;
    hb_files_job *j = NULL;
    ck_assert_int_eq(hb_submit_files(e, &in, 1, &res, &o, &j), HB_OK);
    hb_files_stats st;
    do {
        sched_yield();
        ck_assert_int_eq(hb_files_job_stats(j, &st), HB_OK);
    } while (st.bytes_read == 0);
    if (_i == 0) {
        ck_assert_int_eq(hb_files_job_cancel(j), HB_OK);
        ck_assert_int_eq(hb_files_job_stats(j, &st), HB_OK);
        uint64_t at_cancel = st.bytes_read;
        ck_assert_int_eq(hb_files_job_wait(j, -1), HB_ERR_CANCELLED);
        ck_assert_int_eq(hb_files_job_stats(j, &st), HB_OK);
        ck_assert_msg(st.bytes_read <= at_cancel + o.chunk_bytes,
                      "%llu bytes read after the cancel (chunks of %zu)",
                      (unsigned long long)(st.bytes_read - at_cancel), o.chunk_bytes);
        ck_assert_uint_lt(st.bytes_read, size);
    }
    hb_files_job_free(j);
    ck_assert_msg(res.status == HB_ERR_CANCELLED, "got %s", hb_status_name(res.status));
    hb_engine_close(e);
    unlink(path);
    rmdir(t.dir);
}
END_TEST

/* The collision pairs as files, also grown by equal suffixes (a small one,
 * batched; one past small_max, streamed): same digest, different bytes.
 * The SHAttered pair is kept as its first 320 bytes, where it already
 * collides; the SHA-mbles pair whole. */
START_TEST(test_collision_files)
{
    static const char *rel[4] = {"collisions/shattered-1.prefix.bin",
                                 "collisions/shattered-2.prefix.bin", "collisions/sha-mbles-1.bin",
                                 "collisions/sha-mbles-2.bin"};
    static const size_t suffix_len[] = {0, 1007, 2 * MIB + 3};
    enum { NSUFFIX = sizeof suffix_len / sizeof suffix_len[0], NCOLL = 4 * NSUFFIX };
    uint8_t *orig[4];
    size_t orig_len[4];
    for (int i = 0; i < 4; i++) {
        const char *p = tu_testdata_path(rel[i]);
        if (!tu_file_exists(p))
            ck_abort_msg("test data missing: %s (tests/vectors/ of the repository, or "
                         "HASHBATCH_TESTDATA=DIR)",
                         p);
        orig[i] = tu_read_file(p, &orig_len[i]);
        ck_assert_msg(orig[i] != NULL, "%s: %s", p, strerror(errno));
    }
    uint8_t prefix_md[20], published[20];
    ck_assert_int_eq(tu_unhex("f92d74e3874587aaf443d1db961d4e26dde13e9c", published, 20), 20);
    tu_sha1(orig[0], orig_len[0], prefix_md);
    ck_assert_msg(orig_len[0] == 320 && memcmp(prefix_md, published, 20) == 0,
                  "%s is not the 320-byte SHAttered prefix", rel[0]);
    tree t;
    make_dir(&t);
    uint8_t *suffix = malloc(2 * MIB + 3), *buf = malloc(2 * MIB + 3 + 640);
    tu_rng r;
    tu_rng_seed(&r, 320);
    tu_rng_fill(&r, suffix, 2 * MIB + 3);
    char store[NCOLL][128];
    const char *paths[NCOLL];
    uint8_t want[NCOLL][20];
    for (int k = 0; k < NCOLL; k++) {
        int i = k % 4;
        size_t sl = suffix_len[k / 4];
        memcpy(buf, orig[i], orig_len[i]);
        memcpy(buf + orig_len[i], suffix, sl);
        snprintf(store[k], sizeof store[k], "%s/c%02d", t.dir, k);
        write_file(store[k], buf, orig_len[i] + sl);
        tu_sha1(buf, orig_len[i] + sl, want[k]);
        paths[k] = store[k];
    }
    hb_file_result res[NCOLL];
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    ck_assert_int_eq(hb_hash_files(e, paths, NCOLL, res, NULL), HB_OK);
    for (int k = 0; k < NCOLL; k++) {
        ck_assert_msg(res[k].status == HB_OK, "%s: %s", paths[k], hb_status_name(res[k].status));
        ck_assert_msg(memcmp(res[k].digest, want[k], 20) == 0, "%s: digest", paths[k]);
        ck_assert_uint_eq(res[k].size, orig_len[k % 4] + suffix_len[k / 4]);
    }
    for (int k = 0; k < NCOLL; k += 2) {
        ck_assert_msg(memcmp(res[k].digest, res[k + 1].digest, 20) == 0,
                      "%s and %s: the pair no longer collides", paths[k], paths[k + 1]);
        ck_assert_msg(memcmp(orig[k % 4], orig[k % 4 + 1], orig_len[k % 4]) != 0,
                      "%s and %s: the same bytes", rel[k % 4], rel[k % 4 + 1]);
    }
    hb_engine_close(e);
    for (int k = 0; k < NCOLL; k++)
        unlink(store[k]);
    rmdir(t.dir);
    for (int i = 0; i < 4; i++)
        free(orig[i]);
    free(suffix);
    free(buf);
}
END_TEST

START_TEST(test_arguments)
{
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    hb_file_input in = {NULL, -1};
    hb_file_result r;
    hb_files_job *j = NULL;
    ck_assert_int_eq(hb_submit_files(NULL, &in, 1, &r, NULL, &j), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_submit_files(e, NULL, 1, &r, NULL, &j), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_submit_files(e, &in, 1, NULL, NULL, &j), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_submit_files(e, &in, 1, &r, NULL, NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_submit_files(e, &in, 1, &r, NULL, &j), HB_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(hb_engine_last_error(NULL), "input 0") != NULL, "%s",
                  hb_engine_last_error(NULL));
    ck_assert_int_eq(hb_submit_files(e, NULL, 0, NULL, NULL, &j), HB_OK);
    ck_assert_int_eq(hb_files_job_wait(j, 0), HB_OK);
    hb_files_job_free(j);
    ck_assert_int_eq(hb_files_job_wait(NULL, 0), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_files_job_cancel(NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_files_job_stats(NULL, NULL), HB_ERR_NULL_ARGUMENT);
    hb_files_job_free(NULL);
    hb_files_options_init(NULL);
    const char *none[] = {NULL};
    ck_assert_int_eq(hb_hash_files(e, none, 1, &r, NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_str_eq(hb_status_name(HB_ERR_FILE_CHANGED), "HB_ERR_FILE_CHANGED");
    ck_assert_int_eq(HB_ERR_FILE_CHANGED, 15);
    ck_assert_int_eq(HB_ERR_NOT_REGULAR, 16);
    hb_engine_close(e);
}
END_TEST

/* Big files only (64 KiB to 3 MiB), of mixed lengths, so sets of them
 * stream through lanes side by side and end at different rounds. */
static size_t pick_big_size(tu_rng *r, size_t i)
{
    (void)i;
    return 64 * KIB + 1 + tu_rng_below(r, 3 * MIB - 64 * KIB - 1);
}

static const char *const stream_impls[] = {"avx512", "avx2", "portable", "sha-ni"};

/* Streams t with impl's lanes (small_max 64 KiB: every file streams) under
 * verify mode, the lanes corrupted when `corrupt`; res gets the results. */
static hb_stats stream_tree(const tree *t, const char *impl, hb_verify_mode verify, int corrupt,
                            hb_file_result **res)
{
    hb_engine *e = tu_open_cpu_lanes(impl, verify, corrupt);
    hb_files_options o;
    hb_files_options_init(&o);
    o.small_max = 64 * KIB;
    o.chunk_bytes = 256 * KIB; /* 16 KiB per lane and round with 16 lanes */
    calls c;
    hb_files_stats fst;
    hash_tree(e, t, &o, &c, res, &fst);
    ck_assert_uint_eq(fst.streamed_files, t->n);
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    hb_engine_close(e);
    free(c.calls);
    return st;
}

/* loop index: the implementation */
START_TEST(test_streams_in_lanes)
{
    const char *impl = stream_impls[_i];
    if (!hb_cpu_impl_runs(impl)) {
        fprintf(stderr, "streams in lanes: %s does not run on this CPU, not tested\n", impl);
        ck_assert_str_ne(impl, "portable"); /* always built, always runs */
        return;
    }
    int lanes = strcmp(impl, "sha-ni") != 0;
    tree t;
    make_tree_of(&t, 40, 0x57e4 + (uint64_t)_i, "b", pick_big_size);
    char what[96];
    static const hb_verify_mode modes[] = {HB_VERIFY_OFF, HB_VERIFY_SAMPLE, HB_VERIFY_FULL};
    for (size_t m = 0; m < 3; m++) {
        hb_file_result *res;
        hb_stats st = stream_tree(&t, impl, modes[m], 0, &res);
        snprintf(what, sizeof what, "%s, verify %s", impl, hb_verify_name(modes[m]));
        expect_all_ok(&t, res, what);
        if (lanes && modes[m] == HB_VERIFY_FULL)
            ck_assert_uint_ge(st.verified, t.n);
        ck_assert_uint_eq(st.verify_mismatches, 0);
        free(res);
    }
    /* Corrupted lanes: visible with verification off... */
    hb_file_result *res;
    stream_tree(&t, impl, HB_VERIFY_OFF, 1, &res);
    size_t wrong = 0;
    for (size_t i = 0; i < t.n; i++)
        wrong += res[i].status == HB_OK && memcmp(res[i].digest, t.want[i], 20) != 0;
    fprintf(stderr, "%s, lanes corrupted, verify off: %zu of %zu digests wrong\n", impl, wrong,
            t.n);
    if (lanes)
        ck_assert_msg(wrong >= 1, "%s: lane fault injection had no visible effect", impl);
    else
        ck_assert_uint_eq(wrong, 0); /* OpenSSL alone: nothing to corrupt */
    free(res);
    /* ... caught and corrected with full and sampled verification. */
    for (size_t m = 1; m < 3; m++) {
        hb_stats st = stream_tree(&t, impl, modes[m], 1, &res);
        snprintf(what, sizeof what, "%s, lanes corrupted, verify %s", impl,
                 hb_verify_name(modes[m]));
        expect_all_ok(&t, res, what);
        if (lanes)
            ck_assert_uint_gt(st.verify_mismatches, 0);
        free(res);
    }
    free_tree(&t);
}
END_TEST

/* Big files of 256 KiB to 1 MiB, of odd lengths. */
static size_t pick_shared_size(tu_rng *r, size_t i)
{
    (void)i;
    return 256 * KIB + 1 + tu_rng_below(r, 768 * KIB);
}

/* Fewer big files than two threads' lanes: once the inputs are all taken,
 * sets merge and idle readers take files in turn by SHA-NI
 * (files_share.c, issue 31). Counts of 1, 2, 15, 16, 17, 31 and 33 files
 * on 2, 3 and 4 readers, every verify mode in turn: every digest right,
 * each file streamed once, the moved bytes within the job's; with lanes,
 * some run moved a file (SHA-NI alone: never). Loop index: the
 * implementation. */
START_TEST(test_few_big_files_shared)
{
    static const size_t counts[] = {1, 2, 15, 16, 17, 31, 33};
    static const unsigned readers[] = {2, 3, 4};
    static const hb_verify_mode modes[] = {HB_VERIFY_SAMPLE, HB_VERIFY_OFF, HB_VERIFY_FULL};
    const char *impl = stream_impls[_i];
    if (!hb_cpu_impl_runs(impl)) {
        fprintf(stderr, "few big files: %s does not run on this CPU, not tested\n", impl);
        ck_assert_str_ne(impl, "portable");
        return;
    }
    tree all;
    make_tree_of(&all, 33, 0x5aa5 + (uint64_t)_i, "s", pick_shared_size);
    uint64_t moved = 0;
    unsigned run = 0;
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        for (size_t r = 0; r < sizeof readers / sizeof readers[0]; r++, run++) {
            tree t = all;
            t.n = counts[c];
            uint64_t bytes = 0;
            for (size_t i = 0; i < t.n; i++)
                bytes += t.sizes[i];
            hb_engine *e = tu_open_cpu_lanes(impl, modes[run % 3], 0);
            hb_files_options o;
            hb_files_options_init(&o);
            o.small_max = 64 * KIB;
            o.chunk_bytes = 256 * KIB;
            o.io_threads = readers[r];
            calls cl;
            hb_file_result *res;
            hb_files_stats fst;
            hash_tree(e, &t, &o, &cl, &res, &fst);
            char what[96];
            snprintf(what, sizeof what, "%s, %zu files, %u readers, verify %s", impl, t.n,
                     readers[r], hb_verify_name(modes[run % 3]));
            expect_all_ok(&t, res, what);
            ck_assert_uint_eq(fst.streamed_files, t.n);
            for (size_t i = 0; i < t.n; i++)
                ck_assert_msg(cl.calls[i] == 1, "%s: file %zu reported %u times", what, i,
                              cl.calls[i]);
            hb_stats st;
            ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
            ck_assert_uint_eq(st.verify_mismatches, 0);
            ck_assert_msg(st.cpu_moved_bytes <= bytes, "%s: %" PRIu64 " bytes moved of %" PRIu64,
                          what, st.cpu_moved_bytes, bytes);
            moved += st.cpu_moved_bytes;
            hb_engine_close(e);
            free(res);
            free(cl.calls);
        }
    }
    fprintf(stderr, "few big files, %s: %" PRIu64 " bytes hashed by helpers in %u runs\n", impl,
            moved, run);
    if (strcmp(impl, "sha-ni") == 0)
        ck_assert_uint_eq(moved, 0); /* no lanes, no sets: each file alone */
    else
        ck_assert_msg(moved > 0, "%s: no file moved to a helping reader in %u runs", impl, run);
    free_tree(&all);
}
END_TEST

/* Shared sets with chunks smaller than a block (chunk_bytes 1 and 32):
 * a helper still reads whole blocks, so every file ends (a review found
 * a helper spinning on empty pieces forever). */
START_TEST(test_shared_tiny_chunks)
{
    static const size_t chunks[] = {1, 32};
    tree all;
    make_tree_of(&all, 5, 0x7c1e, "t", pick_shared_size);
    for (size_t c = 0; c < 2; c++) {
        for (unsigned readers = 2; readers <= 3; readers++) {
            for (size_t n = 3; n <= 5; n += 2) {
                tree t = all;
                t.n = n;
                hb_engine *e = tu_open(HB_BACKEND_CPU);
                hb_files_options o;
                hb_files_options_init(&o);
                o.small_max = 64 * KIB;
                o.chunk_bytes = chunks[c];
                o.io_threads = readers;
                calls cl;
                hb_file_result *res;
                hb_files_stats fst;
                hash_tree(e, &t, &o, &cl, &res, &fst);
                char what[80];
                snprintf(what, sizeof what, "%zu files, chunks of %zu, %u readers", n, chunks[c],
                         readers);
                expect_all_ok(&t, res, what);
                hb_engine_close(e);
                free(res);
                free(cl.calls);
            }
        }
    }
    free_tree(&all);
}
END_TEST

/* A job of 16 big (sparse) files on two readers, cancelled while the sets
 * are shared: it ends, every file HB_ERR_CANCELLED (none is near its end),
 * and little is read after the cancel (less than a chunk per reader). */
START_TEST(test_cancel_shared)
{
    tree t;
    make_dir(&t);
    enum { NBIG = 16 };
    char *paths[NBIG];
    hb_file_input in[NBIG];
    for (int i = 0; i < NBIG; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/big%02d", t.dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(ftruncate(fd, (off_t)1 << 30), 0);
        close(fd);
        paths[i] = strdup(path);
        in[i] = (hb_file_input){paths[i], -1};
    }
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    hb_files_options o;
    hb_files_options_init(&o);
    o.io_threads = 2;
    o.small_max = 64 * KIB;
    o.chunk_bytes = MIB;
    hb_file_result res[NBIG];
    hb_files_job *j = NULL;
    ck_assert_int_eq(hb_submit_files(e, in, NBIG, res, &o, &j), HB_OK);
    hb_files_stats st;
    do {
        sched_yield();
        ck_assert_int_eq(hb_files_job_stats(j, &st), HB_OK);
    } while (st.bytes_read < 64 * MIB);
    ck_assert_int_eq(hb_files_job_cancel(j), HB_OK);
    ck_assert_int_eq(hb_files_job_stats(j, &st), HB_OK);
    uint64_t at_cancel = st.bytes_read;
    ck_assert_int_eq(hb_files_job_wait(j, -1), HB_ERR_CANCELLED);
    ck_assert_int_eq(hb_files_job_stats(j, &st), HB_OK);
    ck_assert_msg(st.bytes_read <= at_cancel + o.io_threads * o.chunk_bytes,
                  "%llu bytes read after the cancel",
                  (unsigned long long)(st.bytes_read - at_cancel));
    hb_files_job_free(j);
    for (int i = 0; i < NBIG; i++) {
        ck_assert_msg(res[i].status == HB_ERR_CANCELLED, "file %d: %s", i,
                      hb_status_name(res[i].status));
        unlink(paths[i]);
        free(paths[i]);
    }
    hb_engine_close(e);
    rmdir(t.dir);
}
END_TEST

static Suite *files_suite(void)
{
    Suite *s = suite_create("files");
    TCase *tc = tcase_create("files");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_tree_digests, 0, (int)(NBACKENDS * NREADER_CFGS));
    tcase_add_test(tc, test_hash_files_sync);
    tcase_add_loop_test(tc, test_per_file_errors, 0, (int)NBACKENDS);
    tcase_add_test(tc, test_proc_files);
    tcase_add_test(tc, test_proc_pagemap);
    tcase_add_test(tc, test_descriptors);
    tcase_add_loop_test(tc, test_changed_while_read, 0, 2);
    tcase_add_test(tc, test_snapshot_fields);
    tcase_add_test(tc, test_ctime_only_change);
    tcase_add_test(tc, test_rewrite_keeping_mtime);
    tcase_add_test(tc, test_rewrite_in_place);
    tcase_add_test(tc, test_cancel);
    tcase_add_loop_test(tc, test_cancel_stream, 0, 2);
    tcase_add_test(tc, test_collision_files);
    tcase_add_test(tc, test_arguments);
    tcase_add_loop_test(tc, test_streams_in_lanes, 0, 4);
    tcase_add_loop_test(tc, test_few_big_files_shared, 0, 4);
    tcase_add_test(tc, test_cancel_shared);
    tcase_add_test(tc, test_shared_tiny_chunks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(files_suite());
}
