/*
 * test_devices.c - device listing, device specs, engine description and
 * stats bookkeeping.
 *
 * Covers: hb_devices_list counting with cap 0 then filling (and a short
 * buffer); at least one device on this machine (pocl); exactly one
 * auto_pick; fields filled in; specs that select a listed device ("P:D",
 * "all", "cpu"/"gpu" by type, a name substring in another case) open and
 * hash right; hb_engine_describe non-empty and naming the backend;
 * hb_engine_backend never AUTO; the stats counters adding up after batches
 * (messages, bytes, batches, device/cpu bytes, verified) per backend.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* list_devices: malloc'd list of every device, count in *n. */
static hb_device_info *list_devices(size_t *n)
{
    size_t count = 0;
    ck_assert_int_eq(hb_devices_list(NULL, 0, &count), HB_OK);
    hb_device_info *d = calloc(count ? count : 1, sizeof *d);
    ck_assert_ptr_nonnull(d);
    size_t again = 0;
    ck_assert_int_eq(hb_devices_list(d, count, &again), HB_OK);
    ck_assert_uint_eq(again, count);
    *n = count;
    return d;
}

/* hash_check: a small random batch through e, against OpenSSL. */
static void hash_check(hb_engine *e, const char *what)
{
    tu_msgset s;
    tu_msgset_random(&s, 300, 3000, 0xde5);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, what);
    free(got);
    tu_msgset_free(&s);
}

START_TEST(test_list_devices)
{
    size_t n = 0;
    hb_device_info *d = list_devices(&n);
    ck_assert_msg(n >= 1, "no OpenCL device listed (pocl is installed here)");
    int picks = 0;
    for (size_t i = 0; i < n; i++) {
        fprintf(stderr, "[%u:%u] %s | %s | %s | %s | %s | %s, %u CUs, "
                "%u MHz, %llu MiB, max alloc %llu MiB%s%s\n",
                d[i].platform_index, d[i].device_index, d[i].platform_name,
                d[i].name, d[i].vendor, d[i].version, d[i].driver_version,
                hb_device_type_name(d[i].type), d[i].compute_units,
                d[i].max_clock_mhz,
                (unsigned long long)(d[i].global_mem_bytes >> 20),
                (unsigned long long)(d[i].max_alloc_bytes >> 20),
                d[i].available ? "" : " (unavailable)",
                d[i].auto_pick ? " [auto]" : "");
        ck_assert_msg(d[i].name[0] && d[i].platform_name[0] &&
                          d[i].vendor[0] && d[i].version[0] &&
                          d[i].driver_version[0],
                      "device %zu has an empty text field", i);
        ck_assert_msg(memchr(d[i].name, '\0', sizeof d[i].name) != NULL,
                      "device name not terminated");
        ck_assert_uint_gt(d[i].compute_units, 0);
        ck_assert_uint_gt(d[i].global_mem_bytes, 0);
        ck_assert_uint_gt(d[i].max_alloc_bytes, 0);
        ck_assert_int_le(d[i].type, HB_DEVICE_OTHER);
        ck_assert_int_ge(d[i].type, HB_DEVICE_GPU);
        picks += d[i].auto_pick != 0;
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(d[i].platform_index != d[j].platform_index ||
                              d[i].device_index != d[j].device_index,
                          "devices %zu and %zu share an index", i, j);
    }
    ck_assert_int_eq(picks, 1);
    free(d);
}
END_TEST

START_TEST(test_list_short_buffer)
{
    size_t n = 0;
    hb_device_info *all = list_devices(&n);
    ck_assert_uint_ge(n, 1);
    hb_device_info one[2];
    memset(one, 0x5a, sizeof one);
    size_t count = 0;
    ck_assert_int_eq(hb_devices_list(one, 1, &count), HB_OK);
    ck_assert_uint_eq(count, n);
    ck_assert_str_eq(one[0].name, all[0].name);
    /* Entry 1 was not written. */
    const unsigned char *tail = (const unsigned char *)&one[1];
    for (size_t i = 0; i < sizeof one[1]; i++)
        ck_assert_uint_eq(tail[i], 0x5a);
    free(all);
}
END_TEST

START_TEST(test_type_names)
{
    ck_assert_str_eq(hb_device_type_name(HB_DEVICE_GPU), "gpu");
    ck_assert_str_eq(hb_device_type_name(HB_DEVICE_CPU), "cpu");
    ck_assert_str_eq(hb_device_type_name(HB_DEVICE_ACCELERATOR),
                     "accelerator");
    ck_assert_str_eq(hb_device_type_name(HB_DEVICE_OTHER), "other");
    ck_assert_uint_ge(hb_cpu_threads_default(), 1);
    int ni = hb_cpu_has_sha_ni();
    ck_assert(ni == 0 || ni == 1);
}
END_TEST

/* open_spec: an OpenCL engine on spec must open, and hash right. */
static void open_spec(const char *spec)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.device = spec;
    hb_engine *e = tu_open_cfg(&cfg);
    char what[192];
    snprintf(what, sizeof what, "device \"%s\" (%s)", spec,
             hb_engine_describe(e));
    fprintf(stderr, "%s\n", what);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL);
    hash_check(e, what);
    tu_assert_clean(e);
    hb_engine_close(e);
}

START_TEST(test_device_specs)
{
    size_t n = 0;
    hb_device_info *d = list_devices(&n);
    ck_assert_uint_ge(n, 1);
    char spec[160];
    snprintf(spec, sizeof spec, "%u:%u", d[0].platform_index,
             d[0].device_index);
    open_spec(spec);
    open_spec("all");
    /* A name substring, in upper case (matching is case-insensitive). */
    size_t len = strlen(d[0].name);
    size_t take = len < 6 ? len : 6;
    for (size_t i = 0; i < take; i++)
        spec[i] = (char)toupper((unsigned char)d[0].name[i]);
    spec[take] = '\0';
    open_spec(spec);
    /* By type: a type present opens; an absent one is a bad spec. */
    static const struct {
        const char *spec;
        hb_device_type type;
    } types[] = {{"cpu", HB_DEVICE_CPU}, {"gpu", HB_DEVICE_GPU}};
    for (size_t t = 0; t < 2; t++) {
        int present = 0;
        for (size_t i = 0; i < n; i++)
            present |= d[i].type == types[t].type;
        if (present) {
            open_spec(types[t].spec);
        } else {
            hb_config cfg;
            hb_engine *e = NULL;
            tu_config(&cfg, HB_BACKEND_OPENCL);
            cfg.device = types[t].spec;
            ck_assert_int_eq(hb_engine_open(&e, &cfg),
                             HB_ERR_BAD_DEVICE_SPEC);
            ck_assert_ptr_null(e);
        }
    }
    free(d);
}
END_TEST

START_TEST(test_describe_and_backend)
{
    static const hb_backend_kind kinds[] = {HB_BACKEND_AUTO, HB_BACKEND_OPENCL,
                                            HB_BACKEND_CPU};
    size_t ndev = 0;
    ck_assert_int_eq(hb_devices_list(NULL, 0, &ndev), HB_OK);
    for (size_t k = 0; k < 3; k++) {
        hb_engine *e = tu_open(kinds[k]);
        const char *desc = hb_engine_describe(e);
        hb_backend_kind used = hb_engine_backend(e);
        fprintf(stderr, "%s -> %s\n", hb_backend_name(kinds[k]), desc);
        ck_assert_ptr_nonnull(desc);
        ck_assert_msg(desc[0] != '\0', "empty description");
        ck_assert_int_ne(used, HB_BACKEND_AUTO);
        if (kinds[k] != HB_BACKEND_AUTO)
            ck_assert_int_eq(used, kinds[k]);
        else /* auto: OpenCL when a device is listed, else the CPU */
            ck_assert_int_eq(used, ndev > 0 ? HB_BACKEND_OPENCL
                                            : HB_BACKEND_CPU);
        ck_assert_msg(strstr(desc, hb_backend_name(used)) != NULL,
                      "description \"%s\" does not name backend %s", desc,
                      hb_backend_name(used));
        ck_assert_ptr_eq(hb_engine_describe(e), desc);
        hash_check(e, desc);
        hb_engine_close(e);
    }
}
END_TEST

/* Loop index: backend * 3 + verify mode. */
START_TEST(test_stats_add_up)
{
    static const hb_verify_mode modes[] = {HB_VERIFY_OFF, HB_VERIFY_SAMPLE,
                                           HB_VERIFY_FULL};
    hb_backend_kind kind = tu_backends[_i / 3];
    hb_verify_mode mode = modes[_i % 3];
    hb_config cfg;
    tu_config(&cfg, kind);
    cfg.verify = mode;
    hb_engine *e = tu_open_cfg(&cfg);

    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    ck_assert_uint_eq(st.messages, 0);
    ck_assert_uint_eq(st.bytes, 0);
    ck_assert_uint_eq(st.batches, 0);

    static const size_t sizes[] = {1, 17, 500, 0, 2000};
    uint64_t msgs = 0, bytes = 0, batches = 0;
    for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
        tu_msgset s;
        tu_msgset_random(&s, sizes[b], 4000, 0x57a7 + b);
        hb_digest *got = tu_digests(s.n);
        tu_batch(e, s.m, s.n, got);
        tu_assert_digests(s.m, s.n, s.want, got, "stats batch");
        msgs += s.n;
        bytes += s.total_bytes;
        batches++;
        free(got);
        tu_msgset_free(&s);
    }
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    fprintf(stderr, "%s/%s: messages %llu bytes %llu batches %llu launches "
            "%llu device %llu cpu %llu verified %llu jobs %llu\n",
            hb_backend_name(kind), hb_verify_name(mode),
            (unsigned long long)st.messages, (unsigned long long)st.bytes,
            (unsigned long long)st.batches,
            (unsigned long long)st.device_launches,
            (unsigned long long)st.device_bytes,
            (unsigned long long)st.cpu_bytes,
            (unsigned long long)st.verified,
            (unsigned long long)st.jobs_completed);
    ck_assert_uint_eq(st.messages, msgs);
    ck_assert_uint_eq(st.bytes, bytes);
    /* Each hb_sha1_batch call is one job (the n = 0 call may or may not
     * count); batches are the engine's internal units, at least one. */
    ck_assert_uint_ge(st.jobs_completed, batches - 1);
    ck_assert_uint_le(st.jobs_completed, batches);
    ck_assert_uint_eq(st.jobs_submitted, st.jobs_completed);
    ck_assert_uint_eq(st.jobs_cancelled, 0);
    ck_assert_uint_ge(st.batches, 1);
    ck_assert_uint_eq(st.queue_messages, 0);
    ck_assert_uint_eq(st.queue_jobs, 0);
    ck_assert_uint_le(st.verified, msgs);
    if (kind == HB_BACKEND_CPU) {
        ck_assert_uint_eq(st.cpu_bytes, bytes);
        ck_assert_uint_eq(st.device_bytes, 0);
        ck_assert_uint_eq(st.device_launches, 0);
    } else {
        ck_assert_uint_eq(st.device_bytes, bytes);
        ck_assert_uint_ge(st.device_launches, 1);
        if (mode == HB_VERIFY_FULL)
            ck_assert_uint_eq(st.verified, msgs);
        else if (mode == HB_VERIFY_OFF)
            ck_assert_uint_eq(st.verified, 0);
        else /* at least one per batch that had messages */
            ck_assert_uint_ge(st.verified, batches - 1);
    }
    tu_assert_clean(e);
    hb_engine_close(e);
}
END_TEST

static Suite *devices_suite(void)
{
    Suite *s = suite_create("devices");
    TCase *tc = tcase_create("list");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_list_devices);
    tcase_add_test(tc, test_list_short_buffer);
    tcase_add_test(tc, test_type_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("engines");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_device_specs);
    tcase_add_test(tc, test_describe_and_backend);
    tcase_add_loop_test(tc, test_stats_add_up, 0, (int)tu_backend_count * 3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(devices_suite());
}
