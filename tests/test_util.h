/*
 * test_util.h - helpers shared by the Check suites.
 *
 * Owns: opening engines with fault-free, environment-proof defaults (and,
 * in a cpu_impl rerun, the implementation it forces, checked); the
 * OpenSSL oracle every suite compares against; hex helpers; the NIST CAVP
 * .rsp parser; a deterministic PRNG and random message sets; the test data
 * location (tests/vectors/ in the repository) and the check that it is
 * there: missing data fails a suite, it never skips it.
 * Must not: know expected digests. Every expectation comes from OpenSSL
 * computed here, from the NIST files, or from the published collision
 * digests written in the suites themselves.
 */
#ifndef HB_TEST_UTIL_H
#define HB_TEST_UTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "hashbatch.h"

/* Exit code ctest reads as "skipped" (SKIP_RETURN_CODE, set only on the
 * suites that may use it): for a resource this machine cannot give (the
 * 4 GiB mapping of test_huge), never for missing test data. */
#define TU_SKIP_CODE 77

/* ---- backends ------------------------------------------------------- */

/* The backends every vector runs through. */
extern const hb_backend_kind tu_backends[];
extern const size_t tu_backend_count;

/* tu_forced_cpu_impl: the CPU implementation a cpu_impl rerun forces
 * (HB_TEST_CPU_IMPL, set only by run_with_cpu_impl.sh), or NULL. */
const char *tu_forced_cpu_impl(void);

/* tu_config: hb_config_init, then backend = kind, environment ignored,
 * verification off and no CPU fallback (so a wrong device digest or a
 * device error reaches the test instead of being silently repaired), a
 * fixed sampling seed, and cpu_impl = tu_forced_cpu_impl() (NULL, the
 * default, outside a cpu_impl rerun). */
void tu_config(hb_config *cfg, hb_backend_kind kind);

/* tu_describes_cpu_impl: 1 if an engine description names the CPU
 * implementation impl ("sha-ni", "portable", "avx2", "avx512"). */
int tu_describes_cpu_impl(const char *description, const char *impl);

/* tu_open_cfg: opens an engine from cfg; fails the test (with the status
 * and the last error) if that does not work, and unless the engine's
 * description names the CPU implementation it must use: HASHBATCH_CPU_IMPL
 * when cfg->use_environment lets it in, else cfg->cpu_impl, else the one
 * the cpu_impl rerun forces (so a config that lost it fails loudly). */
hb_engine *tu_open_cfg(const hb_config *cfg);

/* tu_open_cpu_lanes: an engine of the cpu backend hashing with CPU
 * implementation impl (the environment ignored, so a rerun's
 * HASHBATCH_CPU_IMPL does not change what a test asks for), verify mode
 * verify; with corrupt_lanes, the test fault that corrupts what the
 * multi-buffer lanes compute (HB_FAULT_CORRUPT_CPU_LANES) is on. */
hb_engine *tu_open_cpu_lanes(const char *impl, hb_verify_mode verify, int corrupt_lanes);

/* tu_open: tu_open_cfg(tu_config(kind)). */
hb_engine *tu_open(hb_backend_kind kind);

/* tu_batch: hb_sha1_batch; fails the test unless it returns HB_OK. */
void tu_batch(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out);

/* tu_print_stats: every counter of st, one line, then one line per
 * device, on stderr under the label what (diagnostics for a failing run). */
void tu_print_stats(const char *what, const hb_stats *st);

/* tu_assert_clean: fails the test if e's stats show a verification
 * mismatch, a fallback, a device error or a quarantine; and, for the
 * OpenCL backend, unless every byte was hashed on the device. */
void tu_assert_clean(const hb_engine *e);

/* tu_assert_corruption_caught: with every device launch's read-back
 * corrupted (hb_testing_set_fault), n random messages of up to maxlen
 * bytes (seed) through e, which verifies and falls back, still come out
 * right; its stats count mismatches and fallbacks. what names the case. */
void tu_assert_corruption_caught(hb_engine *e, size_t n, size_t maxlen, uint64_t seed,
                                 const char *what);

/* ---- oracle --------------------------------------------------------- */

/* tu_sha1: SHA-1 of len bytes at data with OpenSSL's EVP interface. */
void tu_sha1(const void *data, size_t len, uint8_t out[20]);

/* tu_oracle: malloc'd array of n OpenSSL digests of m (never NULL). */
hb_digest *tu_oracle(const hb_msg *m, size_t n);

/* tu_count_mismatches: how many got[i] differ from want[i]; prints the
 * first few (index, length, want, got) to stderr under the label what. */
size_t tu_count_mismatches(const hb_msg *m, size_t n, hb_digest *want, hb_digest *got,
                           const char *what);

/* tu_assert_digests: fails the test unless got equals want everywhere. */
void tu_assert_digests(const hb_msg *m, size_t n, hb_digest *want, hb_digest *got,
                       const char *what);

/* ---- hex ------------------------------------------------------------ */

/* tu_hex: len bytes as lowercase hex into out (2 * len + 1 chars). */
void tu_hex(const uint8_t *bytes, size_t len, char *out);

/* tu_unhex: hex text (even length, no separators) into out; returns the
 * byte count, or -1 on a bad digit, odd length or more than cap bytes. */
long tu_unhex(const char *hex, uint8_t *out, size_t cap);

/* ---- NIST CAVP .rsp files ------------------------------------------- */

typedef struct {
    size_t len;   /* bytes (the file's Len is in bits) */
    uint8_t *msg; /* len bytes; NULL when len is 0 */
    uint8_t md[20];
} tu_vector;

typedef struct {
    tu_vector *vectors; /* Len/Msg/MD triples (ShortMsg, LongMsg) */
    size_t nvectors;
    int has_seed; /* Monte Carlo: Seed and the COUNT/MD checkpoints */
    uint8_t seed[20];
    uint8_t (*checkpoints)[20];
    size_t ncheckpoints;
} tu_rsp;

/* tu_rsp_load: parses path into *out. Returns 0, or -1 (message on
 * stderr) when the file cannot be read or is malformed. */
int tu_rsp_load(const char *path, tu_rsp *out);
void tu_rsp_free(tu_rsp *r);

/* ---- test data ------------------------------------------------------ */

/* tu_testdata_dir: $HASHBATCH_TESTDATA, else the HB_TESTDATA_DIR the build
 * compiled in (tests/vectors/ of the source tree). */
const char *tu_testdata_dir(void);

/* tu_testdata_path: tu_testdata_dir()/rel into a static buffer. */
const char *tu_testdata_path(const char *rel);

/* tu_require_testdata: 1 if every rel[0..n) is a regular file under
 * tu_testdata_dir(); else prints a line naming each missing one (and how
 * to point the suites elsewhere) on stderr and returns 0. For main(),
 * before the suite runs: a suite without its data exits 1 (failed). */
int tu_require_testdata(const char *const *rel, size_t n);

/* tu_file_exists: 1 if path names a readable regular file. */
int tu_file_exists(const char *path);

/* tu_read_file: malloc'd contents of path and its size; NULL on error. */
uint8_t *tu_read_file(const char *path, size_t *len);

/* tu_temp_dir: a new folder /tmp/PREFIX-XXXXXX (mkdtemp) into dir (size
 * bytes); fails the test when it cannot be made. */
void tu_temp_dir(char *dir, size_t size, const char *prefix);

/* tu_fresh_subdir: a new empty folder ROOT/t-XXXXXX into dir (PATH_MAX
 * bytes), one per test inside a suite's temporary folder. */
void tu_fresh_subdir(char *dir, const char *root);

/* tu_remove_tree: dir and everything below it removed, folders a test
 * made unreadable or unwritable included; what cannot go stays. */
void tu_remove_tree(const char *dir);

/* ---- deterministic randomness --------------------------------------- */

typedef struct {
    uint64_t s;
} tu_rng;

void tu_rng_seed(tu_rng *r, uint64_t seed);
uint64_t tu_rng_next(tu_rng *r);          /* splitmix64 */
size_t tu_rng_below(tu_rng *r, size_t n); /* uniform in [0, n); n > 0 */
void tu_rng_fill(tu_rng *r, void *buf, size_t len);
void tu_shuffle_sizes(tu_rng *r, size_t *a, size_t n);

/* A message set: n messages whose bytes lie in one random pool (each at a
 * random offset, so contents differ), plus their OpenSSL digests. */
typedef struct {
    uint8_t *pool;
    size_t pool_len;
    hb_msg *m;
    size_t n;
    size_t total_bytes;
    hb_digest *want;
} tu_msgset;

/* tu_msgset_from_lengths: messages of the given lengths (in that order). */
void tu_msgset_from_lengths(tu_msgset *s, const size_t *lens, size_t n, uint64_t seed);

/* tu_msgset_random: n messages of uniform random length in [0, maxlen]. */
void tu_msgset_random(tu_msgset *s, size_t n, size_t maxlen, uint64_t seed);

/* tu_msgset_same_length: n messages of len bytes each (the uniform
 * kernels' and full lane groups' case). */
void tu_msgset_same_length(tu_msgset *s, size_t n, size_t len, uint64_t seed);
void tu_msgset_free(tu_msgset *s);

/* tu_fill_pattern: len cheap pattern bytes that differ from block to
 * block (so a repeated or skipped chunk changes the digest), for giant
 * messages where random bytes would cost too long. */
void tu_fill_pattern(uint8_t *p, size_t len);

/* tu_digests: zeroed malloc'd array of n digests. */
hb_digest *tu_digests(size_t n);

/* tu_now: monotonic seconds. */
double tu_now(void);

/* tu_run_suite: runs s (fork mode unless CK_FORK says otherwise) and
 * returns main's exit code: 0 when everything passed, else 1. In a
 * cpu_impl rerun it first opens a cpu engine from tu_config (in a child
 * process) and fails the suite, before any test, unless that engine
 * hashes with the forced implementation; either way one line on stderr
 * says what the engine was. */
int tu_run_suite(Suite *s);

#endif /* HB_TEST_UTIL_H */
