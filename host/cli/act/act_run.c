/*
 * act_run.c - carrying out a plan: for each group the keep rule picks
 * the file that stays; every other file of the group is checked again
 * (act_check.c: the file of the scan, unchanged, equal byte for byte to
 * the kept one, or FIDEDUPERANGE's own comparison for --reflink) and
 * then replaced atomically (act_ops.c) or removed. Each outcome is one
 * line on stdout (done, already done, would be done) or stderr (skipped,
 * failed) and one line of the log.
 *
 * A rerun of the same plan finds what an earlier run did (a name that is
 * already a hard or symbolic link to the kept file, a file that already
 * shares all its extents with it, a removed name) and counts it as
 * already done, so an interrupted run is resumed by running it again.
 *
 * Owns: the order of the checks and the messages. Must not: parse
 * options (cmd_link.c, dedup_action.c) or exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "act.h"
#include "cli.h"

typedef struct {
    const act_opts *o;
    act_log *log;
    int log_failed;
    uint64_t done, already, skipped, failed, planned, bytes;
} run_state;

/* One pair of a group being acted on. */
typedef struct {
    const act_group *g;
    const act_file *kept;
    act_open_file *kept_open;
    const act_file *other;
    act_open_file other_open;
} pair;

/* errno_text: e with its symbolic name where a reflink needs one. */
static const char *errno_text(int e, char *buf, size_t cap)
{
    const char *name = e == EOPNOTSUPP ? "EOPNOTSUPP"
                       : e == EXDEV    ? "EXDEV"
                       : e == EINVAL   ? "EINVAL"
                       : e == ENOTTY   ? "ENOTTY"
                       : e == ENOSYS   ? "ENOSYS"
                                       : NULL;
    if (name)
        snprintf(buf, cap, "%s (%s)", strerror(e), name);
    else
        snprintf(buf, cap, "%s", strerror(e));
    return buf;
}

static void log_line(run_state *s, const pair *pr, const char *status, const char *reason,
                     const char *temp)
{
    if (act_log_write(s->log, s->o->kind, pr->other->path, pr->kept ? pr->kept->path : NULL, status,
                      reason, temp) != 0 &&
        !s->log_failed) {
        s->log_failed = 1;
        cli_error("%s: %s: the log cannot be written: %s", s->o->cmd, s->o->log_path,
                  strerror(errno));
    }
}

/* say: "VERB: PATH -> KEPT" on stdout. */
static void say(const char *verb, const pair *pr, act_kind kind)
{
    printf("%s: ", verb);
    cli_quote_name(stdout, pr->other->path);
    fputs(kind == ACT_REMOVE ? " (a copy of " : " -> ", stdout);
    cli_quote_name(stdout, pr->kept->path);
    fputs(kind == ACT_REMOVE ? ")\n" : "\n", stdout);
}

/* outcome: records how pair pr ended: status as in the log. */
static void outcome(run_state *s, const pair *pr, const char *status, const char *reason)
{
    static const char *const done_verb[] = {"hard-linked", "reflinked", "symlinked", "removed"};
    static const char *const plan_verb[] = {"would hard-link", "would reflink", "would symlink",
                                            "would remove"};
    act_kind k = s->o->kind;
    log_line(s, pr, status, reason, NULL);
    if (strcmp(status, "done") == 0) {
        s->done++;
        s->bytes += pr->g->size;
        say(done_verb[k], pr, k);
    } else if (strcmp(status, "planned") == 0) {
        s->planned++;
        s->bytes += pr->g->size;
        say(plan_verb[k], pr, k);
    } else if (strcmp(status, "already") == 0) {
        s->already++;
        printf("already done (%s): ", reason);
        cli_quote_name(stdout, pr->other->path);
        putchar('\n');
    } else {
        if (strcmp(status, "skipped") == 0)
            s->skipped++;
        else
            s->failed++;
        fflush(stdout);
        fprintf(stderr, "%s: ", CLI_PROGRAM);
        cli_quote_name(stderr, pr->other->path);
        fprintf(stderr, ": %s: %s\n", status, reason);
    }
}

static void outcome_errno(run_state *s, const pair *pr, const char *what, int e)
{
    char buf[160], text[240];
    snprintf(text, sizeof text, "%s: %s", what, errno_text(e, buf, sizeof buf));
    outcome(s, pr, "failed", text);
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* already_done: has an earlier run (or the user) done pr already? Sets
 * *reason when so. Returns 1 done, 0 not, -1 when the path cannot be
 * looked at (reported). */
static int already_done(run_state *s, pair *pr, const char **reason)
{
    struct stat ls, ts;
    const act_kind k = s->o->kind;
    if (lstat(pr->other->path, &ls) != 0) {
        if (errno == ENOENT && k == ACT_REMOVE) {
            *reason = "removed before";
            return 1;
        }
        outcome_errno(s, pr, "cannot be looked at", errno);
        return -1;
    }
    if (same_file(&ls, &pr->kept_open->st)) {
        *reason = "a hard link of the kept file";
        return 1;
    }
    if (S_ISLNK(ls.st_mode) && k == ACT_SYMLINK && stat(pr->other->path, &ts) == 0 &&
        same_file(&ts, &pr->kept_open->st)) {
        *reason = "a symbolic link to the kept file";
        return 1;
    }
    if (k == ACT_REFLINK && S_ISREG(ls.st_mode) && (uint64_t)ls.st_size == pr->g->size) {
        int fd = open(pr->other->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        int shared = fd >= 0 && act_shares_extents(pr->kept_open->fd, fd, pr->g->size);
        if (fd >= 0)
            close(fd);
        if (shared) {
            *reason = "shares all its extents with the kept file";
            return 1;
        }
    }
    return 0;
}

/* compare: the byte proof for pr. Returns 1 equal, else 0 (reported). */
static int compare(run_state *s, pair *pr)
{
    int eq = act_same_bytes(pr->kept_open->fd, pr->other_open.fd, pr->g->size);
    if (eq < 0) {
        outcome_errno(s, pr, "cannot be read", errno);
        return 0;
    }
    if (eq == 0) {
        outcome(s, pr, "skipped",
                "its bytes differ from the kept file's (a SHA-1 collision, or changed)");
        return 0;
    }
    if (!act_same_content(pr->kept->path, pr->kept_open) ||
        !act_unchanged(pr->other->path, &pr->other_open)) {
        outcome(s, pr, "skipped", "changed while it was compared");
        return 0;
    }
    return 1;
}

/* dedupe_in_place: --reflink by FIDEDUPERANGE. Returns 1 when finished
 * (reported), 0 to fall back to FICLONE after a comparison. */
static int dedupe_in_place(run_state *s, pair *pr)
{
    if (act_shares_extents(pr->kept_open->fd, pr->other_open.fd, pr->g->size)) {
        outcome(s, pr, "already", "shares all its extents with the kept file");
        return 1;
    }
    int r = act_dedupe_range(pr->kept_open->fd, pr->other_open.fd, pr->g->size);
    if (r == 1) {
        outcome(s, pr, "done", NULL);
        return 1;
    }
    if (r == 0) {
        outcome(s, pr, "skipped",
                "the kernel found its bytes differ from the kept file's (a SHA-1 collision, "
                "or changed)");
        return 1;
    }
    if (errno == EPERM || errno == EACCES || errno == EBADF || errno == ETXTBSY)
        return 0;
    outcome_errno(s, pr,
                  act_reflink_unsupported(errno)
                      ? "cannot be reflinked: the filesystem does not share extents here"
                      : "cannot be reflinked",
                  errno);
    return 1;
}

/* replace: makes the link at the temporary name and renames it over. */
static void replace(run_state *s, pair *pr)
{
    const act_kind k = s->o->kind;
    const char *why = NULL;
    char *target = NULL, *tmp = act_temp_name(pr->other->path);
    if (tmp == NULL || (k == ACT_SYMLINK &&
                        (target = act_symlink_target(pr->kept->path, pr->other->path)) == NULL)) {
        outcome_errno(s, pr, "cannot be replaced", errno ? errno : ENOMEM);
        goto out;
    }
    if (act_drop_leftover(tmp, k, pr->kept_open, &pr->other_open, target, pr->g->size) != 0) {
        outcome(s, pr, "skipped", "its temporary name (.NAME.hashbatch-tmp) is taken");
        goto out;
    }
    log_line(s, pr, "begin", NULL, tmp);
    int rc = k == ACT_HARD ? act_replace_hard(pr->kept->path, pr->kept_open, pr->other->path,
                                              &pr->other_open, tmp, &why)
             : k == ACT_SYMLINK
                 ? act_replace_symlink(target, pr->kept_open, pr->other->path, &pr->other_open, tmp,
                                       &why)
                 : act_replace_clone(pr->kept_open, pr->other->path, &pr->other_open, tmp, &why);
    if (rc == 0)
        outcome(s, pr, "done", NULL);
    else if (why)
        outcome(s, pr, "skipped", why);
    else if (k == ACT_REFLINK && act_reflink_unsupported(errno))
        outcome_errno(s, pr, "cannot be reflinked: the filesystem does not share extents here",
                      errno);
    else
        outcome_errno(s, pr, "cannot be replaced", errno);
out:
    free(tmp);
    free(target);
}

/* act_pair: checks pr again and acts on it. */
static void act_pair(run_state *s, pair *pr)
{
    const char *reason = NULL;
    int err_no;
    int d = already_done(s, pr, &reason);
    if (d != 0) {
        if (d > 0)
            outcome(s, pr, "already", reason);
        return;
    }
    if (act_open_checked(pr->other, pr->g->size, &pr->other_open, &reason, &err_no) != 0) {
        if (reason)
            outcome(s, pr, "skipped", reason);
        else
            outcome_errno(s, pr, "cannot be opened", err_no);
        return;
    }
    if (s->o->kind == ACT_REFLINK && !s->o->clone_only && !s->o->dry_run && dedupe_in_place(s, pr))
        goto out;
    if (!compare(s, pr))
        goto out;
    if (s->o->dry_run)
        outcome(s, pr, "planned", NULL);
    else if (s->o->kind == ACT_REMOVE) {
        const char *why;
        if (act_remove_checked(pr->other->path, &pr->other_open, &why) == 0)
            outcome(s, pr, "done", NULL);
        else if (why)
            outcome(s, pr, "skipped", why);
        else
            outcome_errno(s, pr, "cannot be removed", errno);
    } else
        replace(s, pr);
out:
    act_close(&pr->other_open);
}

/* skip_group: every file of g but kept is skipped for reason. */
static void skip_group(run_state *s, const act_plan *p, const act_group *g, long kept,
                       const char *reason)
{
    for (size_t i = 0; i < g->n; i++) {
        if ((long)i == kept)
            continue;
        pair pr = {g,
                   kept >= 0 ? &p->files[g->first + (size_t)kept] : NULL,
                   NULL,
                   &p->files[g->first + i],
                   {-1, {0}}};
        outcome(s, &pr, "skipped", reason);
    }
}

/* act_group: one group of the plan. */
static void act_group_run(run_state *s, const act_plan *p, const act_group *g)
{
    if (g->n < 2)
        return;
    long ki = act_keep_choose(p, g, &s->o->keep);
    if (ki < 0 && s->o->keep.kind == KEEP_PATH) {
        fflush(stdout);
        fprintf(stderr, "%s: group of ", CLI_PROGRAM);
        cli_quote_name(stderr, p->files[g->first].path);
        fprintf(stderr, ": no file under '%s' to keep: group left alone\n", s->o->keep.prefix);
        return;
    }
    if (ki < 0) {
        skip_group(s, p, g, -1, "no file of its group has a modification time to keep by");
        return;
    }
    const act_file *kept = &p->files[g->first + (size_t)ki];
    act_open_file ko = {-1, {0}};
    const char *why;
    int err_no;
    if (act_open_checked(kept, g->size, &ko, &why, &err_no) != 0) {
        char text[300];
        snprintf(text, sizeof text, "the file to keep, %s: %s", kept->path,
                 why ? why : strerror(err_no));
        skip_group(s, p, g, ki, text);
        return;
    }
    for (size_t i = 0; i < g->n; i++) {
        if ((long)i == ki)
            continue;
        pair pr = {g, kept, &ko, &p->files[g->first + i], {-1, {0}}};
        act_pair(s, &pr);
    }
    act_close(&ko);
}

/* totals: the one-line summary on stderr. */
static void totals(const run_state *s)
{
    fflush(stdout);
    if (s->o->dry_run)
        fprintf(stderr,
                "%s: %s: dry run: %" PRIu64 " would be done (%" PRIu64 " bytes), %" PRIu64
                " already done, %" PRIu64 " would be skipped, %" PRIu64 " failed\n",
                CLI_PROGRAM, s->o->cmd, s->planned, s->bytes, s->already, s->skipped, s->failed);
    else
        fprintf(stderr,
                "%s: %s: %" PRIu64 " done (%" PRIu64 " bytes), %" PRIu64 " already done, %" PRIu64
                " skipped, %" PRIu64 " failed\n",
                CLI_PROGRAM, s->o->cmd, s->done, s->bytes, s->already, s->skipped, s->failed);
}

int act_run(const act_plan *p, const act_opts *o)
{
    run_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    if (o->log_path && (s.log = act_log_open(o->log_path)) == NULL) {
        cli_error_path(o->log_path, errno);
        return CLI_EXIT_FAILURE;
    }
    for (size_t g = 0; g < p->ngroups; g++)
        act_group_run(&s, p, &p->groups[g]);
    if (act_log_close(s.log) != 0 && !s.log_failed) {
        s.log_failed = 1;
        cli_error_path(o->log_path, errno);
    }
    totals(&s);
    int rc = s.skipped || s.failed || s.log_failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    return cli_finish_stdout(rc);
}
