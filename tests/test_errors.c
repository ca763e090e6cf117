/*
 * test_errors.c - every bad input gets its status, and nothing crashes.
 *
 * Covers: NULL arguments to hb_sha1_batch, hb_engine_open, hb_engine_stats
 * and hb_devices_list; a message with NULL data (the last error names its
 * index); n = 0; device specs that are malformed or match no device,
 * refused with HB_ERR_BAD_DEVICE_SPEC by every backend (cpu too, which
 * accepts and ignores one that matches a device), from the config or
 * HASHBATCH_DEVICE, the last error naming the spec; unknown backend/verify names, in
 * the config, the parsers and the environment (HASHBATCH_BACKEND,
 * HASHBATCH_VERIFY); the status strings and names; and a machine with no
 * OpenCL at all, simulated for real by re-running this binary in a child
 * process with OCL_ICD_VENDORS pointing at an empty directory (so the ICD
 * loader finds no platform): backend opencl fails with HB_ERR_NO_OPENCL,
 * backend auto falls back to the CPU and works, a named device is a bad
 * spec for every backend ("all" excepted), and hb_devices_list reports 0
 * devices with HB_OK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#define CHILD_FLAG "--no-opencl-child"

static hb_engine *const SENTINEL = (hb_engine *)&SENTINEL;

/* open_expect: hb_engine_open(cfg) must return want, leave *out NULL and
 * leave a non-empty hb_engine_last_error(NULL). */
static void open_expect(const hb_config *cfg, hb_status want,
                        const char *what)
{
    hb_engine *e = SENTINEL;
    hb_status st = hb_engine_open(&e, cfg);
    if (st == HB_OK && e != SENTINEL)
        hb_engine_close(e);
    ck_assert_msg(st == want, "%s: hb_engine_open = %s, want %s (%s)", what,
                  hb_status_name(st), hb_status_name(want),
                  hb_engine_last_error(NULL));
    ck_assert_msg(e == NULL, "%s: *out not NULL after a failed open", what);
    const char *err = hb_engine_last_error(NULL);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(err[0] != '\0', "%s: no last error after a failed open",
                  what);
    fprintf(stderr, "%s: %s: %s\n", what, hb_status_name(st), err);
}

/* ---- hb_sha1_batch -------------------------------------------------- */

START_TEST(test_batch_null_engine)
{
    uint8_t byte = 1;
    hb_msg m = {&byte, 1};
    hb_digest out;
    ck_assert_int_eq(hb_sha1_batch(NULL, &m, 1, &out), HB_ERR_NULL_ARGUMENT);
    ck_assert_str_ne(hb_engine_last_error(NULL), "");
}
END_TEST

START_TEST(test_batch_null_arrays)
{
    hb_engine *e = tu_open(tu_backends[_i]);
    uint8_t byte = 1;
    hb_msg m = {&byte, 1};
    hb_digest out;
    ck_assert_int_eq(hb_sha1_batch(e, &m, 1, NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_str_ne(hb_engine_last_error(e), "");
    ck_assert_int_eq(hb_sha1_batch(e, NULL, 1, &out), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_sha1_batch(e, NULL, 5, NULL), HB_ERR_NULL_ARGUMENT);
    /* n = 0: nothing to do, NULL arrays allowed. */
    ck_assert_int_eq(hb_sha1_batch(e, NULL, 0, NULL), HB_OK);
    ck_assert_int_eq(hb_sha1_batch(e, &m, 0, &out), HB_OK);
    /* The engine still works. */
    uint8_t want[20];
    tu_sha1(&byte, 1, want);
    tu_batch(e, &m, 1, &out);
    ck_assert_mem_eq(out, want, 20);
    hb_engine_close(e);
}
END_TEST

START_TEST(test_batch_null_data)
{
    hb_engine *e = tu_open(tu_backends[_i]);
    tu_msgset s;
    tu_msgset_random(&s, 50, 300, 37);
    hb_digest *got = tu_digests(s.n);
    const hb_msg saved = s.m[37];
    s.m[37].data = NULL;
    s.m[37].len = 12;
    ck_assert_int_eq(hb_sha1_batch(e, s.m, s.n, got), HB_ERR_NULL_ARGUMENT);
    const char *err = hb_engine_last_error(e);
    fprintf(stderr, "NULL data at 37: %s\n", err);
    ck_assert_msg(strstr(err, "37") != NULL,
                  "last error does not name index 37: \"%s\"", err);
    /* NULL data with len 0 is allowed: the empty message. */
    s.m[37].len = 0;
    uint8_t empty[20];
    tu_sha1(NULL, 0, empty);
    tu_batch(e, s.m, s.n, got);
    ck_assert_mem_eq(got[37], empty, 20);
    s.m[37] = saved;
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "after a refused batch");
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* ---- hb_engine_open ------------------------------------------------- */

START_TEST(test_open_null_out)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    ck_assert_int_eq(hb_engine_open(NULL, &cfg), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_engine_open(NULL, NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_str_ne(hb_engine_last_error(NULL), "");
}
END_TEST

/* Specs no device answers to, and malformed ones, for every backend. */
static const char *const bad_specs[] = {"no-such-device-xyz", "7:9", "0:99", "99:0",
                                        "garbage", "1:", ":0", "0:0:0", "a:b",
                                        "0:-1", " ", "gpu\n"};
static const hb_backend_kind all_backends[] = {HB_BACKEND_OPENCL, HB_BACKEND_AUTO,
                                               HB_BACKEND_CPU};

/* open_expect_bad_spec: opening with spec (from cfg->device or
 * HASHBATCH_DEVICE) fails with HB_ERR_BAD_DEVICE_SPEC, naming it. */
static void open_expect_bad_spec(hb_backend_kind kind, const char *spec, int from_env)
{
    hb_config cfg;
    char what[128];
    tu_config(&cfg, kind);
    if (from_env) {
        cfg.use_environment = 1;
        setenv("HASHBATCH_DEVICE", spec, 1);
    } else {
        cfg.device = spec;
    }
    snprintf(what, sizeof what, "backend %s, %s \"%s\"", hb_backend_name(kind),
             from_env ? "HASHBATCH_DEVICE" : "device", spec);
    open_expect(&cfg, HB_ERR_BAD_DEVICE_SPEC, what);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "'%s'", spec);
    ck_assert_msg(strstr(hb_engine_last_error(NULL), quoted) != NULL,
                  "%s: the last error does not name the spec: %s", what,
                  hb_engine_last_error(NULL));
    unsetenv("HASHBATCH_DEVICE");
}

START_TEST(test_open_bad_device_spec)
{
    for (size_t b = 0; b < 3; b++)
        for (size_t i = 0; i < sizeof bad_specs / sizeof bad_specs[0]; i++)
            open_expect_bad_spec(all_backends[b], bad_specs[i], 0);
}
END_TEST

/* HASHBATCH_DEVICE=garbage: the same status as in the config. */
START_TEST(test_open_bad_device_env)
{
    for (size_t b = 0; b < 3; b++) {
        open_expect_bad_spec(all_backends[b], "garbage", 1);
        open_expect_bad_spec(all_backends[b], "3:", 1);
    }
}
END_TEST

/* Backend cpu accepts (and ignores) a spec that matches a device. */
START_TEST(test_cpu_accepts_good_spec)
{
    hb_device_info info[8];
    size_t n = 0;
    ck_assert_int_eq(hb_devices_list(info, 8, &n), HB_OK);
    ck_assert_uint_ge(n, 1);
    char pd[32];
    snprintf(pd, sizeof pd, "%u:%u", info[0].platform_index, info[0].device_index);
    const char *specs[] = {"all", pd, hb_device_type_name(info[0].type), info[0].name};
    for (size_t i = 0; i < 4; i++) {
        hb_config cfg;
        tu_config(&cfg, HB_BACKEND_CPU);
        cfg.device = specs[i];
        hb_engine *e = tu_open_cfg(&cfg);
        ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_CPU);
        hb_stats st;
        ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
        ck_assert_uint_eq(st.ndevices, 1); /* the pool only: the spec is ignored */
        tu_msgset s;
        tu_msgset_random(&s, 50, 3000, 5 + i);
        hb_digest *got = tu_digests(s.n);
        tu_batch(e, s.m, s.n, got);
        tu_assert_digests(s.m, s.n, s.want, got, specs[i]);
        free(got);
        tu_msgset_free(&s);
        hb_engine_close(e);
    }
}
END_TEST

START_TEST(test_open_bad_enum_values)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.backend = (hb_backend_kind)42;
    open_expect(&cfg, HB_ERR_INVALID_ARGUMENT, "backend 42");
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.verify = (hb_verify_mode)42;
    open_expect(&cfg, HB_ERR_INVALID_ARGUMENT, "verify 42");
}
END_TEST

START_TEST(test_open_bad_environment)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.use_environment = 1;

    setenv("HASHBATCH_BACKEND", "bogus", 1);
    open_expect(&cfg, HB_ERR_INVALID_ARGUMENT, "HASHBATCH_BACKEND=bogus");
    unsetenv("HASHBATCH_BACKEND");

    setenv("HASHBATCH_VERIFY", "bogus", 1);
    open_expect(&cfg, HB_ERR_INVALID_ARGUMENT, "HASHBATCH_VERIFY=bogus");

    /* use_environment = 0: the environment is not even looked at. */
    setenv("HASHBATCH_BACKEND", "bogus", 1);
    cfg.use_environment = 0;
    hb_engine *e = tu_open_cfg(&cfg);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_CPU);
    hb_engine_close(e);
    unsetenv("HASHBATCH_BACKEND");
    unsetenv("HASHBATCH_VERIFY");
}
END_TEST

/* The environment overrides the config when use_environment is 1. */
START_TEST(test_environment_overrides)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.use_environment = 1;
    setenv("HASHBATCH_BACKEND", "cpu", 1);
    hb_engine *e = tu_open_cfg(&cfg);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_CPU);
    hb_engine_close(e);
    unsetenv("HASHBATCH_BACKEND");

    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.use_environment = 1;
    setenv("HASHBATCH_BACKEND", "opencl", 1);
    setenv("HASHBATCH_DEVICE", "no-such-device-xyz", 1);
    open_expect(&cfg, HB_ERR_BAD_DEVICE_SPEC, "HASHBATCH_DEVICE=no-such");
    unsetenv("HASHBATCH_BACKEND");
    unsetenv("HASHBATCH_DEVICE");
}
END_TEST

/* ---- parsers and names ---------------------------------------------- */

START_TEST(test_backend_parse)
{
    hb_backend_kind k = HB_BACKEND_CPU;
    ck_assert_int_eq(hb_backend_parse("gpuu", &k), HB_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(hb_backend_parse("", &k), HB_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(hb_backend_parse(NULL, &k), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_backend_parse("cpu", NULL), HB_ERR_NULL_ARGUMENT);
    static const hb_backend_kind kinds[] = {HB_BACKEND_AUTO, HB_BACKEND_OPENCL,
                                            HB_BACKEND_CPU};
    static const char *const names[] = {"auto", "opencl", "cpu"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(hb_backend_parse(names[i], &k), HB_OK);
        ck_assert_int_eq(k, kinds[i]);
        ck_assert_str_eq(hb_backend_name(kinds[i]), names[i]);
    }
}
END_TEST

START_TEST(test_verify_parse)
{
    hb_verify_mode v = HB_VERIFY_OFF;
    ck_assert_int_eq(hb_verify_parse("sometimes", &v),
                     HB_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(hb_verify_parse(NULL, &v), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_verify_parse("full", NULL), HB_ERR_NULL_ARGUMENT);
    static const hb_verify_mode modes[] = {HB_VERIFY_OFF, HB_VERIFY_SAMPLE,
                                           HB_VERIFY_FULL};
    static const char *const names[] = {"off", "sample", "full"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(hb_verify_parse(names[i], &v), HB_OK);
        ck_assert_int_eq(v, modes[i]);
        ck_assert_str_eq(hb_verify_name(modes[i]), names[i]);
    }
}
END_TEST

START_TEST(test_status_strings)
{
#define ENTRY_(name, value, text) {name, #name, text},
    static const struct {
        hb_status s;
        const char *name, *text;
    } all[] = {HB_STATUS_LIST(ENTRY_)};
#undef ENTRY_
    const size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        const char *str = hb_status_str(all[i].s);
        ck_assert_ptr_nonnull(str);
        ck_assert_msg(str[0] != '\0', "empty text for %s", all[i].name);
        ck_assert_str_eq(str, all[i].text);
        ck_assert_str_eq(hb_status_name(all[i].s), all[i].name);
        ck_assert_str_ne(str, "unknown status");
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(strcmp(str, hb_status_str(all[j].s)) != 0,
                          "%s and %s share a text", all[i].name,
                          all[j].name);
    }
    ck_assert_str_eq(hb_status_str((hb_status)999), "unknown status");
    ck_assert_str_eq(hb_status_str((hb_status)-1), "unknown status");
    ck_assert_str_eq(hb_status_str((hb_status)n), "unknown status");
    ck_assert_str_eq(hb_status_name((hb_status)999), "HB_UNKNOWN");
}
END_TEST

START_TEST(test_null_is_fine)
{
    hb_engine_close(NULL);
    hb_config_init(NULL);
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(NULL, &st), HB_ERR_NULL_ARGUMENT);
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    ck_assert_int_eq(hb_engine_stats(e, NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_str_eq(hb_engine_last_error(e), "");
    hb_engine_close(e);

    size_t count = 0;
    hb_device_info info;
    ck_assert_int_eq(hb_devices_list(NULL, 0, NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_devices_list(&info, 1, NULL), HB_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(hb_devices_list(NULL, 3, &count), HB_ERR_NULL_ARGUMENT);
}
END_TEST

START_TEST(test_version)
{
    ck_assert_uint_eq(hb_version_number(), HB_VERSION_NUMBER);
    ck_assert_str_eq(hb_version_string(), HB_VERSION_STRING);
}
END_TEST

/* ---- no OpenCL at all (run in the child, see run_no_opencl_child) ---- */

START_TEST(test_child_opencl_fails)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    open_expect(&cfg, HB_ERR_NO_OPENCL, "no ICD, backend opencl");
}
END_TEST

START_TEST(test_child_auto_uses_cpu)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_AUTO);
    hb_engine *e = tu_open_cfg(&cfg);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_CPU);
    fprintf(stderr, "no ICD, backend auto: %s\n", hb_engine_describe(e));
    tu_msgset s;
    tu_msgset_random(&s, 200, 5000, 99);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "no ICD, auto");
    tu_assert_clean(e);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* No device at all: a named device is a bad spec for every backend; "all"
 * (every device, none here) is not: cpu and auto open the pool. */
START_TEST(test_child_specs_without_devices)
{
    for (size_t b = 0; b < 3; b++) {
        open_expect_bad_spec(all_backends[b], "gpu", 0);
        open_expect_bad_spec(all_backends[b], "0:0", 0);
        open_expect_bad_spec(all_backends[b], "1:x", 0);
    }
    for (size_t b = 1; b < 3; b++) {
        hb_config cfg;
        tu_config(&cfg, all_backends[b]);
        cfg.device = "all";
        hb_engine *e = tu_open_cfg(&cfg);
        ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_CPU);
        hb_engine_close(e);
    }
}
END_TEST

START_TEST(test_child_no_devices)
{
    size_t count = 12345;
    hb_device_info info[2];
    ck_assert_int_eq(hb_devices_list(NULL, 0, &count), HB_OK);
    ck_assert_uint_eq(count, 0);
    count = 12345;
    ck_assert_int_eq(hb_devices_list(info, 2, &count), HB_OK);
    ck_assert_uint_eq(count, 0);
}
END_TEST

static Suite *child_suite(void)
{
    Suite *s = suite_create("errors-no-opencl");
    TCase *tc = tcase_create("no-opencl");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_child_opencl_fails);
    tcase_add_test(tc, test_child_auto_uses_cpu);
    tcase_add_test(tc, test_child_no_devices);
    tcase_add_test(tc, test_child_specs_without_devices);
    suite_add_tcase(s, tc);
    return s;
}

/* Re-runs this binary with CHILD_FLAG and an empty OCL_ICD_VENDORS
 * directory, so that the OpenCL ICD loader finds no platform at all. */
START_TEST(test_no_opencl_child)
{
    char dir[] = "/tmp/hashbatch-noicd-XXXXXX";
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("OCL_ICD_VENDORS", dir, 1);
        unsetenv("OCL_ICD_FILENAMES");
        unsetenv("OPENCL_LAYERS");
        execl("/proc/self/exe", "test_errors", CHILD_FLAG, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    rmdir(dir);
    ck_assert_int_eq(w, pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "no-OpenCL child failed (status 0x%x); its output is "
                  "above", (unsigned)status);
}
END_TEST

static Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    int nb = (int)tu_backend_count;
    TCase *tc = tcase_create("batch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_batch_null_engine);
    tcase_add_loop_test(tc, test_batch_null_arrays, 0, nb);
    tcase_add_loop_test(tc, test_batch_null_data, 0, nb);
    suite_add_tcase(s, tc);

    tc = tcase_create("open");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_open_null_out);
    tcase_add_test(tc, test_open_bad_device_spec);
    tcase_add_test(tc, test_open_bad_device_env);
    tcase_add_test(tc, test_cpu_accepts_good_spec);
    tcase_add_test(tc, test_open_bad_enum_values);
    tcase_add_test(tc, test_open_bad_environment);
    tcase_add_test(tc, test_environment_overrides);
    suite_add_tcase(s, tc);

    tc = tcase_create("names");
    tcase_add_test(tc, test_backend_parse);
    tcase_add_test(tc, test_verify_parse);
    tcase_add_test(tc, test_status_strings);
    tcase_add_test(tc, test_null_is_fine);
    tcase_add_test(tc, test_version);
    suite_add_tcase(s, tc);

    tc = tcase_create("no-opencl");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_no_opencl_child);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], CHILD_FLAG) == 0)
        return tu_run_suite(child_suite());
    return tu_run_suite(errors_suite());
}
