/*
 * cmd_dedup.c - `hashbatch dedup [OPTION]... DIR...`: finds files with
 * identical contents under the given directories (size, then a SHA-1 of
 * the first 4 KiB, then the whole file's SHA-1, then byte for byte) and
 * prints them in groups. It only reads; it never changes a file.
 *
 * Owns: the options and help of `dedup`, the run's order (scan, stages,
 * report), the meter, the engine's life and the exit status (1 when
 * anything was skipped or unreadable, 2 on a usage error).
 * Must not: walk, read, hash or format itself (dedup_*.c and walk.c do).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "dedup.h"
#include "dedup_action.h"
#include "dedup_cache.h"
#include "dedup_dirs.h"
#include "dedup_iothreads.h"
#include "engine_report.h"

#define CMD DD_CMD
#define DEFAULT_BATCH_BYTES ((size_t)8 << 20)

enum {
    OPT_JSON = CLI_OPT_FIRST_LOCAL,
    OPT_CSV,
    OPT_FDUPES,
    OPT_MIN_SIZE,
    OPT_EMPTY,
    OPT_BATCH_BYTES,
    OPT_STATS,
    OPT_CACHE,
    OPT_CACHE_FILE,
    OPT_DIRS,
    OPT_INDEX_OUT,
    OPT_MERGE,
    OPT_ACTION,
    OPT_KEEP,
    OPT_DRY_RUN,
    OPT_LOG,
    OPT_IO_THREADS
};

static void help(void)
{
    printf("Usage: %s " CMD " [OPTION]... DIR...\n"
           "  or:  %s " CMD " --merge [OPTION]... INDEX...\n"
           "Find files with identical contents under each DIR (recursively; FILEs\n"
           "may be named too) and print them in groups. Files are compared by size,\n"
           "then the SHA-1 of their first 4 KiB, then the SHA-1 of the whole file,\n"
           "and finally byte for byte: only files with equal bytes are grouped. Two\n"
           "files with one SHA-1 and different bytes (a SHA-1 collision) are\n"
           "reported with a warning and never grouped. Nothing is changed unless\n"
           "--action is given.\n\n"
           "Output on stdout:\n"
           "                 (default) one path per line, a blank line after each\n"
           "                 group, as fdupes and jdupes print; a path holding a\n"
           "                 control character (a newline) or starting with a quote\n"
           "                 is shell-quoted, e.g. 'a'$'\\n''b'\n"
           "      --fdupes   the same layout, every path written raw as fdupes does\n"
           "  -z, -0, --zero, --print-null\n"
           "                 each path followed by a NUL, each group by one more\n"
           "      --json     groups (with SHA-1, inodes, bytes to reclaim),\n"
           "                 collisions, errors and totals as one JSON object;\n"
           "                 file entries carry device, inode and mtime_ns: it is\n"
           "                 the plan `hashbatch link` and `remove` read\n"
           "      --csv      group,size,sha1,device,inode,path (RFC 4180); with --dirs\n"
           "                 group,kind,size,sha1,device,inode,path (kind dir or file; a\n"
           "                 dir row's size is the bytes of its files, its sha1 empty,\n"
           "                 its path ends in '/'); with --merge\n"
           "                 group,proof,size,sha1,host,device,inode,path\n"
           "  -S, --size     print \"N bytes each:\" before each group (text layouts)\n"
           "  -m, --summarize  print only the totals line\n\n",
           CLI_PROGRAM, CLI_PROGRAM);
    fputs("Which files:\n"
          "      --min-size N, -G N\n"
          "                 ignore files smaller than N bytes (suffixes K, M, G)\n"
          "      --empty    group empty files too (ignored by default)\n"
          "  -n, --noempty  ignore empty files (the default)\n"
          "  -L, -s, --follow-symlinks, --symlinks\n"
          "                 follow symbolic links (loops are detected); by default\n"
          "                 links below the DIRs are skipped silently\n"
          "  -r, -R, --recurse\n"
          "                 accepted for fdupes users: the walk is always recursive;\n"
          "                 a folder or file reached twice (DIR DIR, DIR DIR/sub) is\n"
          "                 scanned and listed once\n"
          "  -H, --hardlinks\n"
          "                 accepted: hard links to one file are always listed in\n"
          "                 its group; they are one file and reclaim no "
          "bytes\n\n",
          stdout);
    fputs(CLI_ENGINE_OPTIONS_HELP
          "      --batch-bytes N\n"
          "                 read and hash files in batches of N bytes (default 8M);\n"
          "                 files of one size that together take more are compared\n"
          "                 and hashed streaming, so memory stays near 2 x N\n"
          "      --io-threads N\n"
          "                 read files on N threads; by default files the page cache\n"
          "                 holds are read by one thread per core (2 to 8), and the\n"
          "                 others by one thread per rotational disk (sysfs), in the\n"
          "                 order of their place on the disk (FIEMAP), or by one per\n"
          "                 core on other disks\n\n",
          stdout);
    fputs("Duplicate directories:\n"
          "      --dirs     also find directories whose whole contents are identical\n"
          "                 and report each set as one group (paths ending in '/'),\n"
          "                 before the file groups. Only the topmost are listed: the\n"
          "                 first directory of a group (least deep, then by path)\n"
          "                 stands for its contents, and nothing inside the others is\n"
          "                 listed again, in directory or file groups. Identical means:\n"
          "                 the same names, each of one type in both; regular files\n"
          "                 proven equal (in one group of this scan, hard links, both\n"
          "                 empty, or both under --min-size and equal byte for byte);\n"
          "                 symbolic links with the same target; subdirectories\n"
          "                 identical in turn. A FIFO, socket or device, an unreadable\n"
          "                 entry, or a file the scan did not examine, could not read\n"
          "                 or saw change makes a directory identical to none. Modes,\n"
          "                 owners and times are not compared.\n\n",
          stdout);
    fputs("Scans in shards:\n"
          "      --index-out FILE\n"
          "                 also write the scan's index to FILE as JSON lines: a\n"
          "                 header (format, version, host, cwd, roots, time, min_size,\n"
          "                 the count of lines that follow), then per file: size, SHA-1\n"
          "                 of the first 4 KiB and of the whole file, device, inode,\n"
          "                 mtime_ns, class, path (path_hex when not UTF-8). Every file\n"
          "                 at or above --min-size is then hashed whole. FILE is\n"
          "                 replaced atomically; '-' writes the index to stdout\n"
          "                 instead of the groups\n"
          "      --merge    the operands are indexes (from --index-out, of other trees\n"
          "                 or machines): group their files by size and SHA-1. Files\n"
          "                 reachable here (a path with the index's device, inode, size\n"
          "                 and mtime) are compared byte for byte; a group holding one\n"
          "                 that is not is marked as proven by SHA-1 only (\"proof\":\n"
          "                 \"sha1\" in --json, a \"proof\" column in --csv, a line\n"
          "                 '# proven by SHA-1 only ...' before it otherwise). An\n"
          "                 unreachable file whose SHA-1 is shared by different bytes\n"
          "                 is left out. --cache, --dirs and --index-out do not apply\n\n",
          stdout);
    fputs("Hash cache:\n"
          "      --cache    use and fill the hash cache: a file whose device, inode,\n"
          "                 size, modification and change times (ns) are unchanged\n"
          "                 takes its prefix and whole-file SHA-1 from the cache\n"
          "                 instead of being read. Files the cache says share a SHA-1\n"
          "                 are still compared byte for byte, except files an earlier\n"
          "                 run proved identical while they had the keys they still\n"
          "                 have (a byte proof stored with them): those are one class\n"
          "                 without being read. Groups are re-checked against the file\n"
          "                 system before they are reported. Files changed less than\n"
          "                 2 s before the run are not stored (a change within one\n"
          "                 timestamp tick would not show). Default file:\n"
          "                 $XDG_CACHE_HOME/hashbatch/hashes.sqlite (~/.cache/hashbatch/);\n"
          "                 a cache that cannot be used is reported in one line and the\n"
          "                 scan goes on without it. See `hashbatch cache --help`\n"
          "      --cache-file PATH\n"
          "                 the hash cache in PATH (implies --cache)\n\n",
          stdout);
    fputs("Acting on the groups (as `hashbatch link` and `remove` act on a plan):\n"
          "      --action hard|reflink|symlink|remove\n"
          "                 replace each duplicate by a link to the file its group\n"
          "                 keeps, or remove it, after proving the pair equal again\n"
          "                 byte for byte and unchanged since the scan; each link is\n"
          "                 made at a fresh temporary name and exchanged with the\n"
          "                 duplicate, every file reached beneath its root.\n"
          "                 See `hashbatch link --help` for each kind\n"
          "      --keep first|oldest|newest|path=DIR\n"
          "                 which file of each group stays (default: first)\n"
          "      --dry-run  print what --action would do and change nothing\n"
          "      --log FILE append a JSON line per step of --action to FILE\n\n",
          stdout);
    fputs("  -q, --quiet    no progress meter and no totals on stderr\n"
          "  -v, --stats    print on stderr what each stage did, the engine, where\n"
          "                 its cost models came from and a line per backend that\n"
          "                 took part (its share of messages and bytes, its model,\n"
          "                 predicted against measured time)\n"
          "  -h, --help     print this help and exit\n\n"
          "A progress meter is shown on stderr when it is a terminal; the totals\n"
          "(groups, duplicate files, bytes that could be reclaimed) follow on\n"
          "stderr. Hard links count as one file: a group of hard links alone\n"
          "reclaims nothing. FIFOs, sockets and devices are skipped, never\n"
          "opened; files that change or vanish during the scan are left out.\n"
          "Each of these gets one line on stderr.\n\n" CLI_ENGINE_ENV_HELP "\n"
          "Exit status: 0 if every file was examined, 1 if some were skipped or\n"
          "unreadable (the rest is still reported) or the engine failed (then\n"
          "nothing is printed), 2 on a usage error.\n",
          stdout);
}

/* set_format: one output format; two different ones are a usage error. */
static int set_format(dd_opts *o, int *given, dd_format f)
{
    if (*given && o->format != f)
        return cli_usage_error(CMD, "choose one of --json, --csv, --fdupes, -z and -m");
    *given = 1;
    o->format = f;
    return -1;
}

/* parse: the options of `dedup`; *roots and *nroots get the DIRs.
 * Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, dd_opts *o, cli_engine_opts *eo, char ***roots,
                 size_t *nroots)
{
    static const struct option longopts[] = {
        CLI_ENGINE_LONG_OPTIONS,
        {"json", no_argument, NULL, OPT_JSON},
        {"csv", no_argument, NULL, OPT_CSV},
        {"fdupes", no_argument, NULL, OPT_FDUPES},
        {"zero", no_argument, NULL, 'z'},
        {"print-null", no_argument, NULL, 'z'},
        {"size", no_argument, NULL, 'S'},
        {"summarize", no_argument, NULL, 'm'},
        {"summarise", no_argument, NULL, 'm'},
        {"min-size", required_argument, NULL, OPT_MIN_SIZE},
        {"minsize", required_argument, NULL, OPT_MIN_SIZE},
        {"empty", no_argument, NULL, OPT_EMPTY},
        {"noempty", no_argument, NULL, 'n'},
        {"follow-symlinks", no_argument, NULL, 'L'},
        {"symlinks", no_argument, NULL, 'L'},
        {"recurse", no_argument, NULL, 'r'},
        {"hardlinks", no_argument, NULL, 'H'},
        {"batch-bytes", required_argument, NULL, OPT_BATCH_BYTES},
        {"quiet", no_argument, NULL, 'q'},
        {"stats", no_argument, NULL, OPT_STATS},
        {"verbose", no_argument, NULL, OPT_STATS},
        {"cache", no_argument, NULL, OPT_CACHE},
        {"cache-file", required_argument, NULL, OPT_CACHE_FILE},
        {"dirs", no_argument, NULL, OPT_DIRS},
        {"index-out", required_argument, NULL, OPT_INDEX_OUT},
        {"merge", no_argument, NULL, OPT_MERGE},
        {"action", required_argument, NULL, OPT_ACTION},
        {"keep", required_argument, NULL, OPT_KEEP},
        {"dry-run", no_argument, NULL, OPT_DRY_RUN},
        {"log", required_argument, NULL, OPT_LOG},
        {"io-threads", required_argument, NULL, OPT_IO_THREADS},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {NULL, 0, NULL, 0}};
    int c, given = 0, rc;
    uint64_t v;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":z0SmG:nLsrRHqvh", longopts, NULL)) != -1) {
        if (cli_engine_opts_take(eo, c, optarg))
            continue;
        rc = -1;
        switch (c) {
        case OPT_JSON:
            rc = set_format(o, &given, DD_JSON);
            break;
        case OPT_CSV:
            rc = set_format(o, &given, DD_CSV);
            break;
        case OPT_FDUPES:
            rc = set_format(o, &given, DD_FDUPES);
            break;
        case 'z':
        case '0':
            rc = set_format(o, &given, DD_ZERO);
            break;
        case 'm':
            rc = set_format(o, &given, DD_SUMMARY);
            break;
        case 'S':
            o->show_size = 1;
            break;
        case 'G':
        case OPT_MIN_SIZE:
            if (cli_parse_size(optarg, &o->min_size) != 0)
                return cli_usage_error(CMD, "invalid size '%s' for '--min-size'", optarg);
            break;
        case OPT_EMPTY:
            o->empty = 1;
            break;
        case 'n':
            o->empty = 0;
            break;
        case 'L':
        case 's':
            o->follow_symlinks = 1;
            break;
        case 'r':
        case 'R':
        case 'H':
            break;
        case OPT_BATCH_BYTES:
            if (cli_parse_size(optarg, &v) != 0 || v == 0 || v > ((uint64_t)1 << 34))
                return cli_usage_error(CMD, "invalid size '%s' for '--batch-bytes'", optarg);
            o->batch_bytes = (size_t)v;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case 'v':
        case OPT_STATS:
            o->verbose = 1;
            break;
        case OPT_CACHE:
            o->use_cache = 1;
            break;
        case OPT_CACHE_FILE:
            o->use_cache = 1;
            o->cache_file = optarg;
            break;
        case OPT_DIRS:
            o->dirs = 1;
            break;
        case OPT_INDEX_OUT:
            o->index_out = optarg;
            break;
        case OPT_MERGE:
            o->merge = 1;
            break;
        case OPT_ACTION:
            o->action = optarg;
            break;
        case OPT_KEEP:
            o->keep = optarg;
            break;
        case OPT_DRY_RUN:
            o->dry_run = 1;
            break;
        case OPT_LOG:
            o->action_log = optarg;
            break;
        case OPT_IO_THREADS:
            if (cli_parse_size(optarg, &v) != 0 || v == 0 || v > 256)
                return cli_usage_error(CMD, "invalid thread count '%s' for '--io-threads' (1-256)",
                                       optarg);
            o->io_threads = (unsigned)v;
            break;
        case 'h':
        case CLI_OPT_HELP:
            help();
            return cli_finish_stdout(CLI_EXIT_OK);
        default:
            return cli_getopt_error(CMD, c, argv);
        }
        if (rc >= 0)
            return rc;
    }
    if (optind >= argc)
        return cli_usage_error(CMD,
                               o->merge ? "missing index operand" : "missing directory operand");
    if ((o->keep || o->dry_run || o->action_log) && !o->action)
        return cli_usage_error(CMD, "--keep, --dry-run and --log need --action");
    if (o->merge && (o->use_cache || o->index_out || o->dirs))
        return cli_usage_error(
            CMD, "--merge reads indexes: --cache, --dirs and --index-out do not apply");
    if (o->action && (rc = dd_action_check(o)) >= 0)
        return rc;
    *roots = argv + optind;
    *nroots = (size_t)(argc - optind);
    return -1;
}

/* report_stats: --stats' lines on stderr: the stages, the engine and
 * its backends (engine_report.c). */
static void report_stats(const dd_run *r)
{
    fprintf(stderr,
            "%s: stages: %" PRIu64 " files scanned, %zu kept (%zu distinct), %" PRIu64
            " prefixes hashed, %" PRIu64 " files (%" PRIu64 " bytes) hashed whole, %" PRIu64
            " found identical to another by comparison, %" PRIu64
            " proven distinct by comparison alone (not hashed), %" PRIu64
            " bytes compared byte for byte\n",
            CLI_PROGRAM, r->scanned, r->npaths, r->ninodes, r->hashed_prefix, r->hashed_full,
            r->bytes_full, r->joined_by_bytes, r->distinct_by_bytes, r->compared_bytes);
    fprintf(stderr, "%s: times: scan %.3f s, prefixes %.3f s, whole files %.3f s, groups %.3f s\n",
            CLI_PROGRAM, r->secs[0], r->secs[1], r->secs[2], r->secs[3]);
    char reads[512];
    dd_read_describe(reads, sizeof reads);
    fprintf(stderr, "%s: reads: %s\n", CLI_PROGRAM, reads);
    if (r->engine == NULL && r->opened != NULL) { /* opened during the walk */
        fprintf(stderr, "%s: engine: %s; given nothing (nothing needed hashing)\n", CLI_PROGRAM,
                hb_engine_describe(r->opened));
        return;
    }
    if (r->engine == NULL) {
        fprintf(stderr, "%s: engine: not opened (nothing needed hashing)\n", CLI_PROGRAM);
        return;
    }
    fprintf(stderr, "%s: engine: %s\n", CLI_PROGRAM, hb_engine_describe(r->engine));
    hb_stats st;
    if (hb_engine_stats(r->engine, &st) != HB_OK)
        return;
    engine_report_origin(stderr, &st);
    engine_report_backends(stderr, &st);
}

/* The walk, run on a thread of its own. */
typedef struct {
    dd_run *r;
    char *const *roots;
    size_t n;
    int rc;
} scan_job;

static void *scan_thread(void *arg)
{
    scan_job *j = arg;
    j->rc = dd_scan(j->r, j->roots, j->n);
    return NULL;
}

/* scan_while_opening: walks the roots on another thread while this one
 * opens the engine (a pocl start takes a while); without a thread, or
 * when the engine is to open late, just walks (the engine then opens when
 * needed). Returns dd_scan's value. */
static int scan_while_opening(dd_run *r, char *const *roots, size_t n)
{
    if (r->open_late)
        return dd_scan(r, roots, n);
    scan_job j = {r, roots, n, 0};
    pthread_t th;
    if (pthread_create(&th, NULL, scan_thread, &j) != 0)
        return dd_scan(r, roots, n);
    dd_engine_open_now(r);
    if (dd_engine_bad_settings(r))
        atomic_store(&r->stop_scan, 1); /* a usage error: no need to finish */
    pthread_join(th, NULL);
    return j.rc;
}

int cmd_dedup(int argc, char **argv)
{
    dd_opts o;
    memset(&o, 0, sizeof o);
    o.batch_bytes = DEFAULT_BATCH_BYTES;
    cli_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    char **roots = NULL;
    size_t nroots = 0;
    int rc = parse(argc, argv, &o, &eo, &roots, &nroots);
    if (rc >= 0)
        return rc;
    hb_config cfg;
    rc = cli_engine_config(&eo, CMD, &cfg);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (o.merge)
        return cli_finish_stdout(dd_merge_main(&o, &cfg, roots, nroots));

    dd_run r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    r.cfg = &cfg;
    r.meter = progress_open(stderr, o.quiet);
    /* With the cache, a rescan may hash nothing, or a few changed files:
     * the engine opens only when needed, told that work, so that the
     * default route starts no device that would not pay (a pocl start is
     * a tenth of a second of CPU on the cores the walk uses). Only where
     * no backend or device was asked for: a named one must be checked
     * (a usage error) before the run. */
    r.open_late = o.use_cache && cfg.backend == HB_BACKEND_AUTO && cfg.device == NULL;
    dd_dirs_set_roots(&r, roots, nroots);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int scan_rc = scan_while_opening(&r, roots, nroots);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r.secs[0] = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if ((rc = dd_engine_usage_error(&r)) != 0) {
        progress_close(r.meter);
        dd_engine_stop(&r);
        dd_free(&r);
        return rc;
    }
    if (scan_rc != 0) {
        progress_close(r.meter);
        dd_engine_stop(&r);
        cli_error("%s", strerror(ENOMEM));
        dd_free(&r);
        return CLI_EXIT_FAILURE;
    }
    if (o.use_cache)
        dd_cache_begin(&r);
    rc = dd_find_groups(&r);
    if (rc == CLI_EXIT_OK && !r.fatal && o.dirs && dd_dirs_find(&r) != 0)
        rc = CLI_EXIT_FAILURE;
    progress_close(r.meter);
    if (rc == CLI_EXIT_OK && !r.fatal && o.index_out && dd_index_write(&r, o.index_out) != 0)
        rc = CLI_EXIT_FAILURE;
    if (rc == CLI_EXIT_OK && !r.fatal && o.action) {
        rc = dd_act(&r);
    } else if (rc == CLI_EXIT_OK && !r.fatal) {
        dd_print(&r);
        if (!o.quiet && o.format != DD_SUMMARY) {
            fflush(stdout);
            fprintf(stderr, "%s: ", CLI_PROGRAM);
            dd_print_summary(&r, stderr);
        }
        rc = r.skipped ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    } else {
        rc = CLI_EXIT_FAILURE;
    }
    if (o.verbose)
        report_stats(&r);
    if (o.use_cache)
        dd_cache_end(&r);
    dd_engine_stop(&r);
    dd_dirs_free(&r);
    dd_free(&r);
    return cli_finish_stdout(rc);
}
