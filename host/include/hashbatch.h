/*
 * hashbatch.h - the one public header of libhashbatch.
 *
 * hashbatch computes SHA-1 over many messages at once, on OpenCL devices
 * (GPUs, or the CPU through pocl) or on a pool of CPU threads running
 * OpenSSL's SHA-1 (SHA-NI where the CPU has it). Results can be checked
 * against OpenSSL (off, a sample, or every message); a device fault moves
 * the work to the CPU pool.
 *
 * Conventions, for every function below:
 *  - Every fallible call returns an hb_status; results go to out-parameters.
 *  - The library never prints, never exits and never aborts on bad input.
 *  - Detail about the most recent failure (an OpenCL error code, a kernel
 *    build log) is kept as text: hb_engine_last_error(e) for calls made on
 *    an engine, hb_engine_last_error(NULL) for the calling thread's failures
 *    that had no engine to hold them (hb_engine_open, NULL-engine calls).
 */
#ifndef HASHBATCH_H
#define HASHBATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* HB_API marks the functions libhashbatch exports. The library is built with
 * hidden visibility, so these are its only dynamic symbols (CI compares the
 * shared library's symbol table with this header: tests/check_symbols.sh). */
#if defined(__GNUC__) || defined(__clang__)
#define HB_API __attribute__((visibility("default")))
#else
#define HB_API
#endif

/* ---- version -------------------------------------------------------- */

#define HB_VERSION_MAJOR 0
#define HB_VERSION_MINOR 1
#define HB_VERSION_PATCH 0
#define HB_VERSION_NUMBER (HB_VERSION_MAJOR * 10000 + HB_VERSION_MINOR * 100 + HB_VERSION_PATCH)
#define HB_VERSION_STRING "0.1.0"

/* hb_version_number: HB_VERSION_NUMBER of the library actually linked. */
HB_API unsigned hb_version_number(void);

/* hb_version_string: "MAJOR.MINOR.PATCH" of the library actually linked.
 * The string is static; never NULL. */
HB_API const char *hb_version_string(void);

/* ---- status --------------------------------------------------------- */

/* One list, values pinned: a value never changes meaning once released. */
#define HB_STATUS_LIST(X)                                                                          \
    X(HB_OK, 0, "success")                                                                         \
    X(HB_ERR_NULL_ARGUMENT, 1, "a required pointer argument is NULL")                              \
    X(HB_ERR_INVALID_ARGUMENT, 2, "an argument has an invalid value")                              \
    X(HB_ERR_NO_MEMORY, 3, "out of memory")                                                        \
    X(HB_ERR_NO_OPENCL, 4, "no OpenCL platform or device is available")                            \
    X(HB_ERR_BAD_DEVICE_SPEC, 5, "the device spec matches no device")                              \
    X(HB_ERR_BUILD_FAILED, 6, "the OpenCL kernel failed to build")                                 \
    X(HB_ERR_DEVICE, 7, "an OpenCL call failed on the device")                                     \
    X(HB_ERR_VERIFY_FAILED, 8, "a digest failed verification")                                     \
    X(HB_ERR_TIMEOUT, 9, "the wait timed out")                                                     \
    X(HB_ERR_CANCELLED, 10, "the job was cancelled")                                               \
    X(HB_ERR_CLOSED, 11, "the engine is closed")                                                   \
    X(HB_ERR_IO, 12, "an input/output error")                                                      \
    X(HB_ERR_THREAD, 13, "a thread could not be started")                                          \
    X(HB_ERR_INTERNAL, 14, "an internal error (a bug in hashbatch)")                               \
    X(HB_ERR_FILE_CHANGED, 15, "the file changed while it was read")                               \
    X(HB_ERR_NOT_REGULAR, 16, "not a regular file (a FIFO, socket or device): skipped")

typedef enum {
#define HB_STATUS_ENUM_(name, value, text) name = value,
    HB_STATUS_LIST(HB_STATUS_ENUM_)
#undef HB_STATUS_ENUM_
} hb_status;

/* hb_status_str: a short, static English description of s ("success",
 * "the device spec matches no device", ...). Unknown values give
 * "unknown status". Never NULL. Thread-safe. */
HB_API const char *hb_status_str(hb_status s);

/* hb_status_name: the enumerator's name as text ("HB_ERR_DEVICE").
 * Unknown values give "HB_UNKNOWN". Never NULL. Thread-safe. */
HB_API const char *hb_status_name(hb_status s);

/* ---- types ---------------------------------------------------------- */

typedef struct hb_engine hb_engine; /* opaque; one per hashing service */
typedef struct hb_job hb_job;       /* opaque; one submitted batch */

/* One message: len bytes at data. data may be NULL only when len is 0. */
typedef struct {
    const void *data;
    size_t len;
} hb_msg;

typedef uint8_t hb_digest[20];

typedef enum {
    HB_BACKEND_AUTO = 0,   /* every usable backend, under the scheduler */
    HB_BACKEND_OPENCL = 1, /* OpenCL devices only */
    HB_BACKEND_CPU = 2     /* OpenSSL on a pool of threads */
} hb_backend_kind;

typedef enum {
    HB_VERIFY_SAMPLE = 0, /* recompute a random sample with OpenSSL */
    HB_VERIFY_OFF = 1,    /* trust the device */
    HB_VERIFY_FULL = 2    /* recompute every message with OpenSSL */
} hb_verify_mode;

/* Engine configuration. Always start from hb_config_init(); fields added
 * in later versions get defaults there. */
typedef struct {
    hb_backend_kind backend;
    /* Which OpenCL devices: "all", "gpu", "cpu", "P:D" (platform and device
     * indices as `hashbatch devices` lists them) or a case-insensitive
     * substring of the device or platform name. NULL (or "") means the
     * default: the first GPU, else the first OpenCL CPU device. Every
     * backend checks a spec: one that is malformed (a colon that is not
     * P:D, a control character, only blanks) or matches no device (also
     * when there is none; "all" excepted) fails hb_engine_open with
     * HB_ERR_BAD_DEVICE_SPEC. With backend cpu a spec that matches a
     * device is accepted and ignored (the pool uses no device). The string
     * is copied by hb_engine_open. */
    const char *device;
    hb_verify_mode verify;
    unsigned cpu_threads;      /* CPU pool threads, at most HB_CPU_THREADS_MAX;
                                  0: one per online core */
    size_t staging_bytes;      /* bytes of message data per device launch;
                                  0: default (16 MiB) */
    unsigned ring_depth;       /* launches in flight per OpenCL device, each
                                  with its own staging buffers; 0: default
                                  (3) */
    unsigned sample_per_mille; /* with HB_VERIFY_SAMPLE, on OpenCL devices:
                                  whole messages re-hashed per thousand,
                                  at random, beside the checks by
                                  structure every launch gets (every lane
                                  position and kind of ending: README);
                                  0 (default): none beyond those. The
                                  CPU's lanes are checked by structure
                                  only */
    int cpu_fallback;          /* 1 (default): a device error finishes the
                                  batch on the CPU pool; 0: return
                                  HB_ERR_DEVICE instead */
    int use_environment;       /* 1 (default): HASHBATCH_BACKEND,
                                  HASHBATCH_DEVICE, HASHBATCH_VERIFY,
                                  HASHBATCH_CPU_IMPL, HASHBATCH_PRIORITY
                                  and HASHBATCH_DEVICE_CORES override the
                                  fields */
    uint64_t seed;             /* seed for verification sampling; 0: random */
    const char *cpu_impl;      /* how the CPU pool hashes batches: "avx512"
                                  (16 lanes), "avx2" (8), "portable" (4)
                                  multi-buffer lanes, or "sha-ni" (OpenSSL,
                                  one message at a time); NULL or "": the
                                  fastest, measured when first needed. One
                                  this CPU cannot run fails hb_engine_open
                                  with HB_ERR_INVALID_ARGUMENT */
    int calibrate;             /* 0 (default): the scheduler's cost models
                                  come from the model cache when it holds
                                  fresh ones for this machine, else from a
                                  calibration at open (tens of ms, then
                                  cached); 1: calibrate at open whatever
                                  the cache holds, and store the result.
                                  HASHBATCH_MODEL_CACHE=PATH picks the cache
                                  file, =off uses none (default:
                                  $XDG_CACHE_HOME/hashbatch/models.txt) */
    /* The work the caller expects to give this engine in all, when it
     * knows (0 and 0: not known, the default). With backend auto, an
     * OpenCL device is then opened only if it can pay for itself: unless
     * opening it took longer, when last measured (kept in the model
     * cache), than the CPU pool's model predicts for all of this work; and,
     * for devices on the pool's own cores (pocl's CPU device), unless their
     * cheapest cached model, opening included, finishes the work after the
     * pool alone. A device never measured is opened, and the time that
     * took kept. */
    uint64_t expected_messages;
    uint64_t expected_bytes;
    /* 1: the engine's own threads (the CPU pool, device feeders, a files
     * job's readers) run at the lowest CPU priority the system offers
     * (Linux: SCHED_IDLE), so every other runnable thread, of this process
     * or another, gets a core first: for hashing in the background of an
     * application (a Ruby process whose threads must keep running while a
     * batch is hashed). 0 (default): normal priority. A system without
     * SCHED_IDLE runs them at nice 19. HASHBATCH_PRIORITY=idle|normal
     * overrides it. An OpenCL runtime's own threads (pocl's) are not ours
     * and keep their priority. */
    int idle_priority;
    /* Cores of their own for the OpenCL runtime, as a Linux CPU list
     * ("1", "2-3,6"): its threads (pocl's CPU device computes on them) run
     * there and the CPU pool on the process's other cores, one thread each
     * unless cpu_threads says otherwise (a files job's readers there
     * too), so a CPU device and the pool no
     * longer share cores and the scheduler gives both work at once. The
     * runtime's threads take the cores of the thread that starts it,
     * which is this engine's open when it is the first in the process to
     * list OpenCL devices; when another start came first, the pool is
     * still pinned but CPU devices are scheduled as sharing its cores,
     * and hb_engine_describe says so. The caller of hb_sha1_batch then
     * leaves its job to the pool's threads instead of hashing part of it
     * on its own (a batch small enough to be hashed inline still is).
     * Linux only. NULL or "" (default): no pinning.
     * HASHBATCH_DEVICE_CORES overrides it. */
    const char *device_cores;
} hb_config;

/* Which compute an engine uses, from backend and device:
 *  - backend cpu: the CPU pool only.
 *  - backend opencl: the OpenCL devices the spec selects (default: the
 *    first GPU, else the first OpenCL CPU device); the pool only verifies
 *    and takes over work a faulty device drops.
 *  - backend auto with the default device spec (or "all"): every usable
 *    OpenCL device AND the pool, under the scheduler: each backend has a
 *    cost model (calibrated at open, refined from every batch it
 *    completes) and each piece of queued work goes where it is predicted
 *    to finish first; backends that share the host's cores (the pool and
 *    pocl) do not run the same work at once, the cheaper one takes it.
 *    With any other spec, auto is opencl with that spec. The pool alone
 *    when no OpenCL device can be used (hb_engine_describe says why).
 */

/* hb_config_init: fills *cfg with the defaults (auto backend, default
 * device, sampled verification, one CPU thread per core, fallback on,
 * environment honoured). cfg NULL: does nothing. */
HB_API void hb_config_init(hb_config *cfg);

/* hb_backend_parse: "auto", "opencl" or "cpu" to its kind.
 * Returns HB_OK, HB_ERR_NULL_ARGUMENT or HB_ERR_INVALID_ARGUMENT. */
HB_API hb_status hb_backend_parse(const char *text, hb_backend_kind *out);

/* hb_verify_parse: "off", "sample" or "full" to its mode.
 * Returns HB_OK, HB_ERR_NULL_ARGUMENT or HB_ERR_INVALID_ARGUMENT. */
HB_API hb_status hb_verify_parse(const char *text, hb_verify_mode *out);

/* hb_backend_name / hb_verify_name: the inverse; static strings. */
HB_API const char *hb_backend_name(hb_backend_kind kind);
HB_API const char *hb_verify_name(hb_verify_mode mode);

/* ---- engine --------------------------------------------------------- */

/* hb_engine_open: creates an engine. cfg NULL means hb_config_init's
 * defaults. With the OpenCL backend the kernel is built (and run once, as
 * a warm-up) before this returns, so no later call compiles.
 * On success *out owns the engine (close it with hb_engine_close); on
 * failure *out is NULL and hb_engine_last_error(NULL) tells why.
 * Returns HB_OK; HB_ERR_NULL_ARGUMENT (out NULL); HB_ERR_INVALID_ARGUMENT
 * (an unknown backend or verify value, in cfg or the environment);
 * HB_ERR_NO_OPENCL (backend opencl and no OpenCL device at all);
 * HB_ERR_BAD_DEVICE_SPEC (the spec, from cfg or HASHBATCH_DEVICE, is
 * malformed or selects no device, whatever the backend; the last error
 * names it); HB_ERR_BUILD_FAILED
 * (the build log is in the last error); HB_ERR_DEVICE; HB_ERR_NO_MEMORY;
 * HB_ERR_THREAD. Blocks while the kernel builds (up to seconds the first
 * time a device sees it; pocl caches the result). Thread-safe. */
HB_API hb_status hb_engine_open(hb_engine **out, const hb_config *cfg);

/* hb_engine_close: stops the engine and releases everything it holds.
 * Jobs still queued finish with HB_ERR_CLOSED, and work already handed to
 * a device or a CPU worker stops at its next chunk (a few MiB), its jobs
 * finishing with HB_ERR_CLOSED too; their waiters wake. Job handles stay
 * valid until hb_job_free. Never hangs on a healthy device. NULL is fine.
 * Calls racing the close are safe: a call on e that is already running
 * when close begins, or that starts while close runs, either completes
 * normally or returns HB_ERR_CLOSED (hb_engine_stats too;
 * hb_engine_last_error then gives the calling thread's text,
 * hb_engine_describe "(engine closed)", hb_engine_backend
 * HB_BACKEND_CPU), and close returns only after every such call has left
 * the engine. hb_job_wait, hb_job_cancel, hb_job_fd and hb_job_free on its
 * jobs may run at any time, during and after the close.
 * What remains undefined: any call on e after hb_engine_close(e) has
 * returned, including a second hb_engine_close(e): the memory is gone. A
 * program whose threads may still be about to call must order those calls
 * before close returns (e.g. stop and join them), as the library cannot
 * tell a late call from a pointer to freed memory. */
HB_API void hb_engine_close(hb_engine *e);

/* hb_sha1_batch: out[i] = SHA-1(m[i]) for i in [0, n), in input order;
 * hb_submit followed by hb_job_wait. n may be 0 (m and out may then be
 * NULL). Messages may be of any length, up to many GiB; memory used stays
 * bounded by the staging size. Blocks until every digest is written. The
 * caller keeps ownership of m, the message bytes and out, which must not
 * change during the call.
 * Returns HB_OK; HB_ERR_NULL_ARGUMENT (e, m or out NULL with n > 0, or a
 * message with NULL data and len > 0: the last error names its index);
 * HB_ERR_DEVICE (an OpenCL error, only with cpu_fallback 0);
 * HB_ERR_CLOSED (the engine was closed meanwhile); HB_ERR_NO_MEMORY.
 * On failure out's contents are unspecified.
 * Thread-safe: many threads may hash on one engine at once, and their
 * small batches are coalesced into shared device launches. */
HB_API hb_status hb_sha1_batch(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out);

/* ---- jobs: asynchronous batches -------------------------------------- */

/* hb_submit: queues out[i] = SHA-1(m[i]) for i in [0, n) and returns at
 * once with *job, which the caller owns and must free (hb_job_free).
 * m, the message bytes and out must stay valid and unchanged until the job
 * is finished: hb_job_wait returned something other than HB_ERR_TIMEOUT,
 * or hb_job_cancel returned. n may be 0 (the job is finished at once).
 * Returns HB_OK; HB_ERR_NULL_ARGUMENT (as hb_sha1_batch, or job NULL);
 * HB_ERR_CLOSED; HB_ERR_NO_MEMORY. Thread-safe. */
HB_API hb_status hb_submit(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out, hb_job **job);

/* hb_job_wait: waits up to timeout_ns nanoseconds (< 0: forever; 0: just
 * look) for j to finish. Returns HB_ERR_TIMEOUT if it has not, else the
 * job's outcome: HB_OK (every digest written), HB_ERR_CANCELLED,
 * HB_ERR_CLOSED (the engine closed first), HB_ERR_DEVICE (only with
 * cpu_fallback 0), HB_ERR_NULL_ARGUMENT (j NULL). Any number of threads
 * may wait on one job. Does not need the engine (it may be closed). */
HB_API hb_status hb_job_wait(hb_job *j, int64_t timeout_ns);

/* hb_job_cancel: stops j: messages not yet handed to a worker are
 * dropped, and work already on a device or a CPU worker stops at its next
 * chunk: a device launch (the ring holds a few), a few MiB hashed on a CPU
 * thread or verified, whatever the length of the messages. Blocks until
 * the engine no longer touches j's messages or output (milliseconds).
 * Afterwards hb_job_wait returns HB_ERR_CANCELLED, or HB_OK if j had
 * already finished. A batch shared with other jobs' messages (small jobs
 * coalesced into one launch, or long messages of several jobs side by side
 * in a device's lanes) stops only when all of its jobs are cancelled, so
 * there j waits for that batch. Returns HB_OK, or HB_ERR_NULL_ARGUMENT.
 * Thread-safe, also while its engine is being closed or after. */
HB_API hb_status hb_job_cancel(hb_job *j);

/* hb_job_fd: a file descriptor that becomes readable (POLLIN) when j
 * finishes, for event loops; it stays readable. Owned by j: do not close
 * it; it is closed by hb_job_free. Returns HB_OK, HB_ERR_NULL_ARGUMENT or
 * HB_ERR_IO (no descriptor could be made). Thread-safe. */
HB_API hb_status hb_job_fd(hb_job *j, int *fd);

/* hb_job_free: cancels j if it has not finished (as hb_job_cancel) and
 * releases it. NULL is fine. j must not be used afterwards, and no other
 * thread may still be waiting on it. Fine during or after its engine's
 * close. */
HB_API void hb_job_free(hb_job *j);

/* hb_engine_last_error: detail about the most recent failure on e (any
 * thread), or, with e NULL, the calling thread's most recent failure that
 * had no engine. "" when there was none. The text stays valid until the
 * next failing call on the same engine (or thread); never NULL. */
HB_API const char *hb_engine_last_error(const hb_engine *e);

/* hb_engine_describe: which backend and devices the engine uses, as one
 * line ("opencl: pocl cpu-znver4-AMD EPYC [0:0]", "cpu: OpenSSL, 2
 * threads, SHA-NI"). Static for the engine's life; never NULL. */
HB_API const char *hb_engine_describe(const hb_engine *e);

/* hb_engine_backend: the backend the engine actually uses (never AUTO). */
HB_API hb_backend_kind hb_engine_backend(const hb_engine *e);

#define HB_STATS_MAX_DEVICES 8

/* A backend's cost model for one class of work: a batch of n messages
 * holding `bytes` bytes is predicted to take
 * fixed_ns + n * ns_per_message + bytes * ns_per_byte of its time. */
typedef struct {
    double fixed_ns;
    double ns_per_message;
    double ns_per_byte;
} hb_cost_terms;

/* The classes of work a model distinguishes, by the mean message length
 * of a batch: short (under 1 KiB), mid (under 256 KiB), long. */
#define HB_COST_CLASSES 3

/* hb_cost_class_name: "short", "mid" or "long"; NULL past the last. */
HB_API const char *hb_cost_class_name(unsigned c);

/* What one worker of the engine did: an OpenCL device, or the CPU pool. */
typedef struct {
    char name[96]; /* "opencl 0:0 pthread-...", "cpu pool" */
    int is_cpu;
    uint64_t messages;                    /* messages it hashed */
    uint64_t bytes;                       /* message bytes it hashed */
    uint64_t batches;                     /* batches it took from the queue */
    uint64_t launches;                    /* kernel launches (devices) */
    uint64_t busy_ns;                     /* time spent working on batches */
    uint64_t errors;                      /* OpenCL errors */
    int quarantined;                      /* 1 once the device is no longer used */
    int shares_host_cores;                /* the pool, or an OpenCL CPU device (pocl) */
    int takes_jobs;                       /* the scheduler gives it queued work (else it
                                             only takes work a faulty device handed back) */
    uint64_t predicted_ns;                /* its model's predictions for the batches it
                                             completed, summed (made when each was taken) */
    uint64_t measured_ns;                 /* what those batches took: for a device, the
                                             time each added to its pipeline; for the pool,
                                             thread time (its threads run side by side) */
    hb_cost_terms model[HB_COST_CLASSES]; /* its cost model now */
} hb_device_stats;

typedef struct {
    uint64_t messages; /* messages completed */
    uint64_t bytes;    /* message bytes completed */
    uint64_t batches;  /* batches (device or pool) completed */
    uint64_t jobs_submitted;
    uint64_t jobs_completed;    /* finished with HB_OK */
    uint64_t jobs_cancelled;    /* finished by cancel or close */
    uint64_t device_launches;   /* kernel launches, all devices */
    uint64_t device_bytes;      /* message bytes whose digests came from OpenCL
                                   devices (not counting batches redone on
                                   the CPU after a mismatch or error) */
    uint64_t cpu_bytes;         /* message bytes hashed by the CPU pool */
    uint64_t verified;          /* checks made by verification: messages
                                   recomputed whole, or (sampled, on the
                                   CPU's lanes and the devices' launches)
                                   runs of blocks and tails */
    uint64_t verify_mismatches; /* verification mismatches detected */
    uint64_t fallbacks;         /* device batches redone on the CPU */
    uint64_t device_errors;     /* OpenCL errors seen */
    uint64_t queue_messages;    /* messages waiting, now */
    uint64_t queue_jobs;        /* jobs waiting, now */
    int quarantined;            /* devices quarantined */
    uint64_t calibration_ns;    /* time hb_engine_open spent measuring the
                                   cost models (0: they came from the cache) */
    int models_from_cache;      /* 1 when they came from the model cache */
    unsigned ndevices;          /* entries used in device[] */
    hb_device_stats device[HB_STATS_MAX_DEVICES];
    uint64_t verified_bytes; /* message bytes verification hashed again:
                                against bytes, the share of the work
                                re-done, which is the chance that a
                                transient fault in one place is caught */
    uint64_t cpu_moved_bytes; /* bytes that a thread hashed with SHA-NI
                                 mid-message while another ran the rest
                                 through its lanes (few long messages or
                                 big files shared among the cores): of
                                 cpu_bytes for messages a pool thread
                                 took, of a files job's streamed_bytes for
                                 files an idle I/O thread took */
} hb_stats;

/* hb_engine_stats: a snapshot of e's counters. Thread-safe.
 * Returns HB_OK, HB_ERR_NULL_ARGUMENT, or HB_ERR_CLOSED while e closes. */
HB_API hb_status hb_engine_stats(const hb_engine *e, hb_stats *out);

/* ---- devices -------------------------------------------------------- */

typedef enum {
    HB_DEVICE_GPU = 0,
    HB_DEVICE_CPU = 1,
    HB_DEVICE_ACCELERATOR = 2,
    HB_DEVICE_OTHER = 3
} hb_device_type;

typedef struct {
    unsigned platform_index; /* as in the "P:D" device spec */
    unsigned device_index;
    char platform_name[128];
    char name[128];
    char vendor[128];
    char version[128]; /* OpenCL version string */
    char driver_version[64];
    hb_device_type type;
    uint32_t compute_units;
    uint32_t max_clock_mhz;
    uint64_t global_mem_bytes;
    uint64_t max_alloc_bytes;
    int available; /* CL_DEVICE_AVAILABLE */
    int auto_pick; /* 1 for the device `auto` would use */
} hb_device_info;

/* hb_devices_list: every OpenCL device of every platform. Writes up to cap
 * entries to out (out may be NULL when cap is 0) and the total number in
 * *count. No OpenCL platform at all is not an error: *count is 0.
 * Returns HB_OK, HB_ERR_NULL_ARGUMENT (count NULL, or out NULL with
 * cap > 0), or HB_ERR_NO_OPENCL with *count 0 from a library built without
 * OpenCL (CMake -DHB_OPENCL=OFF, or the gem built --without-opencl or with
 * no OpenCL headers; hb_engine_last_error says so). Thread-safe; does not
 * build anything. */
HB_API hb_status hb_devices_list(hb_device_info *out, size_t cap, size_t *count);

/* hb_device_type_name: "gpu", "cpu", "accelerator" or "other". */
HB_API const char *hb_device_type_name(hb_device_type t);

/* hb_cpu_has_sha_ni: 1 if this CPU has the SHA extensions OpenSSL uses. */
HB_API int hb_cpu_has_sha_ni(void);

/* hb_cpu_impl_name: the name of CPU implementation k (0, 1, ...) as
 * hb_config.cpu_impl and HASHBATCH_CPU_IMPL spell it ("sha-ni",
 * "portable", "avx2", "avx512"), or NULL past the last. */
HB_API const char *hb_cpu_impl_name(unsigned k);

/* hb_cpu_impl_runs: 1 if the CPU implementation called name exists and
 * this CPU runs it, else 0. */
HB_API int hb_cpu_impl_runs(const char *name);

/* hb_cpu_impl_default_name: the implementation an engine's pool uses when
 * none is asked for: the multi-buffer one measured fastest here, if it
 * beats OpenSSL one message at a time, else "sha-ni". Measured once per
 * machine (well under a millisecond) and kept in cpu_impl.txt beside
 * the model cache ($XDG_CACHE_HOME/hashbatch/; HASHBATCH_MODEL_CACHE=PATH
 * puts it in PATH's folder, =off keeps nothing), so every process agrees
 * where two cost about the same; delete that file to measure again. */
HB_API const char *hb_cpu_impl_default_name(void);

/* The most CPU pool threads an engine takes (hb_config.cpu_threads). */
#define HB_CPU_THREADS_MAX 1024u

/* hb_cpu_threads_default: the CPU pool size a 0 in cpu_threads means. */
HB_API unsigned hb_cpu_threads_default(void);

/* ---- files: hashing files by path or descriptor ----------------------- */

/*
 * A files job hashes many files, whole, and gives one result per file.
 * I/O threads (owned by the job) read the files while the engine hashes:
 *  - small files (up to small_max bytes) are read whole into memory and
 *    handed to the engine in batches (hb_submit), so many of them share
 *    device launches or CPU pool batches;
 *  - bigger files are streamed in chunk_bytes read() calls on the I/O
 *    threads themselves, each thread's big files side by side through
 *    the CPU's multi-buffer lanes (or OpenSSL, where the measured costs
 *    say so); once every input is taken, an idle I/O thread takes a file
 *    between rounds and hashes part of it by OpenSSL (SHA-NI), so that a
 *    few big files keep every core busy (hb_stats.cpu_moved_bytes counts
 *    those bytes). One SHA-1 stream is sequential, so a device gains
 *    nothing on one big file.
 *    Nothing is memory-mapped: a file truncated while it is read gives
 *    HB_ERR_FILE_CHANGED, never a SIGBUS.
 * File bytes held in memory at once stay under memory_max (plus at most
 * small_max per I/O thread for files whose size is not known in advance).
 * Each file gets a statx snapshot right after it is opened and another after
 * its last read; a difference in size, mtime or ctime (in nanoseconds),
 * inode, device, or the change cookie where the headers define one, gives
 * HB_ERR_FILE_CHANGED. Before the first read an lseek(SEEK_DATA) waits for a
 * write() already under way on filesystems that serve it under the inode
 * lock (ext4, btrfs, tmpfs). README.md says what this cannot detect. The
 * byte count is not trusted otherwise: files such as those in /proc that
 * report a size of 0 (or a wrong one) and still have content are read to
 * their end, in whole buffers (never odd short reads, which some refuse).
 * Paths naming FIFOs, sockets or devices are opened without blocking and
 * skipped (HB_ERR_NOT_REGULAR) unless read_special is set.
 */

/* One input: a path, or (path NULL) an open descriptor, which is read
 * from its current offset to its end and not closed. One descriptor must
 * not appear twice in one job. */
typedef struct {
    const char *path;
    int fd;
} hb_file_input;

/* The outcome for one file. */
typedef struct {
    hb_digest digest; /* SHA-1 of the content; valid when status is HB_OK */
    hb_status status; /* HB_OK; HB_ERR_IO (err says why: ENOENT, EACCES,
                         EISDIR, EIO, ELOOP ...); HB_ERR_FILE_CHANGED;
                         HB_ERR_NOT_REGULAR; HB_ERR_NO_MEMORY;
                         HB_ERR_CANCELLED (the job was cancelled first);
                         or the engine's status for its batch
                         (HB_ERR_CLOSED, HB_ERR_DEVICE) */
    int err;          /* errno for HB_ERR_IO (and HB_ERR_NO_MEMORY), else 0 */
    uint64_t size;    /* bytes read and hashed (when status is HB_OK) */
} hb_file_result;

/* hb_files_callback: called once per file as soon as its result is
 * final (r is also stored in out[index]). Calls are never concurrent, but
 * come from the job's threads in completion order, not index order. Must
 * not call hb_files_job_wait/cancel/free on its own job. */
typedef void (*hb_files_callback)(void *ctx, size_t index, const hb_file_result *r);

/* Options of a files job. Always start from hb_files_options_init(). */
typedef struct {
    unsigned io_threads;       /* reader threads; 0: default (online cores, at
                                  least 2, at most 16) */
    size_t small_max;          /* files up to this size are batched through the
                                  engine, bigger ones streamed; 0: 1 MiB */
    size_t memory_max;         /* cap on file bytes held in memory; 0: 64 MiB */
    size_t batch_bytes;        /* bytes per engine submission; 0: 8 MiB */
    size_t chunk_bytes;        /* read() size when streaming; 0: 1 MiB */
    int read_special;          /* 1: FIFOs, sockets and devices named by a path
                                  are read to their end (which may block); 0
                                  (default): skipped with HB_ERR_NOT_REGULAR */
    hb_files_callback on_file; /* NULL: none */
    void *ctx;                 /* passed to on_file */
} hb_files_options;

/* Counters of a files job, for progress and reports. */
typedef struct {
    uint64_t files;         /* files in the job */
    uint64_t files_done;    /* files with a final result (any status) */
    uint64_t files_failed;  /* of those, status other than HB_OK */
    uint64_t bytes_read;    /* bytes read so far, all files */
    uint64_t batched_files; /* files hashed by the engine */
    uint64_t batched_bytes;
    uint64_t batches;        /* engine submissions */
    uint64_t streamed_files; /* files streamed on the I/O threads */
    uint64_t streamed_bytes;
    uint64_t peak_memory; /* most file bytes held in memory at once */
} hb_files_stats;

typedef struct hb_files_job hb_files_job; /* opaque */

/* hb_files_options_init: fills *o with the defaults. NULL: does nothing. */
HB_API void hb_files_options_init(hb_files_options *o);

/* hb_submit_files: starts hashing the n inputs and returns at once with
 * *job (owned by the caller; hb_files_job_free). Result i goes to out[i].
 * in (with the path strings), out and e must stay valid until the job
 * has finished (hb_files_job_wait returned something other than
 * HB_ERR_TIMEOUT); e must not be closed before that. opt NULL: defaults;
 * it is copied. n may be 0.
 * Returns HB_OK; HB_ERR_NULL_ARGUMENT (e, job NULL, or in/out NULL with
 * n > 0); HB_ERR_INVALID_ARGUMENT (an input with neither path nor a
 * descriptor >= 0); HB_ERR_NO_MEMORY; HB_ERR_THREAD. Problems with a
 * file are never a failure of this call: they are in its result.
 * Thread-safe; many jobs may run on one engine at once. */
HB_API hb_status hb_submit_files(hb_engine *e, const hb_file_input *in, size_t n,
                                 hb_file_result *out, const hb_files_options *opt,
                                 hb_files_job **job);

/* hb_submit_files_at: hb_submit_files, with every input that has a path
 * opened beneath the folder dir_fd (an open descriptor; O_PATH will do):
 * the path is relative to it and resolved by hb_open_beneath with
 * HB_RESOLVE_BENEATH, so no symbolic link is followed anywhere in it (the
 * last name included) and ".." cannot climb above dir_fd. An input whose
 * path leads out gives HB_ERR_IO with err EXDEV; one that meets a
 * symbolic link, ELOOP (a folder swapped for a link since the caller
 * listed the tree is not followed). For readers of trees that others can
 * write to: what is read is what is beneath the folder, resolved once.
 * dir_fd must stay open until the job has finished. Inputs given as
 * descriptors are read as hb_submit_files reads them. Returns as
 * hb_submit_files; HB_ERR_INVALID_ARGUMENT also when dir_fd < 0. */
HB_API hb_status hb_submit_files_at(hb_engine *e, int dir_fd, const hb_file_input *in, size_t n,
                                    hb_file_result *out, const hb_files_options *opt,
                                    hb_files_job **job);

/* hb_files_job_wait: waits up to timeout_ns (< 0: forever; 0: just look)
 * for every file of j to have its result. Returns HB_ERR_TIMEOUT if not
 * yet; else HB_OK (every file has its result, each with its own status),
 * or HB_ERR_CANCELLED (hb_files_job_cancel was called; files not reached
 * have HB_ERR_CANCELLED). HB_ERR_NULL_ARGUMENT when j is NULL.
 * Only one thread may wait on a job at a time. */
HB_API hb_status hb_files_job_wait(hb_files_job *j, int64_t timeout_ns);

/* hb_files_job_cancel: asks j to stop: files not yet started finish with
 * HB_ERR_CANCELLED, streams stop at their next chunk, engine batches are
 * cancelled. Returns at once (wait for the end with hb_files_job_wait).
 * Returns HB_OK or HB_ERR_NULL_ARGUMENT. Thread-safe, also from on_file's
 * thread of another job, or a signal-watching thread. */
HB_API hb_status hb_files_job_cancel(hb_files_job *j);

/* hb_files_job_stats: a snapshot of j's counters (see hb_files_stats).
 * Returns HB_OK or HB_ERR_NULL_ARGUMENT. Thread-safe. */
HB_API hb_status hb_files_job_stats(const hb_files_job *j, hb_files_stats *out);

/* hb_files_job_free: cancels j if it has not finished, waits for its
 * threads, and releases it. NULL is fine. */
HB_API void hb_files_job_free(hb_files_job *j);

/* hb_hash_files: hb_submit_files over n paths, then waits. Blocks until
 * every file has its result in out[i]. Returns as hb_submit_files, or
 * HB_OK once done: per-file problems are in out[i].status. */
HB_API hb_status hb_hash_files(hb_engine *e, const char *const *paths, size_t n,
                               hb_file_result *out, const hb_files_options *opt);

/* ---- files beneath a folder ---------------------------------------- */

/* hb_open_beneath's resolve bit: ".." may not climb above dir_fd and an
 * absolute path is refused (EXDEV), as openat2's RESOLVE_BENEATH. */
#define HB_RESOLVE_BENEATH 1u

/* hb_open_beneath: opens path, relative to the folder dir_fd (a
 * descriptor, or AT_FDCWD), with open(2)'s flags (O_CLOEXEC added),
 * following no symbolic link in any component, the last one included:
 * one gives -1 with errno ELOOP (O_PATH | O_NOFOLLOW in flags opens a
 * last-name link itself, as openat2 does). resolve: 0, or
 * HB_RESOLVE_BENEATH. The kernel resolves the path in one openat2(2)
 * call (Linux 5.6+); where it has none, or a seccomp filter refuses it,
 * one component at a time with O_NOFOLLOW, and then beneath any ".."
 * is refused (EXDEV), even one that would stay inside: a folder renamed
 * out from under the walk could not be told from it. Returns the descriptor, or -1
 * with errno: ELOOP, EXDEV (the path leads out), ENOTDIR, ENOENT, EACCES
 * ... as the kernel says; EINVAL for unknown resolve bits or a NULL
 * path, ENOENT for an empty one. Thread-safe; keeps nothing. */
HB_API int hb_open_beneath(int dir_fd, const char *path, int flags, unsigned resolve);

#ifdef __cplusplus
}
#endif

#endif /* HASHBATCH_H */
