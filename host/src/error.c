/*
 * error.c - keeping the text of the most recent failure.
 *
 * Owns: the per-engine and per-thread error text.
 * Must not: print, or keep anything but text.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char thread_error_text[HB_ERROR_TEXT_MAX];

void hb_error_slot_init(hb_error_slot *slot)
{
    pthread_mutex_init(&slot->lock, NULL);
    slot->text[0] = '\0';
}

void hb_error_slot_destroy(hb_error_slot *slot)
{
    pthread_mutex_destroy(&slot->lock);
}

hb_status hb_error_set(hb_error_slot *slot, hb_status status, const char *fmt,
                       ...)
{
    va_list args;
    va_start(args, fmt);
    if (slot == NULL) {
        vsnprintf(thread_error_text, sizeof thread_error_text, fmt, args);
    } else {
        pthread_mutex_lock(&slot->lock);
        vsnprintf(slot->text, sizeof slot->text, fmt, args);
        pthread_mutex_unlock(&slot->lock);
    }
    va_end(args);
    return status;
}

const char *hb_error_text(const hb_error_slot *slot)
{
    return slot == NULL ? thread_error_text : slot->text;
}

void hb_error_copy_to_thread(const hb_error_slot *slot)
{
    snprintf(thread_error_text, sizeof thread_error_text, "%s", slot->text);
}
