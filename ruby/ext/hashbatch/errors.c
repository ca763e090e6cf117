/*
 * errors.c - Hashbatch::Error and its subclasses, one per kind of hb_status.
 *
 * Owns: the exception classes and hb_ext_raise, which maps an hb_status to
 * its class and fills #status, #status_name, #detail and, for device
 * errors, #cl_error (the OpenCL error code read from the engine's
 * last-error text).
 * Must not: hash, or raise for HB_OK.
 */
#include "hb_ext.h"

#include <stdlib.h>
#include <string.h>

static VALUE eError, eArgumentError, eNoMemoryError, eDeviceError, eNoDeviceError, eBuildError,
    eVerifyError, eTimeoutError, eCancelledError, eClosedError, eIOError, eThreadError,
    eInternalError, eFileError, eFileChangedError, eNotRegularFileError;

/* status_class: the exception class for st. */
VALUE hb_ext_error_class(hb_status st)
{
    switch (st) {
    case HB_ERR_NULL_ARGUMENT:
    case HB_ERR_INVALID_ARGUMENT:
        return eArgumentError;
    case HB_ERR_NO_MEMORY:
        return eNoMemoryError;
    case HB_ERR_NO_OPENCL:
    case HB_ERR_BAD_DEVICE_SPEC:
        return eNoDeviceError;
    case HB_ERR_BUILD_FAILED:
        return eBuildError;
    case HB_ERR_DEVICE:
        return eDeviceError;
    case HB_ERR_VERIFY_FAILED:
        return eVerifyError;
    case HB_ERR_TIMEOUT:
        return eTimeoutError;
    case HB_ERR_CANCELLED:
        return eCancelledError;
    case HB_ERR_CLOSED:
        return eClosedError;
    case HB_ERR_IO:
        return eIOError;
    case HB_ERR_THREAD:
        return eThreadError;
#ifdef HAVE_HB_SUBMIT_FILES
    case HB_ERR_FILE_CHANGED:
        return eFileChangedError;
    case HB_ERR_NOT_REGULAR:
        return eNotRegularFileError;
#endif
    default:
        return eInternalError;
    }
}

VALUE hb_ext_file_error_class(hb_status st)
{
    VALUE klass = hb_ext_error_class(st);
    return klass == eIOError ? eFileError : klass;
}

/* parse_cl_error: the OpenCL code in text such as "clEnqueue failed:
 * CL_OUT_OF_RESOURCES (-5) on ...": the number in parentheses after the
 * first "CL_" name. Qnil when there is none. */
static VALUE parse_cl_error(const char *text)
{
    const char *p = strstr(text, "CL_");
    while (p != NULL) {
        const char *q = p + 3;
        while (*q == '_' || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9'))
            q++;
        if (q[0] == ' ' && q[1] == '(') {
            char *end;
            long code = strtol(q + 2, &end, 10);
            if (end != q + 2 && *end == ')')
                return LONG2NUM(code);
        }
        p = strstr(q, "CL_");
    }
    return Qnil;
}

void hb_ext_raise(hb_status st, const hb_engine *e, const char *what)
{
    hb_ext_raise_text(st, hb_engine_last_error(e), what);
}

void hb_ext_raise_text(hb_status st, const char *detail, const char *what)
{
    VALUE msg = rb_sprintf("%s: %s", what, hb_status_str(st));
    if (detail[0] != '\0')
        rb_str_catf(msg, " (%s)", detail);
    VALUE klass = hb_ext_error_class(st);
    VALUE exc = rb_exc_new_str(klass, msg);
    rb_ivar_set(exc, rb_intern("@status"), INT2NUM((int)st));
    rb_ivar_set(exc, rb_intern("@status_name"), rb_str_new_cstr(hb_status_name(st)));
    rb_ivar_set(exc, rb_intern("@detail"), rb_str_new_cstr(detail));
    if (rb_obj_is_kind_of(exc, eDeviceError))
        rb_ivar_set(exc, rb_intern("@cl_error"), parse_cl_error(detail));
    rb_exc_raise(exc);
}

/* define_status_constants: Hashbatch::Status::OK = 0, ... from the one list. */
static void define_status_constants(void)
{
    VALUE mStatus = rb_define_module_under(hb_mHashbatch, "Status");
#define HB_EXT_STATUS_CONST_(name, value, text) rb_define_const(mStatus, #name + 3, INT2NUM(value));
    HB_STATUS_LIST(HB_EXT_STATUS_CONST_)
#undef HB_EXT_STATUS_CONST_
}

void hb_ext_init_errors(void)
{
    eError = rb_define_class_under(hb_mHashbatch, "Error", rb_eStandardError);
    eArgumentError = rb_define_class_under(hb_mHashbatch, "ArgumentError", eError);
    eNoMemoryError = rb_define_class_under(hb_mHashbatch, "NoMemoryError", eError);
    eDeviceError = rb_define_class_under(hb_mHashbatch, "DeviceError", eError);
    eNoDeviceError = rb_define_class_under(hb_mHashbatch, "NoDeviceError", eDeviceError);
    eBuildError = rb_define_class_under(hb_mHashbatch, "BuildError", eDeviceError);
    eVerifyError = rb_define_class_under(hb_mHashbatch, "VerifyError", eError);
    eTimeoutError = rb_define_class_under(hb_mHashbatch, "TimeoutError", eError);
    eCancelledError = rb_define_class_under(hb_mHashbatch, "CancelledError", eError);
    eClosedError = rb_define_class_under(hb_mHashbatch, "ClosedError", eError);
    eIOError = rb_define_class_under(hb_mHashbatch, "IOError", eError);
    eThreadError = rb_define_class_under(hb_mHashbatch, "ThreadError", eError);
    eInternalError = rb_define_class_under(hb_mHashbatch, "InternalError", eError);
    eFileError = rb_define_class_under(hb_mHashbatch, "FileError", eError);
    eFileChangedError = rb_define_class_under(hb_mHashbatch, "FileChangedError", eFileError);
    eNotRegularFileError = rb_define_class_under(hb_mHashbatch, "NotRegularFileError", eFileError);
    define_status_constants();
}
