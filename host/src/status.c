/*
 * status.c - names and descriptions of hb_status values, and the version.
 *
 * Owns: turning status values into text, from the one list in hashbatch.h.
 * Must not: hold state; every function here is pure.
 */
#include "hashbatch.h"

const char *hb_status_str(hb_status s)
{
    switch (s) {
#define HB_STATUS_TEXT_(name, value, text) \
    case name:                             \
        return text;
        HB_STATUS_LIST(HB_STATUS_TEXT_)
#undef HB_STATUS_TEXT_
    }
    return "unknown status";
}

const char *hb_status_name(hb_status s)
{
    switch (s) {
#define HB_STATUS_NAME_(name, value, text) \
    case name:                             \
        return #name;
        HB_STATUS_LIST(HB_STATUS_NAME_)
#undef HB_STATUS_NAME_
    }
    return "HB_UNKNOWN";
}

unsigned hb_version_number(void)
{
    return HB_VERSION_NUMBER;
}

const char *hb_version_string(void)
{
    return HB_VERSION_STRING;
}
