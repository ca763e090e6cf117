/*
 * files_internal.h - the insides of a files job (hb_submit_files and
 * friends in hashbatch.h), shared by the files/ modules.
 *
 * Design: each I/O thread (files_reader.c) takes the next input, opens it
 * (files_input.c) and either reads it whole (small files) into the open
 * batch, or streams it through the incremental SHA-1 of sha1_openssl.h in
 * chunk_bytes reads (files_stream.c: big files, and small ones that turn
 * out to grow). A small file of known size is read into a slice of the
 * batch's arena: arenas are recycled, so pages are touched once per job
 * rather than once per file; files whose size is unknown (size 0 in
 * statx: empty, /proc, pipes) get a growing buffer of their own, read in
 * whole buffers (never a short odd read: /proc/self/pagemap takes only
 * multiples of 8). A full batch is closed and handed to the engine
 * (hb_submit) once its last slice is filled (files_batches.c); one
 * collector thread (files_collector.c) waits for batches in submission
 * order, writes their results (files_results.c) and gives the memory back.
 * Memory: arenas and own buffers are counted against memory_max before
 * they are used (a reader that would pass the cap frees idle arenas,
 * closes the open batch, then waits for the collector); only growth of an
 * unknown-size buffer is taken without waiting. Condition variables are
 * signalled only when a thread waits on them: one futex call per file
 * adds up over 30,000 files. files_job.c starts and ends the threads;
 * files_api.c has the public calls.
 *
 * Big files are streamed side by side in each reader's lanes
 * (files_lanes.c), and shared among the readers once the inputs run out
 * (files_share.c).
 *
 * Calls go downward: api -> job -> reader, collector -> lanes -> share ->
 * lane, stream, batches -> results -> input.
 *
 * Owns: the job's layout and the internal calls between its modules.
 * Must not: be included outside host/src/files.
 */
#ifndef HB_FILES_INTERNAL_H
#define HB_FILES_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "files/files_input.h"
#include "hashbatch.h"
#include "mb/mb_pad.h"
#include "mb/mb_streams.h"

#define FILES_MIB ((size_t)1 << 20)
#define FILES_BATCH_MAX 4096
#define FILES_UNKNOWN_SIZE_FIRST ((size_t)4 << 10)

/* One engine submission: small files read whole, most of them into
 * slices of one arena (a recycled buffer, so pages are touched once per
 * job, not once per file), the others (size unknown until read) into
 * buffers of their own. */
typedef struct files_batch {
    struct files_batch *next;
    size_t count;
    size_t reserved;      /* budget bytes its own buffers hold */
    unsigned char *arena; /* NULL until a slice is asked for */
    size_t arena_used;
    unsigned writers; /* readers still filling their slices */
    int closed;       /* no more files join; queued once writers is 0 */
    size_t index[FILES_BATCH_MAX];
    void *buf[FILES_BATCH_MAX];          /* a buffer of its own, or NULL */
    unsigned char skip[FILES_BATCH_MAX]; /* slice given up: no result here */
    hb_msg msg[FILES_BATCH_MAX];
    hb_digest digest[FILES_BATCH_MAX];
    hb_job *job;
    hb_status submit_status;
} files_batch;

struct hb_files_job {
    hb_engine *engine;
    const hb_file_input *in;
    size_t n;
    hb_file_result *out;
    hb_files_options opt;
    int dir_fd; /* paths opened beneath it (hb_submit_files_at), or -1 */

    pthread_mutex_t lock; /* everything below but bytes_read */
    pthread_cond_t space; /* memory or an arena freed; an open batch to send */
    pthread_cond_t work;  /* a batch queued, or the readers are done */
    pthread_cond_t done;  /* the job finished */
    unsigned space_waiters;
    int collector_waiting;
    pthread_mutex_t callback_lock;
    size_t next;
    atomic_int all_taken; /* next reached n: every input is some thread's */
    size_t in_memory;
    files_batch *open;
    files_batch *queue_head, *queue_tail;
    size_t arena_bytes;          /* size of every arena */
    unsigned char **free_arenas; /* arenas back from the engine */
    size_t nfree, free_cap;
    unsigned io_running;
    atomic_int cancelled;
    int finished;
    int joined;
    hb_files_stats stats;
    atomic_uint_fast64_t bytes_read;

    pthread_t *threads;
    unsigned nthreads;
    /* the I/O threads' state, kept until the job is destroyed, so that
     * they can share big files (files_share.c) */
    pthread_mutex_t share_lock; /* every files_share_point below */
    pthread_cond_t share_cond;  /* a file offered to helpers; an owner left */
    struct files_io_thread **io;
    unsigned nio;
    atomic_uint_fast64_t read_ns, read_bytes; /* the sets' reads so far: what reading costs */
    pthread_t collector;
    int collector_started;
};

/* A big file an I/O thread streams through the CPU's lanes. */
typedef struct {
    size_t index;        /* the job's input index */
    hb_open_file f;      /* open until the file is finished */
    hb_mb_stream stream; /* the lanes' SHA-1 so far */
    unsigned char *buf;  /* this round's piece (in the set's area) */
    size_t len, rest;    /* bytes in it; of those, after its whole blocks */
    int ended;           /* the file's end was read */
    hb_status st;        /* HB_OK, or why it stops (HB_ERR_IO, HB_ERR_CANCELLED) */
    int err;             /* errno for HB_ERR_IO */
} files_lane;

/* An I/O thread's big files in lanes (files_lanes.c). */
typedef struct {
    hb_cpu_impl impl;
    unsigned capacity;   /* files at once: the impl's lanes; 0: one at a time */
    unsigned n;          /* files in the set */
    size_t piece_bytes;  /* read per file and round: a multiple of 64 */
    unsigned char *area; /* capacity * piece_bytes */
    files_lane lane[HB_MB_LANES_MAX];
} files_lanes;

/* Where an I/O thread's set meets the other I/O threads (files_share.c),
 * under the job's share_lock. A file moves from set to set, or to a
 * helper, only between its owner's rounds, when its lane holds no bytes. */
typedef struct {
    files_lane incoming[HB_MB_LANES_MAX]; /* handed to this set: join its next round */
    unsigned n_incoming;
    files_lane offered[HB_MB_LANES_MAX]; /* set aside for waiting helpers */
    unsigned n_offered;
    unsigned in_set;                               /* files in its lanes, as of its last round */
    unsigned out;                                  /* files its helpers hold now */
    unsigned helpers;                              /* threads helping this set */
    unsigned waiting;                              /* of those, waiting for a file */
    int inputs_done;                               /* its thread found no input left: takes no more,
                                                      so other sets may merge into it */
    int gone;                                      /* its thread left: takes nothing back */
    atomic_uint rounds;                            /* rounds started (helpers spin on it) */
    atomic_uint_fast64_t round_start_ns, round_ns; /* the round now; the last one's length */
} files_share_point;

/* Per-thread state of an I/O thread (the job frees it). */
typedef struct files_io_thread {
    hb_files_job *job;
    unsigned char *chunk; /* chunk_bytes, for streaming */
    files_lanes lanes;
    files_share_point share;
} files_io_thread;

/* ---- the threads (files_reader.c, files_collector.c) --------------------- */

/* files_io_main: an I/O thread (arg: its files_io_thread, which the job
 * frees). */
void *files_io_main(void *arg);

/* files_collector_main: the collector (arg: the job); sets finished. */
void *files_collector_main(void *arg);

/* ---- streaming (files_stream.c) ------------------------------------------ */

/* files_stream_from: file i, too big to batch, hashed on this thread;
 * prefix holds the len bytes already read, extra (may be NULL) the
 * extra_len read after them. Finishes file i. */
void files_stream_from(files_io_thread *t, size_t i, const hb_open_file *f, const void *prefix,
                       size_t len, const void *extra, size_t extra_len);

/* ---- one big file in pieces (files_lane.c) ------------------------------ */

/* files_lane_read_piece: reads l's next piece into buf, up to piece bytes
 * (a multiple of 64): until it is full, the file ends, or an error. */
void files_lane_read_piece(hb_files_job *j, files_lane *l, unsigned char *buf, size_t piece);

/* files_lane_finish: l, read to its end (or failed): last bytes, padding,
 * the change check and its result; closes it. */
void files_lane_finish(hb_files_job *j, files_lane *l);

/* ---- big files in lanes (files_lanes.c) ---------------------------------- */

/* files_lanes_init: t's set, for the CPU implementation impl (none, so
 * files stream one at a time, for HB_CPU_IMPL_SHA_NI or without memory);
 * files_lanes_free gives its memory back. */
void files_lanes_init(files_io_thread *t, hb_cpu_impl impl);
void files_lanes_free(files_io_thread *t);

/* files_lanes_room: 1 when t may take another input (its set is not full,
 * or it has none). */
int files_lanes_room(const files_io_thread *t);

/* files_lanes_take: big file i (open as *f, whose descriptor the set now
 * owns) joins t's set; returns 0 when t has no set (stream it instead). */
int files_lanes_take(files_io_thread *t, size_t i, const hb_open_file *f);

/* files_lanes_round: the next piece of every file in t's set read and
 * hashed; the files that ended (or failed) are finished and leave. */
void files_lanes_round(files_io_thread *t);

/* ---- big files shared among the I/O threads (files_share.c) -------------- */

/* files_share_merge: t found no input left. Hands t's set to another
 * thread's set where the files fit and the measured costs (of the lanes,
 * of OpenSSL, and of reading, once a round has measured it) say one set
 * with t helping beats the sets apart; t then helps. */
void files_share_merge(files_io_thread *t);

/* files_share_note_reads: a round read bytes in ns (the cost of reading,
 * which merging sets weighs). */
void files_share_note_reads(hb_files_job *j, uint64_t ns, uint64_t bytes);

/* files_share_round_start: before t's round: files handed to t join its
 * set, and a file is set aside for each waiting helper.
 * files_share_round_end: the round took ns. */
void files_share_round_start(files_io_thread *t);
void files_share_round_end(files_io_thread *t, uint64_t ns);

/* files_share_owner_busy: 1 while t's set has files to run in rounds
 * (files set aside but not taken come back); 0 once it has none, and t
 * has left it: its helpers finish what they hold. */
int files_share_owner_busy(files_io_thread *t);

/* files_share_help: t, with no input and no set, helps another thread's
 * set until that one has no file to give. Returns 0 when there was no
 * set to help. */
int files_share_help(files_io_thread *t);

/* files_share_wake: wakes every helper (the job was cancelled). */
void files_share_wake(hb_files_job *j);

/* ---- memory and batches (files_batches.c) -------------------------------- */

/* files_take_memory_locked: counts n more budget bytes held (lock held). */
void files_take_memory_locked(hb_files_job *j, size_t n);

/* files_reserve: waits until n more bytes fit under memory_max (or
 * nothing is held, or the job is cancelled) and counts them. */
void files_reserve(hb_files_job *j, size_t n);

/* files_release: gives n bytes of budget back. */
void files_release(hb_files_job *j, size_t n);

/* files_recycle_arena_locked: an arena back to the free list (or freed). */
void files_recycle_arena_locked(hb_files_job *j, unsigned char *arena);

/* files_submit_locked: closes the open batch; it goes to the engine as
 * soon as its last slice is filled. */
void files_submit_locked(hb_files_job *j);

/* files_wake_collector_locked: the collector looks at the queue again. */
void files_wake_collector_locked(hb_files_job *j);

/* files_add_to_batch: queues file i's bytes (buf owns reserved budget
 * bytes). Returns 0, or ENOMEM when no batch could be made (buf is then
 * kept). */
int files_add_to_batch(hb_files_job *j, size_t i, void *buf, size_t len, size_t reserved);

/* files_take_slot: need bytes of the open batch's arena for file i (see
 * files_batches.c). Returns the batch with *slot counted as a writer, or
 * NULL (cancelled, or out of memory: *st says which). */
files_batch *files_take_slot(hb_files_job *j, size_t i, size_t need, size_t *slot, hb_status *st);

/* files_end_slot: a writer is done with its slice: len bytes, or (ok 0)
 * given up, its file's result delivered elsewhere. */
void files_end_slot(hb_files_job *j, files_batch *b, size_t slot, size_t len, int ok);

/* ---- results (files_results.c) ------------------------------------------- */

/* files_finish: stores r as out[i], tells the callback, counts it. */
void files_finish(hb_files_job *j, size_t i, const hb_file_result *r);

/* files_fail: finishes file i with status st and errno err. */
void files_fail(hb_files_job *j, size_t i, hb_status st, int err);

#endif /* HB_FILES_INTERNAL_H */
