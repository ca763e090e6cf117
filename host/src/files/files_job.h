/*
 * files_job.h - a files job's life (files_job.c), for the public calls
 * (files_api.c).
 *
 * Owns: the interface between the two. Must not: be included outside
 * host/src/files.
 */
#ifndef HB_FILES_JOB_H
#define HB_FILES_JOB_H

#include "hashbatch.h"

/* files_job_new: an initialised job (options resolved), threads not
 * started, its paths opened beneath dir_fd (-1: as given); NULL when out
 * of memory. */
hb_files_job *files_job_new(hb_engine *e, int dir_fd, const hb_file_input *in, size_t n,
                            hb_file_result *out, const hb_files_options *opt);

/* files_job_start: the I/O threads and the collector. At least one I/O
 * thread and the collector must start; fewer I/O threads are fine. On
 * failure every thread started has been joined: files_job_destroy. */
hb_status files_job_start(hb_files_job *j);

/* files_job_cancel: asks j's threads to stop (unless it has finished). */
void files_job_cancel(hb_files_job *j);

/* files_job_join: joins j's threads once it has finished (once). */
void files_job_join(hb_files_job *j);

/* files_job_destroy: frees a job whose threads are all joined. */
void files_job_destroy(hb_files_job *j);

#endif /* HB_FILES_JOB_H */
