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
 * report size 0; descriptors (a pipe fed by a thread, a file from an
 * offset); a file truncated or grown while it is streamed
 * (HB_ERR_FILE_CHANGED, not SIGBUS); cancel; the SHA-1 collision pairs;
 * argument errors. The oracle is OpenSSL (tu_sha1) on the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* make_tree: n files of random content and sizes, and their digests. */
static void make_tree(tree *t, size_t n, uint64_t seed)
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
        size_t len = pick_size(&r, i);
        char path[128];
        snprintf(path, sizeof path, "%s/f%04zu", t->dir, i);
        tu_rng_fill(&r, buf, len);
        write_file(path, buf, len);
        tu_sha1(buf, len, t->want[i]);
        t->paths[i] = strdup(path);
        t->sizes[i] = len;
    }
    free(buf);
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
    hb_file_input *in;
    hb_files_job *j = submit_tree(e, &t, &o, &c, &res, &in);
    ck_assert_int_eq(hb_files_job_wait(j, -1), HB_OK);
    hb_files_stats st;
    ck_assert_int_eq(hb_files_job_stats(j, &st), HB_OK);
    hb_files_job_free(j);

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
    free(in);
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
    double t0 = tu_now();
    ck_assert_int_eq(hb_hash_files(e, paths, n, res, NULL), HB_OK);
    ck_assert_msg(tu_now() - t0 < 10, "a FIFO with no writer held the job up");
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
    if (data == NULL || stat(path, &st) != 0 || st.st_size != 0 || len == 0) {
        free(data);
        return; /* no such /proc here: nothing to test */
    }
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

/* The collision pairs as files: same digest, different bytes. */
START_TEST(test_collision_files)
{
    const char *rel[] = {"collisions/shattered-1.pdf", "collisions/shattered-2.pdf",
                         "collisions/sha-mbles-1.bin", "collisions/sha-mbles-2.bin"};
    const char *paths[4];
    char store[4][4096];
    for (int i = 0; i < 4; i++) {
        snprintf(store[i], sizeof store[i], "%s", tu_testdata_path(rel[i]));
        if (!tu_file_exists(store[i]))
            return; /* the test data is absent: nothing to compare */
        paths[i] = store[i];
    }
    hb_file_result r[4];
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    ck_assert_int_eq(hb_hash_files(e, paths, 4, r, NULL), HB_OK);
    for (int i = 0; i < 4; i++) {
        size_t len = 0;
        uint8_t *d = tu_read_file(paths[i], &len), want[20];
        tu_sha1(d, len, want);
        ck_assert_int_eq(r[i].status, HB_OK);
        ck_assert(memcmp(r[i].digest, want, 20) == 0);
        free(d);
    }
    ck_assert(memcmp(r[0].digest, r[1].digest, 20) == 0);
    ck_assert(memcmp(r[2].digest, r[3].digest, 20) == 0);
    hb_engine_close(e);
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

static Suite *files_suite(void)
{
    Suite *s = suite_create("files");
    TCase *tc = tcase_create("files");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_tree_digests, 0, (int)(NBACKENDS * NREADER_CFGS));
    tcase_add_test(tc, test_hash_files_sync);
    tcase_add_loop_test(tc, test_per_file_errors, 0, (int)NBACKENDS);
    tcase_add_test(tc, test_proc_files);
    tcase_add_test(tc, test_descriptors);
    tcase_add_loop_test(tc, test_changed_while_read, 0, 2);
    tcase_add_test(tc, test_cancel);
    tcase_add_test(tc, test_collision_files);
    tcase_add_test(tc, test_arguments);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(files_suite());
}
