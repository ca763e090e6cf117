/*
 * device_type.c - the names of OpenCL device types.
 *
 * Owns: hb_device_type_name, the one part of the device API that builds
 * with and without OpenCL (devices.c and its stand-in opencl_absent.c
 * share it).
 * Must not: call OpenCL.
 */
#include "hashbatch.h"

const char *hb_device_type_name(hb_device_type t)
{
    switch (t) {
    case HB_DEVICE_GPU:
        return "gpu";
    case HB_DEVICE_CPU:
        return "cpu";
    case HB_DEVICE_ACCELERATOR:
        return "accelerator";
    case HB_DEVICE_OTHER:
        break;
    }
    return "other";
}
