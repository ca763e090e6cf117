/*
 * cmd_sum.c - `hashbatch sum [OPTION]... [FILE]...`: SHA-1 of each FILE
 * ("-" or none: standard input), printed exactly as GNU sha1sum prints it;
 * -c checks sums as sha1sum -c does; -r hashes directory trees.
 *
 * Owns: the options and help of `sum`, their consistency rules (worded
 * as sha1sum's), opening and closing the engine and the progress meter,
 * and the exit status (1 when some file could not be hashed or checked).
 * Must not: read files, walk trees or format lines itself (sum_run.c,
 * sum_list.c, sum_format.c and sum_check.c do).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "engine_report.h"
#include "sum.h"

#define CMD "sum"

enum {
    OPT_BATCH_BYTES = CLI_OPT_FIRST_LOCAL,
    OPT_VERBOSE,
    OPT_TAG,
    OPT_QUIET,
    OPT_STATUS,
    OPT_STRICT,
    OPT_IGNORE_MISSING,
    OPT_IO_THREADS,
    OPT_SMALL_MAX,
    OPT_MEMORY_MAX,
    OPT_CACHE,
    OPT_CACHE_FILE
};

typedef struct {
    cli_engine_opts engine;
    hb_files_options files;
    sum_style style;
    sum_check_opts check;
    int checking, recurse, follow, verbose, text;
    int use_cache;          /* --cache or --cache-file */
    const char *cache_file; /* --cache-file PATH; NULL: the default file */
    int tag_given, binary_given, text_given, zero_given;
    char **files_args;
    size_t nfiles;
} sum_opts;

static void help(void)
{
    printf("Usage: %s " CMD " [OPTION]... [FILE]...\n"
           "Print or check SHA-1 checksums, exactly as sha1sum does: \"HASH  NAME\".\n"
           "With no FILE, or when FILE is -, read standard input.\n\n"
           "  -b, --binary  mark lines with '*' (\"HASH *NAME\"); the bytes are\n"
           "                the same either way\n"
           "  -c, --check   read checksums from the FILEs and check them\n"
           "      --tag     BSD-style lines: \"SHA1 (NAME) = HASH\"\n"
           "  -t, --text    mark lines with ' ' (the default)\n"
           "  -z, --zero    end each output line with NUL, not newline, and do\n"
           "                not escape names; with -c: records end in NUL\n"
           "  -r, --recursive\n"
           "                hash the regular files under each directory FILE, in\n"
           "                byte order of their paths (`find DIR -type f | LC_ALL=C\n"
           "                sort`); FIFOs, sockets, devices, loops and unreadable\n"
           "                directories are reported and skipped\n"
           "  -L, --follow  with -r: follow symbolic links below the arguments\n"
           "                (loops are detected); by default they are skipped\n"
           "      --quiet   no progress meter; with -c: no OK lines\n",
           CLI_PROGRAM);
    fputs("      --cache   take the digest of a file whose filesystem, device, inode,\n"
          "                size, modification and change times (in ns) are unchanged\n"
          "                from the hash cache, without reading it; store what\n"
          "                is hashed. The output is the same. Files changed less\n"
          "                than 2 s before the run are hashed and not stored (a\n"
          "                change within one timestamp tick would not show). The\n"
          "                cache is $XDG_CACHE_HOME/hashbatch/hashes.sqlite\n"
          "                (~/.cache/hashbatch/); one that cannot be used is\n"
          "                reported in one line and the files are hashed.\n"
          "                Not with -c: checking always reads. See `hashbatch\n"
          "                cache --help`\n"
          "      --cache-file PATH\n"
          "                the hash cache in PATH (implies --cache)\n\n",
          stdout);
    fputs("The following five options are useful only when verifying checksums:\n"
          "      --ignore-missing  don't fail or report status for missing files\n"
          "      --quiet          don't print OK for each successfully verified file\n"
          "      --status         don't output anything, status code shows success\n"
          "      --strict         exit non-zero for improperly formatted checksum lines\n"
          "  -w, --warn           warn about improperly formatted checksum lines\n\n"
          "Engine:\n" CLI_ENGINE_OPTIONS_HELP "  --batch-bytes N\n"
          "                bytes of small files per engine submission (suffixes\n"
          "                K, M, G; default 8M)\n"
          "  --small-max N files up to N bytes are read whole and batched through\n"
          "                the engine; bigger ones are streamed on the reader\n"
          "                threads, through the CPU's lanes (default 1M)\n"
          "  --memory-max N\n"
          "                most file bytes held in memory at once (default 64M)\n"
          "  --io-threads N\n"
          "                reader threads (default: one per core, at least 2)\n"
          "  -v, --verbose, --stats\n"
          "                print on stderr the engine used and its counters\n"
          "                (messages, bytes, launches, verification, fallbacks),\n"
          "                where its cost models came from (calibrated at open,\n"
          "                or the model cache), a line per backend that took\n"
          "                part (its share of messages and bytes, busy time, its\n"
          "                model for the class of work it mostly did: fixed +\n"
          "                per message + per byte, and the time its model\n"
          "                predicted against the time it took, for the CPU pool\n"
          "                summed over its threads), and the readers' counters\n"
          "  -h, --help    print this help and exit\n\n" CLI_ENGINE_ENV_HELP "\n"
          "FIFOs, sockets and devices named as FILE are not read (reading could\n"
          "block forever): they are reported and skipped; pipe into - instead.\n"
          "A progress meter is drawn on stderr when it is a terminal.\n\n"
          "Exit status: 0 if all files were hashed (with -c: all matched), 1 if\n"
          "some could not be read or were skipped, or did not match, or the engine\n"
          "failed, 2 on a usage error.\n",
          stdout);
}

/* parse_size: "64M" and friends, not 0, within size_t; 0 on success. */
static int parse_size(const char *text, size_t *out)
{
    uint64_t v;
    if (cli_parse_size(text, &v) != 0 || v == 0 || v > SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* take_size: a size option's value into *out, or a usage error. */
static int take_size(const char *name, const char *text, size_t *out)
{
    if (parse_size(text, out) == 0)
        return -1;
    return cli_usage_error(CMD, "invalid size '%s' for '--%s'", text, name);
}

/* take_threads: --io-threads' value, 1 to 64. */
static int take_threads(const char *text, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno || v < 1 || v > 64)
        return cli_usage_error(CMD, "invalid number '%s' for '--io-threads' (1 to 64)", text);
    *out = (unsigned)v;
    return -1;
}

/* take_check_flag: --quiet, --status and -w, which override each other as
 * in sha1sum (the last one wins). */
static void take_check_flag(sum_opts *o, int c)
{
    o->check.quiet = c == OPT_QUIET;
    o->check.status = c == OPT_STATUS;
    o->check.warn = c == 'w';
}

/* take: one option. Returns -1 to go on, else the exit status. */
static int take(sum_opts *o, int c, char **argv)
{
    if (cli_engine_opts_take(&o->engine, c, optarg))
        return -1;
    switch (c) {
    case OPT_BATCH_BYTES:
        return take_size("batch-bytes", optarg, &o->files.batch_bytes);
    case OPT_SMALL_MAX:
        return take_size("small-max", optarg, &o->files.small_max);
    case OPT_MEMORY_MAX:
        return take_size("memory-max", optarg, &o->files.memory_max);
    case OPT_IO_THREADS:
        return take_threads(optarg, &o->files.io_threads);
    case 'b':
        o->style.binary = 1;
        o->binary_given = 1;
        return -1;
    case 't':
        o->style.binary = 0;
        o->text_given = 1;
        return -1;
    case 'c':
        o->checking = 1;
        return -1;
    case OPT_TAG:
        o->style.tag = o->tag_given = 1;
        return -1;
    case 'z':
        o->style.zero = o->check.zero = o->zero_given = 1;
        return -1;
    case 'r':
        o->recurse = 1;
        return -1;
    case 'L':
        o->follow = 1;
        return -1;
    case OPT_QUIET:
    case OPT_STATUS:
    case 'w':
        take_check_flag(o, c);
        return -1;
    case OPT_STRICT:
        o->check.strict = 1;
        return -1;
    case OPT_IGNORE_MISSING:
        o->check.ignore_missing = 1;
        return -1;
    case 'v':
    case OPT_VERBOSE:
        o->verbose = 1;
        return -1;
    case OPT_CACHE:
        o->use_cache = 1;
        return -1;
    case OPT_CACHE_FILE:
        o->use_cache = 1;
        o->cache_file = optarg;
        return -1;
    case 'h':
    case CLI_OPT_HELP:
        help();
        return cli_finish_stdout(CLI_EXIT_OK);
    default:
        return cli_getopt_error(CMD, c, argv);
    }
}

/* consistent: sha1sum's rules on which options go together. */
static int consistent(const sum_opts *o)
{
    const char *only_check = !o->checking && o->check.ignore_missing ? "ignore-missing"
                             : !o->checking && o->check.status       ? "status"
                             : !o->checking && o->check.warn         ? "warn"
                             : !o->checking && o->check.strict       ? "strict"
                                                                     : NULL;
    if (only_check != NULL)
        return cli_usage_error(CMD, "the --%s option is meaningful only when verifying checksums",
                               only_check);
    if (o->checking && o->tag_given)
        return cli_usage_error(CMD, "the --tag option is meaningless when verifying checksums");
    if (o->checking && (o->binary_given || o->text_given))
        return cli_usage_error(CMD, "the --binary and --text options are meaningless when "
                                    "verifying checksums");
    if (o->checking && o->recurse)
        return cli_usage_error(CMD,
                               "the --recursive option is meaningless when verifying checksums");
    if (o->checking && o->use_cache)
        return cli_usage_error(CMD, "the --cache option is meaningless when verifying checksums");
    if (o->tag_given && o->text_given && !o->style.binary)
        return cli_usage_error(CMD, "--tag does not support --text mode");
    if (o->follow && !o->recurse)
        return cli_usage_error(CMD, "the --follow option is meaningful only with --recursive");
    return -1;
}

/* parse: the options of `sum`. Returns -1 to go on, else the exit
 * status. */
static int parse(int argc, char **argv, sum_opts *o)
{
    static const struct option longopts[] = {
        CLI_ENGINE_LONG_OPTIONS,
        {"batch-bytes", required_argument, NULL, OPT_BATCH_BYTES},
        {"small-max", required_argument, NULL, OPT_SMALL_MAX},
        {"memory-max", required_argument, NULL, OPT_MEMORY_MAX},
        {"io-threads", required_argument, NULL, OPT_IO_THREADS},
        {"verbose", no_argument, NULL, OPT_VERBOSE},
        {"stats", no_argument, NULL, OPT_VERBOSE},
        {"binary", no_argument, NULL, 'b'},
        {"check", no_argument, NULL, 'c'},
        {"tag", no_argument, NULL, OPT_TAG},
        {"text", no_argument, NULL, 't'},
        {"zero", no_argument, NULL, 'z'},
        {"recursive", no_argument, NULL, 'r'},
        {"follow", no_argument, NULL, 'L'},
        {"quiet", no_argument, NULL, OPT_QUIET},
        {"status", no_argument, NULL, OPT_STATUS},
        {"strict", no_argument, NULL, OPT_STRICT},
        {"warn", no_argument, NULL, 'w'},
        {"ignore-missing", no_argument, NULL, OPT_IGNORE_MISSING},
        {"cache", no_argument, NULL, OPT_CACHE},
        {"cache-file", required_argument, NULL, OPT_CACHE_FILE},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {NULL, 0, NULL, 0}};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":bctzrLwhv", longopts, NULL)) != -1) {
        int rc = take(o, c, argv);
        if (rc >= 0)
            return rc;
    }
    o->files_args = argv + optind;
    o->nfiles = (size_t)(argc - optind);
    return consistent(o);
}

/* report: --verbose's (--stats') lines on stderr: the engine, its
 * counters, where its cost models came from, one line per backend that
 * took part (engine_report.c), and the readers'. */
static void report(const hb_engine *e, const hb_files_stats *fs)
{
    hb_stats st;
    fflush(stdout);
    if (e == NULL) {
        fprintf(stderr, "%s: engine: not opened (nothing needed hashing)\n", CLI_PROGRAM);
        return;
    }
    fprintf(stderr, "%s: engine: %s\n", CLI_PROGRAM, hb_engine_describe(e));
    if (hb_engine_stats(e, &st) != HB_OK)
        return;
    fprintf(stderr,
            "%s: %" PRIu64 " messages, %" PRIu64 " bytes in %" PRIu64 " batches; %" PRIu64
            " launches, %" PRIu64 " bytes on devices, %" PRIu64 " on the cpu pool; %" PRIu64
            " verification checks (%.3f%% of the bytes hashed again), %" PRIu64
            " mismatches, %" PRIu64 " fallbacks, %" PRIu64 " device errors%s\n",
            CLI_PROGRAM, st.messages, st.bytes, st.batches, st.device_launches, st.device_bytes,
            st.cpu_bytes, st.verified,
            st.bytes + fs->streamed_bytes
                ? 100.0 * (double)st.verified_bytes / (double)(st.bytes + fs->streamed_bytes)
                : 0.0,
            st.verify_mismatches, st.fallbacks, st.device_errors,
            st.quarantined ? ", device quarantined" : "");
    engine_report_origin(stderr, &st);
    engine_report_backends(stderr, &st);
    fprintf(
        stderr,
        "%s: files: %" PRIu64 " (%" PRIu64 " failed), %" PRIu64 " bytes read; %" PRIu64
        " batched through the engine (%" PRIu64 " bytes, %" PRIu64 " submissions), %" PRIu64
        " streamed on reader threads (%" PRIu64 " bytes; %" PRIu64
        " of them by idle readers or pool threads with SHA-NI, moved mid-file); at most %" PRIu64
        " file bytes in memory\n",
        CLI_PROGRAM, fs->files, fs->files_failed, fs->bytes_read, fs->batched_files,
        fs->batched_bytes, fs->batches, fs->streamed_files, fs->streamed_bytes, st.cpu_moved_bytes,
        fs->peak_memory);
}

/* What printing digest lines needs. */
typedef struct {
    const sum_opts *o;
    char *const *names;
    const int *tree; /* per name: its tree, or -1 (sum_list's) */
    progress *meter;
    int failed;
} printer;

/* print_result: one file's line, or its error (sum_run's in-order
 * callback). */
static void print_result(void *arg, size_t i, const hb_file_result *r)
{
    printer *p = arg;
    if (r->status == HB_OK) {
        sum_format_line(stdout, r->digest, p->names[i], &p->o->style);
        return;
    }
    progress_clear(p->meter);
    sum_report_failure(p->names[i], r, p->tree[i] >= 0);
    p->failed = 1;
}

/* run_sums: hashes and prints every file. Returns the exit status. */
static int run_sums(sum_runner *r, const sum_opts *o, sum_list *list)
{
    progress_stage(r->meter, "hashing", list->n, list->bytes);
    printer p = {o, list->names, list->tree, r->meter, list->skipped};
    r->tree_of = list->tree;
    r->dev_of = list->dev;
    r->trees = list->ntrees ? places_new(list->trees, list->ntrees) : NULL;
    if (list->ntrees && r->trees == NULL) {
        cli_error("%s", strerror(ENOMEM));
        return CLI_EXIT_FAILURE;
    }
    if (o->use_cache)
        r->cache = sum_cache_open(o->cache_file);
    int rc = sum_run(r, list->names, list->n, print_result, &p);
    places_free(r->trees);
    r->trees = NULL;
    r->tree_of = NULL;
    r->dev_of = NULL;
    progress_clear(r->meter);
    fflush(stdout);
    sum_cache_close(r->cache, o->verbose);
    r->cache = NULL;
    if (rc == 0 && p.failed)
        rc = CLI_EXIT_FAILURE;
    return rc;
}

/* The list of names to hash (the FILE operands, and the trees under them
 * with -r), built on a thread of its own while the engine opens: the two
 * overlap (a pocl start, some 0.1 s, is as long as walking tens of
 * thousands of files). */
typedef struct {
    const sum_opts *o;
    progress *meter;
    sum_list list;
    int rc;
} list_job;

static void *build_list(void *arg)
{
    static char stdin_name[] = "-";
    static char *stdin_only[] = {stdin_name};
    list_job *j = arg;
    char *const *args = j->o->nfiles ? j->o->files_args : stdin_only;
    size_t n = j->o->nfiles ? j->o->nfiles : 1;
    j->rc = sum_list_build(&j->list, args, n, j->o->recurse, j->o->follow, j->meter);
    return NULL;
}

/* open_while_listing: opens the engine (*e) on this thread while another
 * builds j's list (on this one too when no thread can be made). Returns
 * cli_engine_open's status; j->rc says whether the list was built. */
static int open_while_listing(const hb_config *cfg, hb_engine **e, list_job *j)
{
    pthread_t th;
    int threaded = pthread_create(&th, NULL, build_list, j) == 0;
    if (!threaded)
        build_list(j);
    int rc = cli_engine_open(cfg, CMD, e);
    if (threaded)
        pthread_join(th, NULL);
    return rc;
}

/* expect_operands: with FILE operands only (no -r, no standard input),
 * tells the engine how much work to expect, so that it opens no device
 * that could not pay for its opening (a few small files are hashed
 * before pocl would have started). Anything not a regular file leaves
 * the work unknown. */
static void expect_operands(const sum_opts *o, hb_config *cfg)
{
    uint64_t bytes = 0;
    if (o->recurse || o->checking || o->nfiles == 0)
        return;
    for (size_t i = 0; i < o->nfiles; i++) {
        struct stat st;
        if (strcmp(o->files_args[i], "-") == 0 || stat(o->files_args[i], &st) != 0 ||
            !S_ISREG(st.st_mode))
            return;
        bytes += (uint64_t)st.st_size;
    }
    cfg->expected_messages = o->nfiles;
    cfg->expected_bytes = bytes;
}

/* run_checks: checks every sums file. Returns the exit status. */
static int run_checks(sum_runner *r, const sum_opts *o)
{
    static char stdin_name[] = "-";
    static char *stdin_only[] = {stdin_name};
    char *const *args = o->nfiles ? o->files_args : stdin_only;
    size_t n = o->nfiles ? o->nfiles : 1;
    int all_ok = 1;
    for (size_t i = 0; i < n; i++) {
        progress_stage(r->meter, "checking", 0, 0);
        int ok = sum_check_file(r, args[i], &o->check);
        if (ok < 0)
            return CLI_EXIT_FAILURE;
        all_ok &= ok;
    }
    return all_ok ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

int cmd_sum(int argc, char **argv)
{
    sum_opts o;
    memset(&o, 0, sizeof o);
    hb_files_options_init(&o.files);
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;

    hb_config cfg;
    rc = cli_engine_config(&o.engine, CMD, &cfg);
    if (rc != CLI_EXIT_OK)
        return rc;
    expect_operands(&o, &cfg);
    progress *meter = progress_open(stderr, o.check.quiet || o.check.status);
    hb_engine *e = NULL;
    list_job list = {&o, meter, {0}, 0};
    /* With the cache, a rescan may hash nothing, or a few changed files:
     * the engine opens when a file first needs hashing (sum_run.c), told
     * that work. Only where no backend or device was asked for: a named
     * one must be checked (a usage error) before the run. */
    int late = o.use_cache && !o.checking && cfg.backend == HB_BACKEND_AUTO && cfg.device == NULL;
    if (late) {
        build_list(&list);
        rc = CLI_EXIT_OK;
    } else {
        rc = o.checking ? cli_engine_open(&cfg, CMD, &e) : open_while_listing(&cfg, &e, &list);
    }
    if (rc == CLI_EXIT_OK && !o.checking && list.rc != 0)
        rc = CLI_EXIT_FAILURE; /* out of memory, reported */
    if (rc != CLI_EXIT_OK) {
        if (!o.checking)
            sum_list_free(&list.list);
        progress_close(meter);
        hb_engine_close(e);
        return rc;
    }
    sum_runner r;
    memset(&r, 0, sizeof r);
    r.engine = e;
    r.open_late = late ? &cfg : NULL;
    r.files = o.files;
    r.meter = meter;
    r.stdout_tty = isatty(STDOUT_FILENO);
    rc = o.checking ? run_checks(&r, &o) : run_sums(&r, &o, &list.list);
    if (!o.checking)
        sum_list_free(&list.list);
    progress_close(r.meter);
    if (o.verbose)
        report(r.engine, &r.total);
    hb_engine_close(r.engine);
    return cli_finish_stdout(rc);
}
