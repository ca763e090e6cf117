/*
 * test_util.c - helpers shared by the Check suites (see test_util.h).
 *
 * Owns: engine opening for tests (and the check that a cpu_impl rerun's
 * engines hash with the implementation it forces), the OpenSSL oracle,
 * hex, the CAVP .rsp parser, the PRNG and message sets. Must not: depend on anything the
 * library computes when building an expectation.
 */
#include "test_util.h"

#include "hb_testing.h"

#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HB_TESTDATA_DIR
#error "HB_TESTDATA_DIR (the test vectors folder) must be defined by the build"
#endif

const hb_backend_kind tu_backends[] = {HB_BACKEND_CPU, HB_BACKEND_OPENCL};
const size_t tu_backend_count = sizeof tu_backends / sizeof tu_backends[0];

/* ---- engines -------------------------------------------------------- */

const char *tu_forced_cpu_impl(void)
{
    const char *impl = getenv("HB_TEST_CPU_IMPL");
    return impl && *impl ? impl : NULL;
}

void tu_config(hb_config *cfg, hb_backend_kind kind)
{
    hb_config_init(cfg);
    cfg->backend = kind;
    cfg->use_environment = 0;
    cfg->verify = HB_VERIFY_OFF;
    cfg->cpu_fallback = 0;
    cfg->seed = 0x5eed5eedu;
    cfg->cpu_impl = tu_forced_cpu_impl(); /* NULL (the default) but in a rerun */
}

/* expected_cpu_impl: the implementation an engine opened from cfg must
 * hash with, by config.c's precedence: HASHBATCH_CPU_IMPL when cfg lets
 * the environment in, else cfg's own choice, else the one a cpu_impl
 * rerun forces (a config not made by tu_config); NULL: none asked for. */
static const char *expected_cpu_impl(const hb_config *cfg)
{
    const char *env = cfg->use_environment ? getenv("HASHBATCH_CPU_IMPL") : NULL;
    if (env && *env)
        return env;
    if (cfg->cpu_impl && *cfg->cpu_impl)
        return cfg->cpu_impl;
    return tu_forced_cpu_impl();
}

int tu_describes_cpu_impl(const char *description, const char *impl)
{
    /* engine.c's wording: "cpu: NAME multi-buffer (N lanes) and OpenSSL"
     * for the lanes, "cpu: OpenSSL, ..." for sha-ni. */
    char needle[64];
    if (strcmp(impl, "sha-ni") == 0)
        snprintf(needle, sizeof needle, "cpu: OpenSSL, ");
    else
        snprintf(needle, sizeof needle, "cpu: %s multi-buffer ", impl);
    return strstr(description, needle) != NULL;
}

hb_engine *tu_open_cfg(const hb_config *cfg)
{
    hb_engine *e = NULL;
    hb_status st = hb_engine_open(&e, cfg);
    ck_assert_msg(st == HB_OK, "hb_engine_open(backend %s) = %s (%s): %s",
                  hb_backend_name(cfg->backend), hb_status_name(st), hb_status_str(st),
                  hb_engine_last_error(NULL));
    ck_assert_ptr_nonnull(e);
    const char *impl = expected_cpu_impl(cfg);
    ck_assert_msg(!impl || tu_describes_cpu_impl(hb_engine_describe(e), impl),
                  "engine hashes without the CPU implementation %s%s: %s", impl ? impl : "",
                  tu_forced_cpu_impl() ? " (this cpu_impl rerun forces HB_TEST_CPU_IMPL)" : "",
                  hb_engine_describe(e));
    return e;
}

hb_engine *tu_open(hb_backend_kind kind)
{
    hb_config cfg;
    tu_config(&cfg, kind);
    return tu_open_cfg(&cfg);
}

void tu_batch(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out)
{
    hb_status st = hb_sha1_batch(e, m, n, out);
    ck_assert_msg(st == HB_OK, "hb_sha1_batch(n=%zu) on %s = %s: %s", n, hb_engine_describe(e),
                  hb_status_name(st), hb_engine_last_error(e));
}

void tu_assert_corruption_caught(hb_engine *e, size_t n, size_t maxlen, uint64_t seed,
                                 const char *what)
{
    hb_fault_plan plan = {HB_FAULT_CORRUPT_ALL, 1, 0, 0, 0, 0}; /* every launch's states */
    ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
    tu_msgset s;
    tu_msgset_random(&s, n, maxlen, seed);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, what);
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    printf("%s: %llu mismatches, %llu fallbacks\n", what, (unsigned long long)st.verify_mismatches,
           (unsigned long long)st.fallbacks);
    ck_assert_uint_gt(st.verify_mismatches, 0);
    ck_assert_uint_gt(st.fallbacks, 0);
    free(got);
    tu_msgset_free(&s);
}

void tu_assert_clean(const hb_engine *e)
{
    hb_stats s;
    ck_assert_int_eq(hb_engine_stats(e, &s), HB_OK);
    ck_assert_msg(
        s.verify_mismatches == 0 && s.fallbacks == 0 && s.device_errors == 0 && s.quarantined == 0,
        "engine %s not clean: mismatches %llu, fallbacks %llu, "
        "device errors %llu, quarantined %d",
        hb_engine_describe(e), (unsigned long long)s.verify_mismatches,
        (unsigned long long)s.fallbacks, (unsigned long long)s.device_errors, s.quarantined);
    if (hb_engine_backend(e) == HB_BACKEND_OPENCL) {
        ck_assert_msg(s.device_bytes == s.bytes,
                      "opencl engine hashed %llu of %llu bytes on the device",
                      (unsigned long long)s.device_bytes, (unsigned long long)s.bytes);
        ck_assert_msg(s.messages == 0 || s.device_launches > 0,
                      "opencl engine completed %llu messages with no launch",
                      (unsigned long long)s.messages);
    }
}

/* ---- oracle --------------------------------------------------------- */

void tu_sha1(const void *data, size_t len, uint8_t out[20])
{
    unsigned int outlen = 0;
    static const uint8_t empty[1] = {0};
    int ok = EVP_Digest(len ? data : empty, len, out, &outlen, EVP_sha1(), NULL);
    /* No ck_assert here: the oracle also runs outside test cases (in
     * main, before forking), where Check cannot report. */
    if (ok != 1 || outlen != 20) {
        fprintf(stderr, "EVP_Digest failed\n");
        abort();
    }
}

hb_digest *tu_oracle(const hb_msg *m, size_t n)
{
    hb_digest *want = tu_digests(n);
    for (size_t i = 0; i < n; i++)
        tu_sha1(m[i].data, m[i].len, want[i]);
    return want;
}

size_t tu_count_mismatches(const hb_msg *m, size_t n, hb_digest *want, hb_digest *got,
                           const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(want[i], got[i], 20) == 0)
            continue;
        if (bad < 5) {
            char w[41], g[41];
            tu_hex(want[i], 20, w);
            tu_hex(got[i], 20, g);
            fprintf(stderr, "%s: message %zu (len %zu): want %s got %s\n", what, i,
                    m ? m[i].len : (size_t)0, w, g);
        }
        bad++;
    }
    return bad;
}

void tu_assert_digests(const hb_msg *m, size_t n, hb_digest *want, hb_digest *got, const char *what)
{
    size_t bad = tu_count_mismatches(m, n, want, got, what);
    ck_assert_msg(bad == 0,
                  "%s: %zu of %zu digests wrong (first ones on "
                  "stderr)",
                  what, bad, n);
}

/* ---- hex ------------------------------------------------------------ */

void tu_hex(const uint8_t *bytes, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * len] = '\0';
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long tu_unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex);
    if (n % 2 != 0 || n / 2 > cap)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

/* ---- CAVP ----------------------------------------------------------- */

/* trim: strips leading/trailing whitespace (CR included) in place. */
static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* split_kv: "Key = Value" into key and value; 0 if the line is not one. */
static int split_kv(char *line, char **key, char **value)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return 0;
    *eq = '\0';
    *key = trim(line);
    *value = trim(eq + 1);
    return 1;
}

static int rsp_fail(FILE *f, const char *path, unsigned lineno, const char *why, tu_rsp *r)
{
    fprintf(stderr, "%s:%u: %s\n", path, lineno, why);
    fclose(f);
    tu_rsp_free(r);
    return -1;
}

static tu_vector *rsp_new_vector(tu_rsp *r)
{
    tu_vector *v = realloc(r->vectors, (r->nvectors + 1) * sizeof *v);
    if (!v)
        return NULL;
    r->vectors = v;
    memset(&v[r->nvectors], 0, sizeof *v);
    return &v[r->nvectors++];
}

static int rsp_add_checkpoint(tu_rsp *r, const char *hex)
{
    uint8_t(*c)[20] = realloc(r->checkpoints, (r->ncheckpoints + 1) * sizeof *c);
    if (!c)
        return -1;
    r->checkpoints = c;
    return tu_unhex(hex, c[r->ncheckpoints++], 20) == 20 ? 0 : -1;
}

/* rsp_set_msg: the Msg line of v, whose len (bytes) is already known. */
static int rsp_set_msg(tu_vector *v, const char *hex)
{
    size_t hexlen = strlen(hex);
    if (v->len == 0)
        return 0; /* "Msg = 00" stands for the empty message */
    if (hexlen != 2 * v->len)
        return -1;
    v->msg = malloc(v->len);
    if (!v->msg)
        return -1;
    return tu_unhex(hex, v->msg, v->len) == (long)v->len ? 0 : -1;
}

int tu_rsp_load(const char *path, tu_rsp *r)
{
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    /* LongMsg lines are long: Msg of up to ~51,000 bits, as hex. */
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return -1;
    }
    tu_vector *cur = NULL;
    int in_monte = 0, rc = 0;
    unsigned lineno = 0;
    while (fgets(buf, (int)cap, f)) {
        lineno++;
        char *line = trim(buf), *key, *value;
        if (*line == '\0' || *line == '#' || *line == '[')
            continue;
        if (!split_kv(line, &key, &value)) {
            rc = -1;
            break;
        }
        if (strcmp(key, "Len") == 0) {
            char *end;
            unsigned long bits = strtoul(value, &end, 10);
            if (*end != '\0' || bits % 8 != 0 || !(cur = rsp_new_vector(r))) {
                rc = -1;
                break;
            }
            cur->len = bits / 8;
        } else if (strcmp(key, "Msg") == 0) {
            if (!cur || rsp_set_msg(cur, value) != 0) {
                rc = -1;
                break;
            }
        } else if (strcmp(key, "MD") == 0) {
            if (in_monte) {
                if (rsp_add_checkpoint(r, value) != 0) {
                    rc = -1;
                    break;
                }
            } else if (!cur || tu_unhex(value, cur->md, 20) != 20) {
                rc = -1;
                break;
            } else {
                cur = NULL; /* one MD per vector */
            }
        } else if (strcmp(key, "Seed") == 0) {
            if (tu_unhex(value, r->seed, 20) != 20) {
                rc = -1;
                break;
            }
            r->has_seed = 1;
        } else if (strcmp(key, "COUNT") == 0) {
            char *end;
            unsigned long count = strtoul(value, &end, 10);
            if (*end != '\0' || count != r->ncheckpoints) {
                rc = -1;
                break;
            }
            in_monte = 1;
        }
        /* other keys (L) carry nothing we need */
    }
    free(buf);
    if (rc != 0)
        return rsp_fail(f, path, lineno, "malformed line", r);
    fclose(f);
    return 0;
}

void tu_rsp_free(tu_rsp *r)
{
    for (size_t i = 0; i < r->nvectors; i++)
        free(r->vectors[i].msg);
    free(r->vectors);
    free(r->checkpoints);
    memset(r, 0, sizeof *r);
}

/* ---- test data ------------------------------------------------------ */

const char *tu_testdata_dir(void)
{
    const char *env = getenv("HASHBATCH_TESTDATA");
    return env && *env ? env : HB_TESTDATA_DIR;
}

const char *tu_testdata_path(const char *rel)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tu_testdata_dir(), rel);
    return path;
}

int tu_require_testdata(const char *const *rel, size_t n)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        const char *path = tu_testdata_path(rel[i]);
        if (tu_file_exists(path))
            continue;
        fprintf(stderr,
                "FAIL: test data missing: %s (the vectors are in tests/vectors/ of the "
                "repository; HASHBATCH_TESTDATA=DIR reads them from DIR)\n",
                path);
        ok = 0;
    }
    return ok;
}

int tu_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void tu_temp_dir(char *dir, size_t size, const char *prefix)
{
    int n = snprintf(dir, size, "/tmp/%s-XXXXXX", prefix);
    ck_assert(n > 0 && (size_t)n < size);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

void tu_fresh_subdir(char *dir, const char *root)
{
    int n = snprintf(dir, PATH_MAX, "%s/t-XXXXXX", root);
    ck_assert(n > 0 && n < PATH_MAX);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static int unlock_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
    (void)st;
    (void)f;
    if (type == FTW_D || type == FTW_DNR)
        chmod(p, 0700);
    return 0;
}

static int remove_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
    (void)st;
    (void)type;
    (void)f;
    remove(p);
    return 0;
}

void tu_remove_tree(const char *dir)
{
    nftw(dir, unlock_one, 16, FTW_PHYS);
    nftw(dir, remove_one, 16, FTW_PHYS | FTW_DEPTH);
}

uint8_t *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *data = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *p = realloc(data, cap);
            if (!p) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = p;
        }
        size_t got = fread(data + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(data);
        return NULL;
    }
    *len = n;
    return data;
}

/* ---- randomness ----------------------------------------------------- */

void tu_rng_seed(tu_rng *r, uint64_t seed)
{
    r->s = seed;
}

uint64_t tu_rng_next(tu_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

size_t tu_rng_below(tu_rng *r, size_t n)
{
    return (size_t)(tu_rng_next(r) % n);
}

void tu_rng_fill(tu_rng *r, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len >= 8) {
        uint64_t v = tu_rng_next(r);
        memcpy(p, &v, 8);
        p += 8;
        len -= 8;
    }
    if (len) {
        uint64_t v = tu_rng_next(r);
        memcpy(p, &v, len);
    }
}

void tu_shuffle_sizes(tu_rng *r, size_t *a, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = tu_rng_below(r, i);
        size_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

void tu_msgset_from_lengths(tu_msgset *s, const size_t *lens, size_t n, uint64_t seed)
{
    tu_rng r;
    tu_rng_seed(&r, seed);
    size_t maxlen = 0;
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < n; i++)
        maxlen = lens[i] > maxlen ? lens[i] : maxlen;
    /* A pool a few MiB past the longest message: offsets vary widely. */
    s->pool_len = maxlen + (4u << 20);
    s->pool = malloc(s->pool_len);
    s->m = calloc(n ? n : 1, sizeof *s->m);
    ck_assert_ptr_nonnull(s->pool);
    ck_assert_ptr_nonnull(s->m);
    tu_rng_fill(&r, s->pool, s->pool_len);
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        size_t off = tu_rng_below(&r, s->pool_len - lens[i] + 1);
        s->m[i].data = s->pool + off;
        s->m[i].len = lens[i];
        s->total_bytes += lens[i];
    }
    s->want = tu_oracle(s->m, n);
}

void tu_msgset_random(tu_msgset *s, size_t n, size_t maxlen, uint64_t seed)
{
    tu_rng r;
    tu_rng_seed(&r, seed ^ 0xa5a5a5a5u);
    size_t *lens = malloc((n ? n : 1) * sizeof *lens);
    ck_assert_ptr_nonnull(lens);
    for (size_t i = 0; i < n; i++)
        lens[i] = tu_rng_below(&r, maxlen + 1);
    tu_msgset_from_lengths(s, lens, n, seed);
    free(lens);
}

void tu_msgset_same_length(tu_msgset *s, size_t n, size_t len, uint64_t seed)
{
    size_t *lens = malloc((n ? n : 1) * sizeof *lens);
    ck_assert_ptr_nonnull(lens);
    for (size_t i = 0; i < n; i++)
        lens[i] = len;
    tu_msgset_from_lengths(s, lens, n, seed);
    free(lens);
}

void tu_msgset_free(tu_msgset *s)
{
    free(s->pool);
    free(s->m);
    free(s->want);
    memset(s, 0, sizeof *s);
}

hb_digest *tu_digests(size_t n)
{
    hb_digest *d = calloc(n ? n : 1, sizeof *d);
    ck_assert_ptr_nonnull(d);
    return d;
}

double tu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* forced_impl_reached: in a cpu_impl rerun, 1 if a cpu engine opened
 * from tu_config hashes with the forced implementation (said on stderr
 * either way); 1 outside a rerun. Opens in a child process, so the
 * suite's process starts as it would without the check. */
static int forced_impl_reached(void)
{
    const char *impl = tu_forced_cpu_impl();
    if (!impl)
        return 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("cpu_impl rerun: fork");
        return 0;
    }
    if (pid == 0) {
        hb_config cfg;
        hb_engine *e = NULL;
        tu_config(&cfg, HB_BACKEND_CPU);
        hb_status st = hb_engine_open(&e, &cfg);
        if (st != HB_OK) {
            fprintf(stderr, "FAIL: cpu_impl rerun forcing %s: hb_engine_open = %s: %s\n", impl,
                    hb_status_name(st), hb_engine_last_error(NULL));
            _exit(1);
        }
        int ok = tu_describes_cpu_impl(hb_engine_describe(e), impl);
        fprintf(stderr, "%s: cpu_impl rerun forcing %s; engine: %s\n", ok ? "ok" : "FAIL", impl,
                hb_engine_describe(e));
        hb_engine_close(e);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Check's own per-case timeout (4 s unless CK_DEFAULT_TIMEOUT says) is a
 * wall-clock assertion: a case that needs 5 s on a loaded machine (CI runs
 * at load 4 on 2 cores, sanitizers make it 2-10x slower) fails though
 * nothing is wrong. Every suite runs under ctest's TIMEOUT, which catches
 * a hang, so the test cases that set no timeout of their own get one
 * longer than any suite's. Set before main, since check reads it when a
 * test case is created; a CK_DEFAULT_TIMEOUT given by the caller wins. */
__attribute__((constructor)) static void no_load_dependent_timeout(void)
{
    setenv("CK_DEFAULT_TIMEOUT", "1800", 0);
}

int tu_run_suite(Suite *s)
{
    if (!forced_impl_reached())
        return 1;
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

void tu_print_stats(const char *what, const hb_stats *st)
{
    fprintf(stderr,
            "%s: %llu msgs, %llu bytes (device %llu, cpu %llu), batches %llu, launches %llu, "
            "jobs %llu/%llu; verified %llu, mismatches %llu, fallbacks %llu, device errors "
            "%llu, quarantined %d\n",
            what, (unsigned long long)st->messages, (unsigned long long)st->bytes,
            (unsigned long long)st->device_bytes, (unsigned long long)st->cpu_bytes,
            (unsigned long long)st->batches, (unsigned long long)st->device_launches,
            (unsigned long long)st->jobs_completed, (unsigned long long)st->jobs_submitted,
            (unsigned long long)st->verified, (unsigned long long)st->verify_mismatches,
            (unsigned long long)st->fallbacks, (unsigned long long)st->device_errors,
            st->quarantined);
    for (unsigned k = 0; k < st->ndevices && k < HB_STATS_MAX_DEVICES; k++)
        fprintf(stderr,
                "  [%u] %-40s cpu %d: %llu msgs, %llu bytes, %llu batches, %llu launches, "
                "busy %.3f s, %llu errors, quarantined %d\n",
                k, st->device[k].name, st->device[k].is_cpu,
                (unsigned long long)st->device[k].messages, (unsigned long long)st->device[k].bytes,
                (unsigned long long)st->device[k].batches,
                (unsigned long long)st->device[k].launches, (double)st->device[k].busy_ns / 1e9,
                (unsigned long long)st->device[k].errors, st->device[k].quarantined);
}

hb_engine *tu_open_cpu_lanes(const char *impl, hb_verify_mode verify, int corrupt_lanes)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.cpu_impl = impl;
    cfg.verify = verify;
    hb_engine *e = tu_open_cfg(&cfg);
    if (corrupt_lanes) {
        hb_fault_plan plan;
        memset(&plan, 0, sizeof plan);
        plan.kind = HB_FAULT_CORRUPT_CPU_LANES;
        ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
    }
    return e;
}

void tu_fill_pattern(uint8_t *p, size_t len)
{
    uint64_t x = 0x0123456789abcdefu;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        memcpy(p + i, &x, 8);
    }
    for (; i < len; i++)
        p[i] = (uint8_t)(i * 131u);
}
