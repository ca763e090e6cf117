/*
 * engine_info.c - what an engine and the machine report: stats and the
 * OpenCL device list, as Ruby Hashes.
 *
 * Owns: hb_stats as a Hash (Engine#stats, Hashbatch.default_engine_stats)
 * and the device list (Engine#devices, Hashbatch.devices).
 * Must not: open, close or submit to engines.
 */
#include "engine_parts.h"

VALUE hb_ext_stats_hash(const hb_stats *s)
{
    VALUE h = rb_hash_new();
#define HB_EXT_STAT_(field) rb_hash_aset(h, ID2SYM(rb_intern(#field)), ULL2NUM(s->field))
    HB_EXT_STAT_(messages);
    HB_EXT_STAT_(bytes);
    HB_EXT_STAT_(batches);
    HB_EXT_STAT_(jobs_submitted);
    HB_EXT_STAT_(jobs_completed);
    HB_EXT_STAT_(jobs_cancelled);
    HB_EXT_STAT_(device_launches);
    HB_EXT_STAT_(device_bytes);
    HB_EXT_STAT_(cpu_bytes);
    HB_EXT_STAT_(verified);
    HB_EXT_STAT_(verify_mismatches);
    HB_EXT_STAT_(verified_bytes);
    HB_EXT_STAT_(cpu_moved_bytes);
    HB_EXT_STAT_(fallbacks);
    HB_EXT_STAT_(device_errors);
    HB_EXT_STAT_(queue_messages);
    HB_EXT_STAT_(queue_jobs);
#undef HB_EXT_STAT_
    rb_hash_aset(h, ID2SYM(rb_intern("quarantined")), INT2NUM(s->quarantined));
    VALUE devs = rb_ary_new();
    for (unsigned i = 0; i < s->ndevices && i < HB_STATS_MAX_DEVICES; i++) {
        const hb_device_stats *d = &s->device[i];
        VALUE dh = rb_hash_new();
        rb_hash_aset(dh, ID2SYM(rb_intern("name")), rb_str_new_cstr(d->name));
        rb_hash_aset(dh, ID2SYM(rb_intern("cpu")), d->is_cpu ? Qtrue : Qfalse);
#define HB_EXT_DSTAT_(field) rb_hash_aset(dh, ID2SYM(rb_intern(#field)), ULL2NUM(d->field))
        HB_EXT_DSTAT_(messages);
        HB_EXT_DSTAT_(bytes);
        HB_EXT_DSTAT_(batches);
        HB_EXT_DSTAT_(launches);
        HB_EXT_DSTAT_(busy_ns);
        HB_EXT_DSTAT_(errors);
#undef HB_EXT_DSTAT_
        rb_hash_aset(dh, ID2SYM(rb_intern("quarantined")), d->quarantined ? Qtrue : Qfalse);
        rb_ary_push(devs, dh);
    }
    rb_hash_aset(h, ID2SYM(rb_intern("devices")), devs);
    return h;
}

/* device_hash: one device's information as a Hash. */
static VALUE device_hash(const hb_device_info *d)
{
    VALUE h = rb_hash_new();
    rb_hash_aset(h, ID2SYM(rb_intern("spec")),
                 rb_sprintf("%u:%u", d->platform_index, d->device_index));
    rb_hash_aset(h, ID2SYM(rb_intern("platform")), rb_str_new_cstr(d->platform_name));
    rb_hash_aset(h, ID2SYM(rb_intern("name")), rb_str_new_cstr(d->name));
    rb_hash_aset(h, ID2SYM(rb_intern("vendor")), rb_str_new_cstr(d->vendor));
    rb_hash_aset(h, ID2SYM(rb_intern("version")), rb_str_new_cstr(d->version));
    rb_hash_aset(h, ID2SYM(rb_intern("driver_version")), rb_str_new_cstr(d->driver_version));
    rb_hash_aset(h, ID2SYM(rb_intern("type")), ID2SYM(rb_intern(hb_device_type_name(d->type))));
    rb_hash_aset(h, ID2SYM(rb_intern("compute_units")), UINT2NUM(d->compute_units));
    rb_hash_aset(h, ID2SYM(rb_intern("max_clock_mhz")), UINT2NUM(d->max_clock_mhz));
    rb_hash_aset(h, ID2SYM(rb_intern("global_mem_bytes")), ULL2NUM(d->global_mem_bytes));
    rb_hash_aset(h, ID2SYM(rb_intern("available")), d->available ? Qtrue : Qfalse);
    rb_hash_aset(h, ID2SYM(rb_intern("auto_pick")), d->auto_pick ? Qtrue : Qfalse);
    return h;
}

VALUE hb_ext_devices(VALUE self)
{
    if (hb_ext_opencl_forked())
        rb_raise(hb_ext_error_class(HB_ERR_NO_OPENCL),
                 "Hashbatch.devices: OpenCL cannot be used in a process forked from one that had "
                 "started it");
    hb_ext_opencl_touch();
    size_t count = 0;
    hb_status st = hb_devices_list(NULL, 0, &count);
    if (st != HB_OK)
        hb_ext_raise(st, NULL, "Hashbatch.devices");
    hb_device_info *info = ALLOC_N(hb_device_info, count ? count : 1);
    size_t got = count;
    st = hb_devices_list(info, count, &got);
    if (got < count)
        count = got;
    VALUE ary = rb_ary_new();
    for (size_t i = 0; st == HB_OK && i < count; i++)
        rb_ary_push(ary, device_hash(&info[i]));
    xfree(info);
    if (st != HB_OK)
        hb_ext_raise(st, NULL, "Hashbatch.devices");
    return ary;
}
