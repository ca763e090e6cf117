/*
 * progress.h - a one-line progress meter on stderr for long runs: files and
 * bytes done, the rate, and the time left when the total is known.
 *
 * It is drawn only when its stream is a terminal and the user did not ask
 * for quiet, at most five times a second, and never in the first half
 * second (short runs show nothing; HASHBATCH_PROGRESS_FIRST_MS changes
 * that delay, for tests). Every function accepts NULL (a meter
 * that is off), so callers need no checks.
 *
 * Owns: the meter's line, its redraw rate and erasing it. Must not: write
 * to stdout, or be left drawn when the program prints anything else on
 * stderr (call progress_clear first) or exits (progress_close).
 */
#ifndef HB_CLI_PROGRESS_H
#define HB_CLI_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct progress progress;

/* progress_open: a meter drawing on f (normally stderr). Returns NULL,
 * a meter that is off, when quiet is nonzero, f is not a terminal, or
 * memory is short; close what it returns with progress_close. */
progress *progress_open(FILE *f, int quiet);

/* progress_stage: starts a new stage called label (a static string, e.g.
 * "reading"), with its totals when known (0: unknown, no ETA); the counts
 * and the rate start again from zero. Thread-safe. */
void progress_stage(progress *p, const char *label, uint64_t total_files, uint64_t total_bytes);

/* progress_add: files and bytes more done in this stage; redraws when the
 * last draw is at least 200 ms old. Cheap; thread-safe. */
void progress_add(progress *p, uint64_t files, uint64_t bytes);

/* progress_clear: erases the meter's line now, so that a message can be
 * printed on the stream; a later progress_add draws it again (at the
 * next redraw tick).
 * Thread-safe. */
void progress_clear(progress *p);

/* progress_close: erases the line and frees p. NULL is fine. */
void progress_close(progress *p);

#endif /* HB_CLI_PROGRESS_H */
