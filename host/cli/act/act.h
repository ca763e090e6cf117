/*
 * act.h - internal interfaces of `hashbatch link` and `hashbatch remove`
 * (and of `dedup --action`, which hands its groups over as a plan): the
 * plan (act_plan.c), the keep rules (act_keep.c), where its files are
 * (places.c, shared with dedup's reads), the re-check of a pair
 * (act_check.c), the filesystem's extent sharing (act_reflink.c), the
 * atomic operations (act_ops.c), the log (act_log.c) and the run that
 * ties them together (act_run.c).
 *
 * The model: a plan is groups of files that a scan found identical; in
 * each group one file is kept (the keep rule picks it) and every other is
 * replaced by a link to it, or removed, but only after the pair has been
 * proven equal again, byte for byte, and shown unchanged since the scan.
 *
 * Owns: those types and the interfaces between the act modules. Must
 * not: hold policy (each .c file does).
 */
#ifndef HB_CLI_ACT_H
#define HB_CLI_ACT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* What is done to each duplicate. */
typedef enum { ACT_HARD, ACT_REFLINK, ACT_SYMLINK, ACT_REMOVE } act_kind;

/* Which file of a group stays. */
typedef enum { KEEP_FIRST, KEEP_OLDEST, KEEP_NEWEST, KEEP_PATH } act_keep_kind;

typedef struct {
    act_keep_kind kind;
    const char *prefix; /* KEEP_PATH: the PREFIX of path=PREFIX */
} act_keep;

/* One file of a plan. */
typedef struct {
    char *path; /* owned by the plan */
    uint64_t dev, ino;
    int has_mtime;
    int64_t mtime_ns; /* when has_mtime */
    uint32_t host;    /* index into the plan's hosts[]; ACT_THIS_HOST when the
                         plan names none for it, or names this machine */
} act_file;

#define ACT_THIS_HOST UINT32_MAX

/* A directory a scan started from (a DIR of `dedup DIR...`, as given),
 * with its identity then. The files under it are reached beneath it:
 * the root is the only part of a path that may pass through a symbolic
 * link, and it must still be the directory of the scan. */
typedef struct {
    char *path; /* owned by the plan; as given to the scan */
    uint64_t dev, ino;
} act_root;

/* One group: files[first .. first + n), all of size bytes. */
typedef struct {
    uint64_t size;
    char sha1[41]; /* hex, or "" when the plan has none */
    size_t first, n;
} act_group;

typedef struct {
    act_file *files;
    size_t nfiles, cap_files;
    act_group *groups;
    size_t ngroups, cap_groups;
    act_root *roots; /* the plan's "roots" (none in plans made before them) */
    size_t nroots;
    char **hosts; /* the other machines named by files' "host" */
    size_t nhosts;
    struct act_names *names; /* where the paths and hosts above are kept (act_plan.c) */
} act_plan;

/* How a run goes. */
typedef struct {
    const char *cmd; /* "link", "remove" or "dedup", for messages */
    act_kind kind;
    act_keep keep;
    int dry_run;
    const char *log_path; /* --log FILE, or NULL */
    int clone_only;       /* --reflink by FICLONE alone (HASHBATCH_REFLINK=clone) */
} act_opts;

/* ---- act_plan.c -------------------------------------------------------- */

/* act_plan_add_group / act_plan_add_file: build a plan (paths copied).
 * Return 0 or ENOMEM. A file belongs to the last group added. */
int act_plan_add_group(act_plan *p, uint64_t size, const char *sha1_hex);
int act_plan_add_file(act_plan *p, const char *path, size_t len, uint64_t dev, uint64_t ino,
                      int has_mtime, int64_t mtime_ns);

/* act_plan_add_root: records a root of the scan (path copied). Returns 0
 * or ENOMEM. */
int act_plan_add_root(act_plan *p, const char *path, uint64_t dev, uint64_t ino);

/* act_plan_parse: the plan in text[0..len) (what `dedup --json` prints).
 * Returns 0, or -1 with err saying what is wrong and where. */
int act_plan_parse(act_plan *p, const char *text, size_t len, char *err, size_t cap);

/* act_plan_load: reads and parses the plan in file name ("-": stdin).
 * Returns 0, or -1 with err saying why (the name is the caller's to add). */
int act_plan_load(act_plan *p, const char *name, char *err, size_t cap);

/* act_plan_free: releases what p holds (p itself is the caller's). */
void act_plan_free(act_plan *p);

/* ---- act_keep.c -------------------------------------------------------- */

/* act_keep_parse: "first", "oldest", "newest" or "path=PREFIX" into *k
 * (NULL text: first). Returns 0, or -1 for anything else. */
int act_keep_parse(const char *text, act_keep *k);

/* act_keep_choose: the index (within the group) of the file g keeps, or
 * -1 when none fits (path=PREFIX with no file under PREFIX; oldest or
 * newest where no file's time can be had). Times come from the plan,
 * else from a stat now of the file reached beneath its root in pl (no
 * symbolic link followed: places.h); ties go to the earlier file. */
struct places;
long act_keep_choose(const act_plan *p, const act_group *g, const act_keep *k,
                     const struct places *pl);

/* ---- act_temp.c ------------------------------------------------------- */

#define ACT_TEMP_CAP 64

typedef struct act_temps act_temps;

/* A temporary that another (interrupted) run left in a folder. */
typedef struct {
    int dir;        /* the folder (O_PATH, owned) */
    char *dir_path; /* the folder as the plan writes it, for messages */
    uint64_t dir_dev, dir_ino;
    char *name;
    int settled; /* removed or put back by this run */
} act_leftover;

/* act_temps_new: this run's names (a fresh random run id). NULL: ENOMEM. */
act_temps *act_temps_new(void);

/* act_temps_free: NULL is fine. */
void act_temps_free(act_temps *t);

/* act_temp_next: a name no run has used, into out. */
void act_temp_next(act_temps *t, char out[ACT_TEMP_CAP]);

/* act_temps_visit: the first time dir is seen in this run, lists the
 * temporaries other runs left in it. dir_path[0..dir_len) names it for
 * messages. Returns 0, or -1 (errno). */
int act_temps_visit(act_temps *t, int dir, const char *dir_path, size_t dir_len);

/* act_temps_in: the leftovers listed in dir (*n of them), or NULL. */
act_leftover *act_temps_in(act_temps *t, int dir, size_t *n);

/* act_temps_all: every leftover listed in this run (*n of them). */
act_leftover *act_temps_all(act_temps *t, size_t *n);

/* ---- act_check.c ------------------------------------------------------- */

/* One file of a pair as this run reached it. */
typedef struct {
    int dir;          /* the folder holding it (O_PATH), -1: not reached */
    const char *leaf; /* its name there (points into the plan's path) */
    int fd;           /* the file, open read-only (-1: not open) */
    struct stat st;   /* as it was opened */
} act_open_file;

#define ACT_OPEN_FILE_INIT                                                                         \
    {                                                                                              \
        .dir = -1, .leaf = NULL, .fd = -1                                                          \
    }

struct places;

/* act_open_checked: opens f read-only, never following a link: o->leaf in
 * o->dir, or (o->dir < 0) f's path beneath its root through pl; and
 * checks it is a regular file with the plan's device, inode and size (and
 * mtime when the plan has it). Returns 0, else -1 with *why a static
 * reason ("changed since the scan: inode") or, for system errors,
 * *err_no set (then *why is NULL). */
int act_open_checked(const struct places *pl, const act_file *f, uint64_t size, act_open_file *o,
                     const char **why, int *err_no);

/* act_same_bytes: are the open files a and b (of size bytes) equal byte
 * for byte, from the start to the end? Returns 1, 0, or -1 on a read
 * error (errno set). */
int act_same_bytes(int a, int b, uint64_t size);

/* act_same_content: does o's descriptor still show the size and mtime it
 * was opened with (the ctime may move: a new link, a rename)? */
int act_same_content(const act_open_file *o);

/* act_name_is: does o->leaf in o->dir name o's file now? */
int act_name_is(const act_open_file *o);

/* act_close: closes o's descriptors (file and folder) if open. */
void act_close(act_open_file *o);

/* ---- act_reflink.c ----------------------------------------------------- */

/* act_dedupe_range: FIDEDUPERANGE of the whole of dst (open read-write or
 * owned) onto src, size bytes: the kernel compares and shares extents.
 * Returns 1 shared, 0 the bytes differ, -1 on an error (errno). */
int act_dedupe_range(int src, int dst, uint64_t size);

/* act_shares_extents: do files a and b (size bytes) map the same
 * physical extents, all marked shared (FIEMAP)? 1 yes, 0 no or unknown. */
int act_shares_extents(int a, int b, uint64_t size);

/* act_reflink_unsupported: does errno e mean the filesystem cannot share
 * extents between these files (EOPNOTSUPP, ENOTTY, EXDEV, EINVAL)? */
int act_reflink_unsupported(int e);

/* ---- act_ops.c --------------------------------------------------------- */

/* act_symlink_target_below: the target a symbolic link at link_rel gets
 * to kept_rel, both paths below one root (where no name is a symbolic
 * link, so "." and ".." are resolved by their text): relative between
 * them. Returns a malloc'd string, or NULL (errno: EXDEV when ".." climbs
 * above the root, ENOMEM). */
char *act_symlink_target_below(const char *kept_rel, const char *link_rel);

/* act_symlink_target: the target a symbolic link in folder link_dir to
 * the kept file (its folder kept_dir, its name kept_leaf) gets: relative
 * between the two folders as the kernel names them (both were resolved
 * without following a link). Returns a malloc'd string, or NULL (errno). */
char *act_symlink_target(int kept_dir, const char *kept_leaf, int link_dir);

/* act_make_link: makes, at a fresh temporary name in old->dir (written to
 * tmp), what is to replace old: a hard link of kept's very inode, a
 * symbolic link to target, or a FICLONE copy of kept given old's mode,
 * owner and times (an owner that cannot be kept is an error, *why). The
 * result is checked to lead to kept; *made is its lstat. Returns 0, else -1 with *why or
 * errno (and nothing is left behind). */
int act_make_link(act_kind kind, act_temps *t, const act_open_file *kept, const act_open_file *old,
                  const char *target, char tmp[ACT_TEMP_CAP], struct stat *made, const char **why);

/* act_swap_in: exchanges tmp and old->leaf in old->dir (RENAME_EXCHANGE)
 * and checks that what left the name is old's file, unmodified (*moved:
 * its stat at the temporary name); if not,
 * exchanges them back and removes tmp. Returns 0, else -1 with *why or
 * errno. */
int act_swap_in(const act_open_file *old, const struct stat *made, const char *tmp,
                struct stat *moved, const char **why);

/* act_hide: renames old->leaf to a fresh temporary name (tmp) in the same
 * folder (RENAME_NOREPLACE) and checks that it is old's file,
 * unmodified (*moved: its stat there); if not, renames it back. Returns 0, else -1 (*why/errno). */
int act_hide(act_temps *t, const act_open_file *old, char tmp[ACT_TEMP_CAP], struct stat *moved,
             const char **why);

/* act_commit: removes tmp in old->dir, which must still be old's file.
 * Returns 0, else -1 (*why/errno). */
int act_commit(const act_open_file *old, const char *tmp, const char **why);

/* act_undo_swap: exchanges tmp (old's file) back to old->leaf and removes
 * the link then at tmp if it still is the one made (made). Returns 0,
 * else -1 (errno): then old's file is at tmp. */
int act_undo_swap(const act_open_file *old, const struct stat *made, const char *tmp);

/* act_unhide: renames tmp back to old->leaf (RENAME_NOREPLACE). Returns
 * 0, else -1 (errno: EEXIST when the name was taken meanwhile). */
int act_unhide(const act_open_file *old, const char *tmp);

/* act_leads_to: does name in dir lead to kept's file (its own inode, a
 * hard link of it, or a symbolic link that resolves to it)? 1 yes, 0 no. */
int act_leads_to(int dir, const char *name, const act_open_file *kept);

/* ---- act_log.c --------------------------------------------------------- */

typedef struct act_log act_log;

/* act_log_open: appends to path (created 0644). Returns the log or NULL
 * (errno). */
act_log *act_log_open(const char *path);

/* act_log_write: one JSON line, flushed: the action kind, path, kept,
 * status ("done", "already", "skipped", "failed", "planned", "begin"),
 * reason (NULL: none) and temp (NULL: none). Returns 0, or -1 (errno). */
int act_log_write(act_log *l, act_kind kind, const char *path, const char *kept, const char *status,
                  const char *reason, const char *temp);

/* act_log_close: flushes and closes. Returns 0, or -1 (errno). */
int act_log_close(act_log *l);

/* act_kind_name: "hard", "reflink", "symlink" or "remove". */
const char *act_kind_name(act_kind k);

/* ---- act_run.c --------------------------------------------------------- */

/* act_run: carries out plan p as o says, printing a line per action on
 * stdout, skips and errors on stderr, the totals on stderr. Returns the
 * exit status: 0 when every duplicate is done (or was before), 1 when
 * something was skipped or failed. */
int act_run(const act_plan *p, const act_opts *o);

#endif /* HB_CLI_ACT_H */
