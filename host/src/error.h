/*
 * error.h - the text kept about the most recent failure.
 *
 * Owns: error slots (one per engine, plus one per thread for failures with
 * no engine) and formatting into them.
 * Must not: print anything or decide statuses; callers return the status,
 * this only keeps the words that explain it.
 */
#ifndef HB_ERROR_H
#define HB_ERROR_H

#include <pthread.h>

#include "hashbatch.h"

#define HB_ERROR_TEXT_MAX 16384 /* room for a kernel build log */

typedef struct {
    pthread_mutex_t lock;
    char text[HB_ERROR_TEXT_MAX];
} hb_error_slot;

void hb_error_slot_init(hb_error_slot *slot);
void hb_error_slot_destroy(hb_error_slot *slot);

/* hb_error_set: formats into slot (NULL: the calling thread's own slot) and
 * returns status, so a failure reads `return hb_error_set(slot, st, ...)`. */
hb_status hb_error_set(hb_error_slot *slot, hb_status status, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));

/* hb_error_text: slot's text (NULL: the calling thread's). */
const char *hb_error_text(const hb_error_slot *slot);

/* hb_error_copy_to_thread: copies slot's text into the thread's slot, for
 * failures found on an engine that is about to be destroyed. */
void hb_error_copy_to_thread(const hb_error_slot *slot);

#endif /* HB_ERROR_H */
