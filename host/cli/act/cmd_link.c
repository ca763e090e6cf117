/*
 * cmd_link.c - `hashbatch link --hard|--reflink|--symlink [OPTION]...
 * PLAN.json` and `hashbatch remove [OPTION]... PLAN.json`: act on the
 * groups a `dedup --json` run found.
 *
 * Owns: the options, the help and the exit status of both commands.
 * Must not: read the plan or touch files itself (act_plan.c, act_run.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act.h"
#include "cli.h"

enum { OPT_HARD = CLI_OPT_FIRST_LOCAL, OPT_REFLINK, OPT_SYMLINK, OPT_KEEP, OPT_DRY_RUN, OPT_LOG };

static void help_common(void)
{
    printf("\nThe plan is what `%s dedup --json` printed (\"-\": read it from stdin);\n"
           "its paths are used as written, so run from the directory the scan ran in.\n"
           "Each file is reached beneath the folder the scan started from (the plan's\n"
           "\"roots\", which must still be the folders scanned) with no symbolic link\n"
           "followed, and checked and changed through its folder's descriptor: a\n"
           "folder replaced by a symbolic link meanwhile is skipped, never followed.\n"
           "Files on another host (a merged plan) are skipped.\n"
           "A plan that is not JSON or lacks what is needed is refused whole, with\n"
           "the place that is wrong, and nothing is done.\n\n"
           "  --keep RULE    which file of each group stays:\n"
           "                   first      the first in the plan (the default)\n"
           "                   oldest     the oldest modification time\n"
           "                   newest     the newest modification time\n"
           "                              (ties: the first in the plan; times from the\n"
           "                              plan's mtime_ns, else from the file now)\n"
           "                   path=DIR   the first file at or under DIR; a group\n"
           "                              with none there is left alone (a message\n"
           "                              says so; it does not make the run partial)\n"
           "  -n, --dry-run  print what would be done (after the same checks and\n"
           "                 comparisons) and change nothing\n"
           "      --log FILE append a JSON line per step to FILE, flushed as it\n"
           "                 happens: {\"time\", \"action\", \"path\", \"kept\", \"status\":\n"
           "                 begin|done|already|skipped|failed|planned, \"reason\",\n"
           "                 \"temp\"}; by default there is no log file, only the\n"
           "                 lines on stdout and stderr\n"
           "  -h, --help     print this help and exit\n\n"
           "Before each file is touched it is checked again: it and the kept file\n"
           "must still be the regular files of the scan (device, inode, size, and\n"
           "mtime when the plan has it) and equal byte for byte. A file that changed,\n"
           "or whose bytes differ (two files with one SHA-1: a collision), is\n"
           "skipped with a message. A name that already is a link to the kept file\n"
           "(a hard link, a symbolic link, shared extents) or, for remove, is gone,\n"
           "is counted as already done: running a plan again resumes it.\n\n"
           "Exit status: 0 when every duplicate is done or was already, 1 when\n"
           "something was skipped or failed or the plan could not be read, 2 on a\n"
           "usage error.\n",
           CLI_PROGRAM);
}

static void help_link(void)
{
    printf("Usage: %s link --hard|--reflink|--symlink [OPTION]... PLAN.json\n"
           "Replace every duplicate in the plan by a link to the file its group keeps.\n\n"
           "  --hard         a hard link (the kept inode: its mode, owner and times)\n"
           "  --reflink      a copy that shares the kept file's extents (XFS with\n"
           "                 reflink, btrfs): FIDEDUPERANGE, which compares the bytes\n"
           "                 in the kernel and shares them in place (the file keeps\n"
           "                 its inode, mode, owner and times); where that is refused\n"
           "                 for permissions, a comparison and then a FICLONE copy\n"
           "                 given the replaced file's mode, owner and times\n"
           "                 (without root, another user's file is left alone:\n"
           "                 its owner could not be kept). A\n"
           "                 filesystem without extent sharing is an error naming\n"
           "                 the cause (EOPNOTSUPP, EXDEV, EINVAL); the file is left\n"
           "                 alone. HASHBATCH_REFLINK=clone forces the FICLONE way.\n"
           "  --symlink      a symbolic link with a relative target (between the\n"
           "                 plan's paths below their root, or between the two\n"
           "                 folders as resolved when the roots differ), so a tree\n"
           "                 moved as a whole stays linked; it gets the replaced\n"
           "                 file's owner and times\n\n"
           "Each link is made at a fresh temporary name in the duplicate's folder\n"
           "(.hashbatch-RUN-N.tmp) and exchanged with it (RENAME_EXCHANGE); the\n"
           "duplicate, now at the temporary name, is compared byte for byte with\n"
           "the kept file and removed, or exchanged back: the name is at every\n"
           "moment either the duplicate or the finished link. Temporaries left by\n"
           "an interrupted run are settled by the next run in the folders it\n"
           "visits, or reported and left as they are.\n",
           CLI_PROGRAM);
    help_common();
}

static void help_remove(void)
{
    printf("Usage: %s remove [OPTION]... PLAN.json\n"
           "Delete every duplicate in the plan, keeping one file of each group. A\n"
           "duplicate is first renamed to a fresh temporary name in its folder,\n"
           "shown there to be the file of the scan and equal byte for byte to the\n"
           "kept one, and only then deleted (else renamed back). Names that are\n"
           "hard links of the kept file are left alone.\n",
           CLI_PROGRAM);
    help_common();
}

/* set_kind: one of --hard, --reflink, --symlink. */
static int set_kind(act_opts *o, int *given, act_kind k)
{
    if (*given && o->kind != k)
        return cli_usage_error(o->cmd, "choose one of --hard, --reflink and --symlink");
    *given = 1;
    o->kind = k;
    return -1;
}

/* parse: the options of link (is_link) or remove; *plan the operand.
 * Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, int is_link, act_opts *o, const char **plan)
{
    static const struct option link_opts[] = {
        {"hard", no_argument, NULL, OPT_HARD},       {"reflink", no_argument, NULL, OPT_REFLINK},
        {"symlink", no_argument, NULL, OPT_SYMLINK}, {"keep", required_argument, NULL, OPT_KEEP},
        {"dry-run", no_argument, NULL, OPT_DRY_RUN}, {"log", required_argument, NULL, OPT_LOG},
        {"help", no_argument, NULL, CLI_OPT_HELP},   {NULL, 0, NULL, 0}};
    const struct option *longopts = is_link ? link_opts : link_opts + 3;
    int c, given = 0, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":nh", longopts, NULL)) != -1) {
        rc = -1;
        switch (c) {
        case OPT_HARD:
            rc = set_kind(o, &given, ACT_HARD);
            break;
        case OPT_REFLINK:
            rc = set_kind(o, &given, ACT_REFLINK);
            break;
        case OPT_SYMLINK:
            rc = set_kind(o, &given, ACT_SYMLINK);
            break;
        case OPT_KEEP:
            if (act_keep_parse(optarg, &o->keep) != 0)
                return cli_usage_error(o->cmd,
                                       "invalid rule '%s' for '--keep' (first, oldest, newest "
                                       "or path=PREFIX)",
                                       optarg);
            break;
        case 'n':
        case OPT_DRY_RUN:
            o->dry_run = 1;
            break;
        case OPT_LOG:
            o->log_path = optarg;
            break;
        case 'h':
        case CLI_OPT_HELP:
            is_link ? help_link() : help_remove();
            return cli_finish_stdout(CLI_EXIT_OK);
        default:
            return cli_getopt_error(o->cmd, c, argv);
        }
        if (rc >= 0)
            return rc;
    }
    if (is_link && !given)
        return cli_usage_error(o->cmd, "choose one of --hard, --reflink and --symlink");
    if (optind >= argc)
        return cli_usage_error(o->cmd, "missing plan operand (a `dedup --json` report)");
    if (argc - optind > 1)
        return cli_usage_error(o->cmd, "extra operand '%s'", argv[optind + 1]);
    *plan = argv[optind];
    return -1;
}

/* run: loads the plan and acts on it. */
static int run(const act_opts *o, const char *name)
{
    act_plan p;
    memset(&p, 0, sizeof p);
    char err[512];
    if (act_plan_load(&p, name, err, sizeof err) != 0) {
        fflush(stdout);
        fprintf(stderr, "%s: ", CLI_PROGRAM);
        cli_quote_name(stderr, strcmp(name, "-") == 0 ? "(stdin)" : name);
        fprintf(stderr, ": %s; nothing was done\n", err);
        return CLI_EXIT_FAILURE;
    }
    int rc = act_run(&p, o);
    act_plan_free(&p);
    return rc;
}

/* act_main: link (is_link) or remove. */
static int act_main(int argc, char **argv, int is_link)
{
    act_opts o;
    memset(&o, 0, sizeof o);
    o.cmd = is_link ? "link" : "remove";
    o.kind = ACT_REMOVE;
    const char *env = getenv("HASHBATCH_REFLINK");
    o.clone_only = env != NULL && strcmp(env, "clone") == 0;
    const char *plan = NULL;
    int rc = parse(argc, argv, is_link, &o, &plan);
    if (rc >= 0)
        return rc;
    return run(&o, plan);
}

int cmd_link(int argc, char **argv)
{
    return act_main(argc, argv, 1);
}

int cmd_remove(int argc, char **argv)
{
    return act_main(argc, argv, 0);
}
