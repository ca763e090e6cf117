/*
 * cli.h - internal declarations shared by the modules of the `hashbatch`
 * command (host/cli). Not installed, not part of the library API.
 *
 * Owns: the exit-status convention and the small interfaces between the
 * CLI modules. Must not: declare anything the library should provide
 * (everything about hashing comes from hashbatch.h).
 */
#ifndef HB_CLI_H
#define HB_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hashbatch.h"

/* Exit statuses, as coreutils uses them. */
enum {
    CLI_EXIT_OK = 0,      /* everything worked */
    CLI_EXIT_FAILURE = 1, /* some input could not be read, or a run error */
    CLI_EXIT_USAGE = 2    /* bad command line */
};

#define CLI_PROGRAM "hashbatch"

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* ---- subcommands (cmd_*.c): argv[0] is the subcommand's name -------- */

int cmd_devices(int argc, char **argv);
int cmd_sum(int argc, char **argv);
int cmd_dedup(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_link(int argc, char **argv);
int cmd_remove(int argc, char **argv);

/* ---- diag.c: messages on stderr --------------------------------------- */

/* "hashbatch: MESSAGE\n" on stderr (stdout flushed first). */
void cli_error(const char *fmt, ...) CLI_PRINTF(1, 2);

/* "hashbatch: NAME: strerror(errnum)\n", NAME quoted as coreutils does. */
void cli_error_path(const char *name, int errnum);

/* "hashbatch CMD: MESSAGE\nTry 'hashbatch CMD --help' ...\n"; returns
 * CLI_EXIT_USAGE so callers can `return cli_usage_error(...)`. */
int cli_usage_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* cli_cpu_impl_invalid: the usage error for a CPU implementation this CPU
 * does not run (value, from the environment variable `from`, or from
 * --cpu-impl when from is NULL): a known one is said not to run here, an
 * unknown one invalid; both list what runs. Returns CLI_EXIT_USAGE. */
int cli_cpu_impl_invalid(const char *cmd, const char *from, const char *value);

/* cli_watch_stdout: stdout through a stream that keeps the first write
 * error's cause, for cli_finish_stdout (called once, first thing). */
void cli_watch_stdout(void);

/* Flushes stdout; on a write error reports it and returns
 * CLI_EXIT_FAILURE, else returns rc unchanged. */
int cli_finish_stdout(int rc);

/* ---- quote.c: names in messages ---------------------------------------- */

/* Writes name to f, shell-quoted only when needed (coreutils' quotef). */
void cli_quote_name(FILE *f, const char *name);

/* ---- json.c: JSON output ---------------------------------------------- */

/* Writes s (at most maxlen bytes, stops at NUL) as a JSON string literal,
 * quotes included; invalid UTF-8 becomes U+FFFD. */
void json_put_string(FILE *f, const char *s, size_t maxlen);

/* ---- options.c: engine options shared by subcommands ------------------ */

/* getopt_long values of the shared engine options. */
enum {
    CLI_OPT_BACKEND = 0x100,
    CLI_OPT_DEVICE,
    CLI_OPT_VERIFY,
    CLI_OPT_HELP,
    CLI_OPT_FIRST_LOCAL /* subcommands number their own options from here */
};

/* clang-format off */
#define CLI_ENGINE_LONG_OPTIONS                              \
    {"backend", required_argument, NULL, CLI_OPT_BACKEND},   \
    {"device", required_argument, NULL, CLI_OPT_DEVICE},     \
    {"verify", required_argument, NULL, CLI_OPT_VERIFY}
/* clang-format on */

#define CLI_ENGINE_OPTIONS_HELP                                                                    \
    "  --backend B   auto (default: a GPU, else pocl, else cpu), opencl or cpu\n"                  \
    "  --device D    OpenCL devices: all, gpu, cpu, P:D (as `hashbatch devices`\n"                 \
    "                lists them) or a name substring\n"                                            \
    "  --verify V    check what the devices and lanes compute with OpenSSL:\n"                     \
    "                sample (default: every lane position and tail rule of\n"                      \
    "                each launch, on a few blocks), full (every digest), off\n"

#define CLI_ENGINE_ENV_HELP                                                                        \
    "Environment: HASHBATCH_BACKEND, HASHBATCH_DEVICE and HASHBATCH_VERIFY\n"                      \
    "give defaults for --backend, --device and --verify; options win.\n"                           \
    "HASHBATCH_DEVICE_CORES=LIST (cores such as 1 or 2-3) runs the OpenCL\n"                       \
    "runtime's threads there and the CPU pool on the other cores.\n"

typedef struct {
    const char *backend; /* option text, NULL when not given */
    const char *device;
    const char *verify;
} cli_engine_opts;

/* Records option c (one of CLI_OPT_BACKEND/DEVICE/VERIFY) with its value.
 * Returns 1 when c was one of them, 0 otherwise. */
int cli_engine_opts_take(cli_engine_opts *o, int c, const char *value);

/* Builds *cfg from defaults, the environment and the options (options
 * win). On a bad value reports a usage error and returns CLI_EXIT_USAGE;
 * else CLI_EXIT_OK. */
int cli_engine_config(const cli_engine_opts *o, const char *cmd, hb_config *cfg);

/* Opens the engine for cfg (cfg from cli_engine_config) for command
 * cmd. Returns CLI_EXIT_OK, or cli_engine_open_failed's status. */
int cli_engine_open(const hb_config *cfg, const char *cmd, hb_engine **out);

/* Reports that hb_engine_open(cfg) failed with st (detail: the library's
 * hb_engine_last_error(NULL) of that call) and returns the exit status:
 * a spec that matches no device (HB_ERR_BAD_DEVICE_SPEC, named with
 * where it came from: --device or HASHBATCH_DEVICE) or a bad value is a
 * usage error, CLI_EXIT_USAGE; anything else is CLI_EXIT_FAILURE. */
int cli_engine_open_failed(const char *cmd, const hb_config *cfg, hb_status st, const char *detail);

/* 1 if hb_engine_open's status st means the settings are wrong (a bad
 * device spec or value: a usage error), 0 if the engine failed to start. */
int cli_engine_settings_invalid(hb_status st);

/* Reports a getopt_long failure (c is '?' or ':'), argv and optind as
 * getopt left them; returns CLI_EXIT_USAGE. */
int cli_getopt_error(const char *cmd, int c, char **argv);

/* ---- grow.c: growing arrays ------------------------------------------ */

/* cli_grow: makes *p (an array of *cap elements of elem_size bytes) hold
 * at least need elements, doubling its capacity. Returns 0, or ENOMEM
 * (then *p and *cap are unchanged). */
int cli_grow(void **p, size_t *cap, size_t need, size_t elem_size);

/* cli_parse_size: digits with an optional K, M or G suffix (powers of
 * 1024: "4096", "64K", "1M"; 0 allowed) into *out. Returns 0, or -1 for
 * anything else or a value past 64 bits. */
int cli_parse_size(const char *text, uint64_t *out);

#endif /* HB_CLI_H */
