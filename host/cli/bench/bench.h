/*
 * bench.h - internal interfaces between the modules of `hashbatch bench`
 * (bench_*.c, cmd_bench.c). Not installed, not part of the library API.
 *
 * Owns: the plan (what to measure), the backends under test, the results
 * and the machine description that the report modules print.
 * Must not: declare anything the library provides (hashing comes from
 * hashbatch.h, the reference digests from OpenSSL).
 */
#ifndef HB_CLI_BENCH_H
#define HB_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

#define BENCH_CMD "bench"
#define BENCH_MAX_LIST 32     /* entries of --sizes / --batches */
#define BENCH_MAX_CPU_IMPLS 8 /* CPU implementations --cpu-impl can name */
/* cpu, cpu IMPL for each other implementation, each device, default */
#define BENCH_MAX_BACKENDS (HB_STATS_MAX_DEVICES + 2 + BENCH_MAX_CPU_IMPLS)
#define BENCH_MAX_SIZE ((size_t)1 << 30)  /* largest message of --sizes */
#define BENCH_MAX_BATCH ((size_t)1 << 20) /* largest batch of --batches */
#define BENCH_MAX_INPUT ((size_t)2 << 30) /* largest input buffer */
#define BENCH_OPENSSL (-1)                /* result of the OpenSSL loop */
#define BENCH_PEER (-2)                   /* result of the isa-l_crypto peer */
#define BENCH_PEER_NAME "isa-l_crypto"    /* its row */
#define BENCH_PATH_MAX 4096

/* A sorted list of sizes or counts without duplicates. */
typedef struct {
    size_t v[BENCH_MAX_LIST];
    size_t n;
} bench_list;

/* What to measure, from the options (bench_options.c). */
typedef struct {
    int quick;
    int json;
    bench_list sizes;       /* message sizes of the size sweep */
    bench_list batches;     /* batch sizes of the batch sweep */
    bench_list batch_sizes; /* message sizes of the batch sweep (64 B, 4 KiB) */
    unsigned runs;          /* timed runs per case */
    double min_time;        /* least seconds of one run */
    size_t target_bytes;    /* message bytes per batch in the size sweep */
    size_t max_count;       /* most messages per batch in the size sweep */
    int want_cpu, want_opencl, want_default;
    int backends_given;       /* --backend named them */
    unsigned cpu_impls;       /* bit k: CPU implementation hb_cpu_impl_name(k)
                                 gets a "cpu NAME" row beside "cpu" (the
                                 default one), unless it is the default */
    int cpu_impls_all;        /* every implementation: those this CPU does not
                                 run are skipped with a note */
    const char *cpu_impl_arg; /* --cpu-impl as given, or NULL */
    const char *device;       /* --device: one OpenCL spec; NULL: each device */
    const char *plot;         /* --plot FILE.png, or NULL */
    const char *json_file;    /* --json-file FILE, or NULL */
    const char *peer_dir;     /* --peer-isal DIR (or HASHBATCH_PEER_ISAL), or NULL */
    const char *peer_origin;  /* "--peer-isal" or "HASHBATCH_PEER_ISAL": which gave it */
    cli_engine_opts engine;   /* --verify (backend and device are bench's own) */
} bench_opts;

/* Fills *o from argv. Returns -1 to go on, else the exit status (help
 * printed, or a usage error reported). */
int bench_parse(int argc, char **argv, bench_opts *o);

/* The index k of the CPU implementation called name (hb_cpu_impl_name(k)),
 * or -1 when the library knows no such name. */
int bench_cpu_impl_index(const char *name);

/* Parses "64,4K,1M" (suffixes K, M, G: powers of 1024) into a sorted list
 * of values in [1, max]. Returns 0, or -1 with a reason in why. */
int bench_parse_list(const char *text, size_t max, bench_list *out, char *why, size_t whylen);

/* The machine, as the report describes it (bench_machine.c). */
typedef struct {
    char date[32]; /* "2026-11-30T16:40:00Z" */
    char cpu_model[128];
    unsigned cores;       /* online cores */
    unsigned cpu_threads; /* the CPU pool's default size */
    int sha_ni;
    char openssl[128];
    char os[160];        /* uname: system, release, machine */
    double load[3];      /* load averages when it started */
    double load_end[3];  /* and when it ended (bench_machine_load_end) */
    hb_device_info *dev; /* every OpenCL device */
    size_t ndev;
} bench_machine;

/* Fills *m. Returns 0, or CLI_EXIT_FAILURE after reporting. */
int bench_machine_read(bench_machine *m);
void bench_machine_free(bench_machine *m);

/* Records the load averages at the end of the measurements. */
void bench_machine_load_end(bench_machine *m);

/* One backend under test (bench_backends.c). */
typedef struct {
    char name[48];        /* "cpu", "cpu sha-ni", "opencl 0:0", "default" */
    const char *kind;     /* "cpu", "opencl" or "default" */
    const char *cpu_impl; /* the CPU pool's implementation (a static name
                             from the library) for cpu and default; NULL for
                             opencl */
    int cpu_forced;       /* 1: cpu_impl is asked for ("cpu NAME" rows);
                             0: the library's default */
    char device[128];     /* the engine's device spec; "" for cpu and for
                             default (the library's default spec) */
    char describe[256];
    hb_engine *engine;
} bench_backend;

typedef struct {
    bench_backend b[BENCH_MAX_BACKENDS];
    size_t n;
    char note[512]; /* why some backends are not measured, "; " between
                       reasons; "" if none */
} bench_backends;

/* Chooses the backends from the options and the machine's devices and
 * opens (and so warms) one engine each, from base (its verification mode
 * and sizes; backend and device are set per backend). Returns 0, or
 * CLI_EXIT_FAILURE after reporting (engines opened so far are closed). */
int bench_backends_open(bench_backends *bs, const bench_opts *o, const bench_machine *m,
                        const hb_config *base);
void bench_backends_close(bench_backends *bs);

/* Median and spread of a set of runs. */
typedef struct {
    double median, min, max, q1, q3;
} bench_spread;

/* Fills *s from n values (sorted in place). n > 0. */
void bench_spread_of(double *v, size_t n, bench_spread *s);

typedef enum { BENCH_SWEEP_SIZE = 0, BENCH_SWEEP_BATCH = 1 } bench_sweep;

/* One measured case: a backend (or OpenSSL's SHA-1 on one thread) over a
 * batch of count messages of size bytes. */
typedef struct {
    bench_sweep sweep;
    int backend; /* index in bench_backends, BENCH_OPENSSL or BENCH_PEER */
    size_t size, count;
    unsigned runs;
    uint64_t calls;                           /* batches hashed in the timed runs */
    double seconds;                           /* time of the timed runs */
    bench_spread gbps;                        /* 1e9 bytes per second */
    bench_spread mps;                         /* messages per second */
    unsigned checked;                         /* runs whose digests matched OpenSSL's */
    double device_share;                      /* of the bytes, hashed on OpenCL devices; -1: n/a */
    uint64_t verified, mismatches, fallbacks; /* engine counters, timed runs */
} bench_result;

/* The isa-l_crypto peer (bench_peer_build.c, bench_peer_run.c):
 * bench/isal_peer.c compiled against an isa-l_crypto install. */
typedef struct {
    int on;                             /* built, and measured in every case */
    const char *dir;                    /* the install prefix, as given */
    const char *origin;                 /* "--peer-isal" or "HASHBATCH_PEER_ISAL" */
    char include[BENCH_PATH_MAX];       /* DIR/include */
    char library[BENCH_PATH_MAX];       /* libisal_crypto.a (or .so) it links */
    int library_shared;                 /* 1: the .so, found at run time by an rpath */
    char rpath[BENCH_PATH_MAX + 16];    /* -Wl,-rpath,DIR/lib for the .so */
    char compiler[256];                 /* $CC, or "cc" */
    char compiler_words[256];           /* compiler split at blanks */
    char compiler_path[BENCH_PATH_MAX]; /* its program */
    char binary[BENCH_PATH_MAX];        /* the compiled peer in the cache */
    int reused;                         /* 1: an earlier identical build */
    unsigned threads;                   /* the cpu backend's pool size */
} bench_peer;

/* Checks dir (given by origin: "--peer-isal" or "HASHBATCH_PEER_ISAL")
 * and builds the peer into the cache unless an identical build is there.
 * Returns 0 (p->on set), CLI_EXIT_USAGE when dir is no isa-l_crypto
 * install, or CLI_EXIT_FAILURE (no compiler, a failed compile, no cache
 * directory), after reporting. */
int bench_peer_prepare(bench_peer *p, const char *dir, const char *origin);

/* Measures count messages of size bytes with the peer, o->runs runs of at
 * least o->min_time seconds on p->threads threads. Fills *r (sweep kept,
 * backend BENCH_PEER). Returns 0, or CLI_EXIT_FAILURE after reporting
 * (the peer failed, a digest of its differed from OpenSSL's, or it
 * printed something unexpected). */
int bench_peer_case(const bench_peer *p, size_t size, size_t count, const bench_opts *o,
                    bench_result *r);

/* bench/isal_peer.c, embedded at build time (NUL-terminated). */
extern const char bench_isal_peer_source[];
extern const size_t bench_isal_peer_source_size;

/* What a child program wrote and how it ended (bench_child.c). */
typedef struct {
    char out[16384]; /* the first bytes of its stdout (and stderr, merged) */
    size_t out_len;
    char err[8192]; /* the first bytes of its stderr, when not merged */
    size_t err_len;
    int status; /* as waitpid gives it */
} bench_child;

/* Runs argv[0] (a path) with argv, stdin from /dev/null, keeping what it
 * writes (merge: stderr into out) and waiting for it. Returns 0 (see
 * c->status), or -1 with errno when it could not be started. */
int bench_child_run(char *const *argv, int merge, bench_child *c);

/* 1 when the child exited 0. */
int bench_child_ok(const bench_child *c);

/* "exit status 1", "killed by signal 9 (Killed)" into buf. */
const char *bench_child_how(const bench_child *c, char *buf, size_t len);

/* The first lines of text, each on a new line indented by two spaces
 * (with "..." when there are more), into buf. */
const char *bench_first_lines(const char *text, unsigned lines, char *buf, size_t len);

/* Everything one bench run found. */
typedef struct {
    bench_machine machine;
    bench_backends backends;
    bench_peer peer;
    const bench_opts *opts;
    bench_result *r;
    size_t n, cap;
    uint64_t seed;      /* of the random input */
    const char *verify; /* verification mode of the engines */
} bench_report;

/* Random input bytes, made once (bench_measure.c). */
typedef struct {
    unsigned char *data;
    size_t bytes;
    uint64_t seed;
} bench_input;

/* Fills in with bytes random bytes. Returns 0, or -1 (out of memory). */
int bench_input_make(bench_input *in, size_t bytes);
void bench_input_free(bench_input *in);

/* One batch shape over the input, with OpenSSL's digests of it. */
typedef struct {
    size_t size, count;
    hb_msg *msgs;
    hb_digest *want; /* OpenSSL's SHA-1 of each message */
    hb_digest *got;
} bench_case;

/* Lays count messages of size bytes over in (size * count <= in->bytes)
 * and computes OpenSSL's digests. Returns 0, or -1 (out of memory). */
int bench_case_init(bench_case *c, const bench_input *in, size_t size, size_t count);
void bench_case_free(bench_case *c);

/* Measures backend b on c: one untimed warm-up batch, then runs timed runs
 * of back-to-back batches (each at least min_time seconds); every run's
 * digests are compared with OpenSSL's. Fills *r (sweep and backend
 * included). Returns 0, or CLI_EXIT_FAILURE after reporting (a digest
 * mismatch or an engine error). */
int bench_case_engine(const bench_case *c, const bench_backend *b, int index, const bench_opts *o,
                      bench_result *r);

/* Measures OpenSSL's SHA-1 over c's messages on this thread, as above. */
int bench_case_openssl(const bench_case *c, const bench_opts *o, bench_result *r);

/* Appends r to rep. Returns 0, or -1 (out of memory). */
int bench_report_add(bench_report *rep, const bench_result *r);

/* The result of (sweep, backend, size, count), or NULL. */
const bench_result *bench_report_find(const bench_report *rep, bench_sweep sweep, int backend,
                                      size_t size, size_t count);

/* Crossover (bench_crossover.c): the smallest batch of the batch sweep at
 * message size `size` from which backend stays ahead of the cpu backend
 * in messages/s at every larger measured batch. Returns the batch, 0 when
 * it is never ahead at the largest batch, or -1 when it cannot be told
 * (no cpu backend, or nothing measured). */
long long bench_crossover(const bench_report *rep, int backend, size_t size);

/* Index of the cpu backend with the default implementation (the row
 * named "cpu", which crossovers compare with), or -1. */
int bench_cpu_index(const bench_report *rep);

/* The label of backend i (BENCH_OPENSSL: OpenSSL's loop, BENCH_PEER:
 * "isa-l_crypto") in tables and
 * plots: its name, with the implementation after the default "cpu"
 * ("cpu (avx512)"), into buf. */
const char *bench_label(const bench_report *rep, int i, char *buf, size_t len);

/* Reports (bench_text.c, bench_json.c, bench_plot.c). */
void bench_print_text(FILE *f, const bench_report *rep);
void bench_print_json(FILE *f, const bench_report *rep);

/* "64 B", "4 KiB", "16 MiB" (exact multiples only, else bytes) into buf. */
const char *bench_size_name(size_t bytes, char *buf, size_t len);

/* Checks before any measurement that path (the value of option opt) can
 * be written, without leaving a file behind. Returns 0, or CLI_EXIT_USAGE
 * after reporting. */
int bench_check_writable(const char *path, const char *opt);

/* Checks before any measurement that the plot can be made: gnuplot is on
 * PATH and path can be written. Returns 0, CLI_EXIT_USAGE (path) or
 * CLI_EXIT_FAILURE (no gnuplot), after reporting. */
int bench_plot_check(const char *path);

/* Draws the plot with gnuplot into path. Returns 0, or CLI_EXIT_FAILURE
 * after reporting. */
int bench_plot(const char *path, const bench_report *rep);

#endif /* HB_CLI_BENCH_H */
