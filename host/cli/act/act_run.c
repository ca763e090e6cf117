/*
 * act_run.c - carrying out a plan: for each group the keep rule picks
 * the file that stays; every other file of the group is reached beneath
 * its root (places.c), checked again (act_check.c: the file of the scan,
 * not on another host, not the kept file seen through another mount),
 * moved out of its name (act_ops.c: exchanged with the new link, or
 * renamed to a private name for remove), proven equal byte for byte to
 * the kept one where it now is, and then deleted, or put back; for
 * --reflink, FIDEDUPERANGE compares and shares in place. Each outcome is
 * one line on stdout (done, already done, would be done) or stderr
 * (skipped, failed) and one line of the log.
 *
 * A rerun of the same plan finds what an earlier run did (a name that is
 * already a hard or symbolic link to the kept file, a file that already
 * shares all its extents with it, a removed name) and counts it as
 * already done, and settles what an interrupted run left in the folders
 * it visits (act_temp.c lists them; settle_one says what is whose).
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
#include "beneath.h"
#include "cli.h"
#include "fs_id.h"
#include "places.h"

typedef struct {
    const act_opts *o;
    const act_plan *plan;
    places *places;
    act_temps *temps;
    /* The folder of the last duplicate reached: the duplicates of a plan
     * come folder by folder, so each folder is resolved once for a run of
     * them (and stays the folder resolved, whatever is renamed later:
     * every file in it is still checked against the plan by identity). */
    bn_memo folder;
    act_log *log;
    int log_failed;
    uint64_t done, already, skipped, failed, planned, bytes, cleaned;
} run_state;

/* One pair of a group being acted on. */
typedef struct {
    const act_group *g;
    const act_file *kept;
    act_open_file *kept_open;
    const act_file *other;
    act_open_file other_open;
    int own_dir; /* other_open.dir is the pair's own, not s->folder's */
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

/* say_path: "VERB: DIR/NAME" on stdout, for the run's own housekeeping. */
static void say_path(const char *verb, const char *dir, const char *name)
{
    printf("%s: ", verb);
    size_t n = strlen(dir) + strlen(name) + 2;
    char *full = malloc(n);
    if (full != NULL) {
        snprintf(full, n, "%s/%s", dir, name);
        cli_quote_name(stdout, full);
    }
    free(full);
    putchar('\n');
}

/* already_done: has an earlier run (or the user) done pr already? Sets
 * *reason when so. Returns 1 done, 0 not, -1 when the name cannot be
 * looked at (reported). All on the folder's descriptor. */
static int already_done(run_state *s, pair *pr, const char **reason, struct stat *now)
{
    struct stat ls;
    const act_kind k = s->o->kind;
    const act_open_file *o = &pr->other_open;
    if (fstatat(o->dir, o->leaf, &ls, AT_SYMLINK_NOFOLLOW) != 0) {
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
    if (S_ISLNK(ls.st_mode) && k == ACT_SYMLINK && act_leads_to(o->dir, o->leaf, pr->kept_open)) {
        *reason = "a symbolic link to the kept file";
        return 1;
    }
    if (k == ACT_REFLINK && S_ISREG(ls.st_mode) && pr->g->size == 0) {
        *reason = "empty: there are no extents to share";
        return 1;
    }
    if (k == ACT_REFLINK && S_ISREG(ls.st_mode) && (uint64_t)ls.st_size == pr->g->size) {
        int fd = openat(o->dir, o->leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        int shared = fd >= 0 && act_shares_extents(pr->kept_open->fd, fd, pr->g->size);
        if (fd >= 0)
            close(fd);
        if (shared) {
            *reason = "shares all its extents with the kept file";
            return 1;
        }
    }
    *now = ls;
    return 0;
}

/* one_file_twice: is the name (as st shows it) the kept file itself,
 * seen through another mount (overlayfs shows a lower file under its own
 * device)? */
static int one_file_twice(const pair *pr, const struct stat *st)
{
    const struct stat *k = &pr->kept_open->st;
    return st->st_dev != k->st_dev && fs_id_one_file(st->st_dev, st->st_ino, k->st_dev, k->st_ino);
}

/* compare: the byte proof for pr, on the descriptors, and shown to hold
 * while it ran; moved is the duplicate's stat just before (NULL: taken
 * here). Returns 1 equal, else 0 (reported). */
static int compare(run_state *s, pair *pr, const struct stat *moved)
{
    struct stat before, after;
    if (moved != NULL)
        before = *moved; /* what the move's check saw: the file now */
    else if (fstat(pr->other_open.fd, &before) != 0) {
        outcome_errno(s, pr, "cannot be read", errno);
        return 0;
    }
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
    const struct stat *o = &pr->other_open.st; /* as opened */
    if (!act_same_content(pr->kept_open) || fstat(pr->other_open.fd, &after) != 0 ||
        after.st_size != o->st_size || after.st_mtim.tv_sec != o->st_mtim.tv_sec ||
        after.st_mtim.tv_nsec != o->st_mtim.tv_nsec ||
        after.st_ctim.tv_sec != before.st_ctim.tv_sec ||
        after.st_ctim.tv_nsec != before.st_ctim.tv_nsec) {
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

/* failed_op: reports a step that failed with *why or errno. */
static void failed_op(run_state *s, pair *pr, const char *why, const char *what)
{
    if (why)
        outcome(s, pr, "skipped", why);
    else if (s->o->kind == ACT_REFLINK && act_reflink_unsupported(errno))
        outcome_errno(s, pr, "cannot be reflinked: the filesystem does not share extents here",
                      errno);
    else
        outcome_errno(s, pr, what, errno);
}

/* remove_one: hides the duplicate under a temporary name, proves its
 * bytes there, then removes it, or puts it back. */
static void remove_one(run_state *s, pair *pr)
{
    char tmp[ACT_TEMP_CAP];
    const char *why;
    struct stat moved;
    if (act_hide(s->temps, &pr->other_open, tmp, &moved, &why) != 0) {
        failed_op(s, pr, why, "cannot be removed");
        return;
    }
    log_line(s, pr, "begin", NULL, tmp);
    if (!compare(s, pr, &moved)) {
        if (act_unhide(&pr->other_open, tmp) != 0)
            outcome_errno(s, pr, "cannot be put back from its temporary name", errno);
        return;
    }
    if (act_commit(&pr->other_open, tmp, &why) == 0)
        outcome(s, pr, "done", NULL);
    else
        failed_op(s, pr, why, "cannot be removed");
}

/* symlink_target: the target of the symbolic link replacing pr's
 * duplicate. Below one root, from the plan's paths: nothing there is a
 * symbolic link, and the names of folders above may change while the
 * run goes on (a root exchanged with a link). Across roots, from the
 * kernel's names of the two folders, both resolved. */
static char *symlink_target(run_state *s, const pair *pr)
{
    size_t kr, orr;
    long ki = places_root_of(s->places, pr->kept->path, &kr);
    long oi = places_root_of(s->places, pr->other->path, &orr);
    if (ki >= 0 && ki == oi)
        return act_symlink_target_below(pr->kept->path + kr, pr->other->path + orr);
    return act_symlink_target(pr->kept_open->dir, pr->kept_open->leaf, pr->other_open.dir);
}

/* replace: makes the link at a fresh temporary name, exchanges it with
 * the duplicate, proves the duplicate's bytes, then removes it, or
 * exchanges back. */
static void replace(run_state *s, pair *pr)
{
    const act_kind k = s->o->kind;
    const char *why = NULL;
    char tmp[ACT_TEMP_CAP], *target = NULL;
    struct stat made;
    if (k == ACT_SYMLINK && (target = symlink_target(s, pr)) == NULL) {
        outcome_errno(s, pr, "cannot be replaced", errno ? errno : ENOMEM);
        return;
    }
    if (act_make_link(k, s->temps, pr->kept_open, &pr->other_open, target, tmp, &made, &why) != 0) {
        failed_op(s, pr, why, "cannot be replaced");
        goto out;
    }
    log_line(s, pr, "begin", NULL, tmp);
    struct stat moved;
    if (act_swap_in(&pr->other_open, &made, tmp, &moved, &why) != 0)
        failed_op(s, pr, why, "cannot be replaced");
    else if (!compare(s, pr, &moved)) {
        if (act_undo_swap(&pr->other_open, &made, tmp) != 0)
            outcome_errno(s, pr, "cannot be put back from its temporary name", errno);
    } else if (act_commit(&pr->other_open, tmp, &why) == 0)
        outcome(s, pr, "done", NULL);
    else
        failed_op(s, pr, why, "cannot be replaced");
out:
    free(target);
}

/* open_leftover: the leftover l open read-only, or -1. */
static int open_leftover(const act_leftover *l)
{
    return openat(l->dir, l->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

/* leftover_equal: does leftover l hold the kept file's bytes? */
static int leftover_equal(const act_leftover *l, const pair *pr, const struct stat *st)
{
    if ((uint64_t)st->st_size != pr->g->size)
        return 0;
    int fd = open_leftover(l);
    int eq = fd >= 0 && act_same_bytes(pr->kept_open->fd, fd, pr->g->size) == 1;
    if (fd >= 0)
        close(fd);
    return eq;
}

/* restore_duplicate: the duplicate of pr, moved to leftover l by an
 * interrupted run, put back where the scan saw it: renamed back to a
 * free name, or exchanged with the link that took its name. */
static int restore_duplicate(const act_leftover *l, const pair *pr)
{
    const act_open_file *o = &pr->other_open;
    if (renameat2(l->dir, l->name, o->dir, o->leaf, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EEXIST || !act_leads_to(o->dir, o->leaf, pr->kept_open) ||
        renameat2(l->dir, l->name, o->dir, o->leaf, RENAME_EXCHANGE) != 0)
        return -1;
    return act_leads_to(l->dir, l->name, pr->kept_open) ? unlinkat(l->dir, l->name, 0) : 0;
}

/* settle_duplicate: leftover l is pr's duplicate itself. Returns 1
 * settled (removed or put back), 0 not. */
static int settle_duplicate(run_state *s, const act_leftover *l, const pair *pr,
                            const struct stat *st)
{
    const act_open_file *o = &pr->other_open;
    struct stat now;
    int name_free = fstatat(o->dir, o->leaf, &now, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
    int name_linked = !name_free && act_leads_to(o->dir, o->leaf, pr->kept_open);
    int equal = leftover_equal(l, pr, st);
    if (equal && (name_linked || (name_free && s->o->kind == ACT_REMOVE)))
        return unlinkat(l->dir, l->name, 0) == 0; /* the interrupted action, finished */
    if (name_free || name_linked)
        return restore_duplicate(l, pr) == 0;
    return 0;
}

/* settle_one: settles leftover l if it belongs to pr. 1 settled, 0 not,
 * -1 gone already (settled under another name of its folder). */
static int settle_one(run_state *s, const act_leftover *l, const pair *pr)
{
    struct stat st;
    if (fstatat(l->dir, l->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? -1 : 0;
    const struct stat *k = &pr->kept_open->st;
    if (same_file(&st, k) || (S_ISLNK(st.st_mode) && act_leads_to(l->dir, l->name, pr->kept_open)))
        return unlinkat(l->dir, l->name, 0) == 0; /* a link to the kept file */
    if (!S_ISREG(st.st_mode))
        return 0;
    if ((uint64_t)st.st_dev == pr->other->dev && (uint64_t)st.st_ino == pr->other->ino)
        return settle_duplicate(s, l, pr, &st);
    if (st.st_nlink == 1 && (st.st_size == 0 || leftover_equal(l, pr, &st)))
        return unlinkat(l->dir, l->name, 0) == 0; /* a copy of the kept file */
    return 0;
}

/* settle_leftovers: what interrupted runs left in pr's folder that is
 * pr's to settle. */
static void settle_leftovers(run_state *s, pair *pr)
{
    size_t n;
    act_leftover *l = act_temps_in(s->temps, pr->other_open.dir, &n);
    for (size_t i = 0; i < n; i++) {
        if (l[i].settled || s->o->dry_run)
            continue;
        int r = settle_one(s, &l[i], pr);
        l[i].settled = r != 0;
        if (r <= 0)
            continue;
        s->cleaned++;
        say_path("cleaned up a temporary of an interrupted run", l[i].dir_path, l[i].name);
    }
}

/* report_leftovers: the temporaries no pair of the plan settled. */
static void report_leftovers(run_state *s)
{
    size_t n;
    act_leftover *l = act_temps_all(s->temps, &n);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (l[i].settled || fstatat(l[i].dir, l[i].name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        fflush(stdout);
        size_t len = strlen(l[i].dir_path) + strlen(l[i].name) + 2;
        char *full = malloc(len);
        if (full)
            snprintf(full, len, "%s/%s", l[i].dir_path, l[i].name);
        fprintf(stderr, "%s: ", CLI_PROGRAM);
        cli_quote_name(stderr, full ? full : l[i].name);
        fprintf(stderr, ": skipped: a temporary left by an interrupted run that holds neither "
                        "a kept file's bytes nor a duplicate of this plan: left as it is\n");
        free(full);
        s->skipped++;
    }
}

/* folder_of: the folder holding path (resolved by places_dir, or the one
 * remembered when path's folder part is the last one's), *leaf its last
 * name. The descriptor stays s's. -1 as places_dir. */
static int folder_of(run_state *s, const char *path, const char **leaf, const char **why)
{
    size_t len;
    *why = NULL;
    *leaf = bn_leaf(path, &len);
    int fd = bn_leaf_ok(*leaf) ? bn_memo_find(&s->folder, path, len) : -1;
    if (fd >= 0)
        return fd;
    bn_memo_forget(&s->folder);
    fd = places_dir(s->places, path, leaf, why);
    if (fd >= 0)
        bn_memo_keep(&s->folder, path, len, fd); /* out of memory: the pair's own */
    return fd;
}

/* reach_other: resolves the folder of pr's duplicate and lists what
 * interrupted runs left there. Returns 0, else -1 (reported). */
static int reach_other(run_state *s, pair *pr)
{
    const char *why;
    act_open_file *o = &pr->other_open;
    o->dir = folder_of(s, pr->other->path, &o->leaf, &why);
    if (o->dir >= 0 && o->dir != s->folder.fd) /* not remembered (no memory): pr's own */
        pr->own_dir = 1;
    if (o->dir < 0) {
        if (why)
            outcome(s, pr, "skipped", why);
        else if (errno == ENOENT && s->o->kind == ACT_REMOVE)
            outcome(s, pr, "already", "removed before");
        else
            outcome_errno(s, pr, "cannot be reached", errno);
        return -1;
    }
    size_t dir_len;
    bn_leaf(pr->other->path, &dir_len);
    if (!s->o->dry_run && act_temps_visit(s->temps, o->dir, dir_len ? pr->other->path : ".",
                                          dir_len ? dir_len : 1) != 0) {
        outcome_errno(s, pr, "its folder cannot be listed", errno);
        return -1;
    }
    settle_leftovers(s, pr);
    return 0;
}

/* act_pair: checks pr again and acts on it. */
static void act_pair(run_state *s, pair *pr)
{
    const char *reason = NULL;
    int err_no;
    if (pr->other->host != ACT_THIS_HOST) {
        char text[320];
        snprintf(text, sizeof text, "not on this host (it is on %s): left alone",
                 s->plan->hosts[pr->other->host]);
        outcome(s, pr, "skipped", text);
        return;
    }
    if (reach_other(s, pr) != 0)
        goto out;
    struct stat now;
    int d = already_done(s, pr, &reason, &now);
    if (d != 0) {
        if (d > 0)
            outcome(s, pr, "already", reason);
        goto out;
    }
    if (one_file_twice(pr, &now)) {
        outcome(s, pr, "skipped",
                "the kept file itself, seen through another mount (overlayfs): not a "
                "duplicate, left alone");
        goto out;
    }
    if (act_open_checked(s->places, pr->other, pr->g->size, &pr->other_open, &reason, &err_no) !=
        0) {
        if (reason)
            outcome(s, pr, "skipped", reason);
        else
            outcome_errno(s, pr, "cannot be opened", err_no);
        goto out;
    }
    if (s->o->kind == ACT_REFLINK && !s->o->clone_only && !s->o->dry_run && dedupe_in_place(s, pr))
        goto out;
    if (s->o->dry_run) {
        if (compare(s, pr, NULL))
            outcome(s, pr, "planned", NULL);
    } else if (s->o->kind == ACT_REMOVE)
        remove_one(s, pr);
    else
        replace(s, pr);
out:
    if (!pr->own_dir)
        pr->other_open.dir = -1; /* the remembered folder's: s closes it */
    act_close(&pr->other_open);
}

/* skip_group: every file of g but kept is skipped for reason. */
static void skip_group(run_state *s, const act_plan *p, const act_group *g, long kept,
                       const char *reason)
{
    for (size_t i = 0; i < g->n; i++) {
        if ((long)i == kept)
            continue;
        pair pr = {g, kept >= 0 ? &p->files[g->first + (size_t)kept] : NULL, NULL,
                   &p->files[g->first + i], ACT_OPEN_FILE_INIT, 0};
        outcome(s, &pr, "skipped", reason);
    }
}

/* open_kept: reaches and opens the file a group keeps. Returns 0, else
 * -1 with the reason in text. */
static int open_kept(run_state *s, const act_file *kept, uint64_t size, act_open_file *ko,
                     char *text, size_t cap)
{
    const char *why = NULL;
    int err_no = 0;
    if (kept->host != ACT_THIS_HOST) {
        snprintf(text, cap, "the file to keep, %s, is not on this host (it is on %s): left alone",
                 kept->path, s->plan->hosts[kept->host]);
        return -1;
    }
    /* Its folder is needed for a symbolic link's target alone. */
    if (s->o->kind == ACT_SYMLINK &&
        (ko->dir = places_dir(s->places, kept->path, &ko->leaf, &why)) < 0)
        err_no = errno;
    else if (act_open_checked(s->places, kept, size, ko, &why, &err_no) == 0)
        return 0;
    snprintf(text, cap, "the file to keep, %s: %s", kept->path, why ? why : strerror(err_no));
    act_close(ko);
    return -1;
}

/* act_group: one group of the plan. */
static void act_group_run(run_state *s, const act_plan *p, const act_group *g)
{
    if (g->n < 2)
        return;
    long ki = act_keep_choose(p, g, &s->o->keep, s->places);
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
    act_open_file ko = ACT_OPEN_FILE_INIT;
    char text[400];
    if (open_kept(s, kept, g->size, &ko, text, sizeof text) != 0) {
        skip_group(s, p, g, ki, text);
        return;
    }
    for (size_t i = 0; i < g->n; i++) {
        if ((long)i == ki)
            continue;
        pair pr = {g, kept, &ko, &p->files[g->first + i], ACT_OPEN_FILE_INIT, 0};
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

/* open_places: the plan's roots, opened (NULL: out of memory). */
static places *open_places(const act_plan *p)
{
    places_root *roots = calloc(p->nroots ? p->nroots : 1, sizeof *roots);
    if (roots == NULL)
        return NULL;
    for (size_t i = 0; i < p->nroots; i++)
        roots[i] = (places_root){p->roots[i].path, p->roots[i].dev, p->roots[i].ino};
    places *pl = places_new(roots, p->nroots);
    free(roots);
    return pl;
}

int act_run(const act_plan *p, const act_opts *o)
{
    run_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.plan = p;
    s.folder = (bn_memo)BN_MEMO_INIT;
    s.places = open_places(p);
    s.temps = act_temps_new();
    if (s.places == NULL || s.temps == NULL) {
        places_free(s.places);
        act_temps_free(s.temps);
        cli_error("%s: %s", o->cmd, strerror(ENOMEM));
        return CLI_EXIT_FAILURE;
    }
    if (o->log_path && (s.log = act_log_open(o->log_path)) == NULL) {
        cli_error_path(o->log_path, errno);
        places_free(s.places);
        act_temps_free(s.temps);
        return CLI_EXIT_FAILURE;
    }
    for (size_t g = 0; g < p->ngroups; g++)
        act_group_run(&s, p, &p->groups[g]);
    report_leftovers(&s);
    bn_memo_forget(&s.folder);
    places_free(s.places);
    act_temps_free(s.temps);
    if (act_log_close(s.log) != 0 && !s.log_failed) {
        s.log_failed = 1;
        cli_error_path(o->log_path, errno);
    }
    totals(&s);
    int rc = s.skipped || s.failed || s.log_failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    return cli_finish_stdout(rc);
}
