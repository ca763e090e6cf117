/*
 * model_cache.h - the scheduler's cost models, kept between runs.
 *
 * Owns: one text file (like FFTW's wisdom) holding, per key (machine,
 * backend, driver and library versions, as the engine spells them), the
 * cost terms a calibration measured or a run refined, and when they were
 * written. Reading is forgiving: a missing, unreadable, truncated,
 * corrupt or foreign-version file, or an entry that is malformed, too old
 * or holds a negative or non-finite term, is simply not found. Writing is
 * atomic (a temporary file in the same folder, then rename), keeps the
 * other keys' entries, and fails quietly.
 * Must not: report errors to the engine's caller, print, or block for
 * long (no locks held across runs: concurrent writers each rename a whole
 * file, the last one wins).
 */
#ifndef HB_MODEL_CACHE_H
#define HB_MODEL_CACHE_H

#include <stddef.h>

#include "hashbatch.h"

/* The file's format version, in its first line ("hashbatch-models 1"). */
#define HB_MODEL_CACHE_VERSION 1
/* Entries older than this are stale: calibrate again. */
#define HB_MODEL_CACHE_MAX_AGE_S (30L * 24 * 3600)

/* hb_model_cache_path: the cache file's path into buf: the environment's
 * HASHBATCH_MODEL_CACHE when set (then "" or "off" mean no cache), else
 * $XDG_CACHE_HOME/hashbatch/models.txt, else $HOME/.cache/hashbatch/
 * models.txt. Returns 1 with buf filled, 0 when there is no cache (off, no
 * home, or the path does not fit in size). */
int hb_model_cache_path(char *buf, size_t size);

/* hb_model_cache_load: 1 with terms[0..HB_COST_CLASSES) filled when the
 * file at path has a good, fresh entry for key; else 0 (terms untouched). */
int hb_model_cache_load(const char *path, const char *key, hb_cost_terms terms[HB_COST_CLASSES]);

/* hb_model_cache_store: writes key's terms (now as their time) into the
 * file at path, replacing key's old entry, keeping the others, creating
 * the folders above it (0700) if missing. A key holding a tab, newline
 * or other control character, empty or longer than 1000 bytes, is
 * refused, and so are terms a load would not accept (negative or not
 * finite). Returns 1 when the file was replaced, 0 when nothing was
 * written (nothing is then left behind: no temporary file). */
int hb_model_cache_store(const char *path, const char *key,
                         const hb_cost_terms terms[HB_COST_CLASSES]);

#endif /* HB_MODEL_CACHE_H */
