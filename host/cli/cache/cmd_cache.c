/*
 * cmd_cache.c - `hashbatch cache stats|prune|clear [--cache-file PATH]`:
 * looks after the hash cache that `dedup --cache` and `sum --cache` fill
 * (hcache.c).
 *
 * Owns: the options, help and output of `cache`, and its exit status (1
 * when the cache cannot be opened or changed, 2 on a usage error).
 * Must not: touch the SQL (hcache.c does).
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hcache.h"

#define CMD "cache"

enum { OPT_CACHE_FILE = CLI_OPT_FIRST_LOCAL };

static void help(const char *action)
{
    if (action == NULL || strcmp(action, "stats") == 0)
        printf("Usage: %s " CMD " stats [--cache-file PATH]\n"
               "Print the hash cache's file, its entries, the bytes of the files they\n"
               "cover, how many hold a whole-file SHA-1 and a byte proof, its size on\n"
               "disk and its format version.\n",
               CLI_PROGRAM);
    if (action == NULL || strcmp(action, "prune") == 0)
        printf("Usage: %s " CMD " prune [--cache-file PATH]\n"
               "Drop the entries whose path no longer exists, or names a file whose\n"
               "filesystem, device, inode, size, modification or change time differ\n"
               "from the entry's; print how many were kept and dropped.\n",
               CLI_PROGRAM);
    if (action == NULL || strcmp(action, "clear") == 0)
        printf("Usage: %s " CMD " clear [--cache-file PATH]\n"
               "Delete every entry of the hash cache (the file stays, empty).\n",
               CLI_PROGRAM);
    if (action == NULL)
        printf("\nThe hash cache is filled by `dedup --cache` and `sum --cache`. By default\n"
               "it is $XDG_CACHE_HOME/hashbatch/hashes.sqlite (~/.cache/hashbatch/ when\n"
               "XDG_CACHE_HOME is unset); --cache-file PATH names another.\n\n"
               "Exit status: 0 on success, 1 if the cache cannot be opened or changed,\n"
               "2 on a usage error.\n");
}

/* do_stats: prints c's counts. Returns the exit status. */
static int do_stats(hcache *c)
{
    hc_stats s;
    if (hc_get_stats(c, &s) != 0) {
        cli_error("%s: %s", hc_path(c), hc_error(c));
        return CLI_EXIT_FAILURE;
    }
    printf("file: %s\n", hc_path(c));
    printf("entries: %" PRId64 "\n", s.entries);
    printf("bytes covered: %" PRId64 "\n", s.bytes);
    printf("whole-file digests: %" PRId64 "\n", s.with_full);
    printf("byte proofs: %" PRId64 "\n", s.with_proof);
    printf("size on disk: %" PRId64 "\n", s.file_bytes);
    printf("format: %s version %d\n", HC_FORMAT, s.version);
    return CLI_EXIT_OK;
}

/* do_change: prune or clear. Returns the exit status. */
static int do_change(hcache *c, int prune)
{
    int64_t kept = 0, dropped = 0;
    int rc = prune ? hc_prune(c, &kept, &dropped) : hc_clear(c, &dropped);
    if (rc != 0) {
        cli_error("%s: %s", hc_path(c), hc_error(c));
        return CLI_EXIT_FAILURE;
    }
    if (prune)
        printf("%" PRId64 " entries kept, %" PRId64 " dropped\n", kept, dropped);
    else
        printf("%" PRId64 " entries dropped\n", dropped);
    return CLI_EXIT_OK;
}

/* parse: the action and --cache-file. Returns -1 to go on, else the exit
 * status. */
static int parse(int argc, char **argv, const char **action, const char **file)
{
    static const struct option longopts[] = {
        {"cache-file", required_argument, NULL, OPT_CACHE_FILE},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {NULL, 0, NULL, 0}};
    int c, want_help = 0;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == OPT_CACHE_FILE)
            *file = optarg;
        else if (c == 'h' || c == CLI_OPT_HELP)
            want_help = 1;
        else
            return cli_getopt_error(CMD, c, argv);
    }
    *action = optind < argc ? argv[optind] : NULL;
    if (want_help) {
        help(*action != NULL && (strcmp(*action, "stats") == 0 || strcmp(*action, "prune") == 0 ||
                                 strcmp(*action, "clear") == 0)
                 ? *action
                 : NULL);
        return cli_finish_stdout(CLI_EXIT_OK);
    }
    if (*action == NULL)
        return cli_usage_error(CMD, "missing action: stats, prune or clear");
    if (strcmp(*action, "stats") != 0 && strcmp(*action, "prune") != 0 &&
        strcmp(*action, "clear") != 0)
        return cli_usage_error(CMD, "unknown action '%s': stats, prune or clear", *action);
    if (optind + 1 < argc)
        return cli_usage_error(CMD, "extra operand '%s'", argv[optind + 1]);
    return -1;
}

int cmd_cache(int argc, char **argv)
{
    const char *action = NULL, *file = NULL;
    int rc = parse(argc, argv, &action, &file);
    if (rc >= 0)
        return rc;
    char path[PATH_MAX], err[HC_ERR_MAX];
    if (file == NULL && hc_default_path(path, sizeof path, 0, err, sizeof err) != 0) {
        cli_error("hash cache: %s", err);
        return CLI_EXIT_FAILURE;
    }
    if (file != NULL)
        snprintf(path, sizeof path, "%s", file);
    hcache *c = NULL;
    if (hc_open(path, 0, &c, err, sizeof err) != 0) {
        cli_error("%s: hash cache: %s", path, err);
        return CLI_EXIT_FAILURE;
    }
    rc = strcmp(action, "stats") == 0 ? do_stats(c) : do_change(c, strcmp(action, "prune") == 0);
    hc_close(c);
    return cli_finish_stdout(rc);
}
