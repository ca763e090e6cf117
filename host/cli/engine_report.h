/*
 * engine_report.h - how the CLI shows what an engine's scheduler did and
 * what it believes: per backend, its share of the work, its cost model
 * and its predicted against its measured time (`sum -v`, `dedup -v`);
 * where the models came from; every model as a table or as JSON
 * (`devices --calibrate`).
 *
 * Owns: the wording and layout of those lines, tables and JSON objects,
 * read from one hb_stats snapshot. Must not: open, drive or close an
 * engine, or decide anything about routes (the library's scheduler does).
 */
#ifndef HB_CLI_ENGINE_REPORT_H
#define HB_CLI_ENGINE_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "hashbatch.h"

/* engine_report_class_of: the class of work (0 short, 1 mid, 2 long) of
 * messages holding bytes, by their mean length, with the bounds
 * hashbatch.h documents for HB_COST_CLASSES (1 KiB, 256 KiB). */
unsigned engine_report_class_of(uint64_t messages, uint64_t bytes);

/* engine_report_took_part: 1 when backend d did any work or the scheduler
 * gives it jobs (takes_jobs), 0 for one that stood by. */
int engine_report_took_part(const hb_device_stats *d);

/* engine_report_origin: one line on f, "PROGRAM: cost models: calibrated
 * at open in 41.2 ms" (or "from the model cache", or neither). */
void engine_report_origin(FILE *f, const hb_stats *st);

/* engine_report_backends: one line on f per backend that took part, each
 * "PROGRAM:   NAME: messages (share), bytes (share), batches, busy time;
 * the model of the class of work it mostly did; predicted against
 * measured time and their ratio". Shares are of the work all backends
 * did. */
void engine_report_backends(FILE *f, const hb_stats *st);

/* engine_report_models_table: every backend's model, one row per class:
 * backend, class, fixed (us), per message (ns), per byte (ns) and the
 * GB/s that per-byte term implies; each row starts with indent. */
void engine_report_models_table(FILE *f, const hb_stats *st, const char *indent);

/* engine_report_models_json: the "backends" array of every backend's
 * models as JSON (no trailing newline); nested lines start with indent. */
void engine_report_models_json(FILE *f, const hb_stats *st, const char *indent);

#endif /* HB_CLI_ENGINE_REPORT_H */
