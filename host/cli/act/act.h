/*
 * act.h - internal interfaces of `hashbatch link` and `hashbatch remove`
 * (and of `dedup --action`, which hands its groups over as a plan): the
 * plan (act_plan.c), the keep rules (act_keep.c), the re-check of a pair
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
 * else from lstat now; ties go to the earlier file. */
long act_keep_choose(const act_plan *p, const act_group *g, const act_keep *k);

/* ---- act_check.c ------------------------------------------------------- */

/* The state of one file now, as the re-check saw it. */
typedef struct {
    int fd; /* open read-only (-1: not open) */
    struct stat st;
} act_open_file;

/* act_open_checked: opens f->path read-only (never following a link)
 * and checks it is a regular file with the plan's device, inode and
 * size (and mtime when the plan has it). Returns 0, else -1 with *why a
 * static reason ("changed since the scan: inode") or, for system errors,
 * *err_no set (then *why is NULL). */
int act_open_checked(const act_file *f, uint64_t size, act_open_file *o, const char **why,
                     int *err_no);

/* act_same_bytes: are the open files a and b (of size bytes) equal byte
 * for byte, from the start to the end? Returns 1, 0, or -1 on a read
 * error (errno set). */
int act_same_bytes(int a, int b, uint64_t size);

/* act_unchanged: does path still name the file o opened, unmodified
 * (device, inode, size, mtime and ctime as o->st)? */
int act_unchanged(const char *path, const act_open_file *o);

/* act_same_content: like act_unchanged, but the ctime may have moved (a
 * new hard link to the file changes it): for the kept file. */
int act_same_content(const char *path, const act_open_file *o);

/* act_close: closes o's descriptor if open. */
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

/* act_temp_name: the temporary name beside path: ".NAME.hashbatch-tmp" in
 * path's directory. Returns a malloc'd string or NULL. */
char *act_temp_name(const char *path);

/* act_symlink_target: the target a symbolic link at link_path to kept
 * gets: relative to the link's directory (both resolved with realpath).
 * Returns a malloc'd string, or NULL with errno. */
char *act_symlink_target(const char *kept, const char *link_path);

/* The atomic replacements: the new name is made at tmp, given what the
 * kind allows of old's metadata, checked, and renamed over path; on any
 * failure tmp is removed and path is untouched. old is the replaced
 * file's open state (re-checked just before the rename); kept is the
 * kept file's. Return 0, else -1 with *why (a static reason) or errno. */
int act_replace_hard(const char *kept_path, const act_open_file *kept, const char *path,
                     const act_open_file *old, const char *tmp, const char **why);
int act_replace_symlink(const char *target, const act_open_file *kept, const char *path,
                        const act_open_file *old, const char *tmp, const char **why);
int act_replace_clone(const act_open_file *kept, const char *path, const act_open_file *old,
                      const char *tmp, const char **why);

/* act_remove_checked: unlinks path if it still is old, unmodified.
 * Returns 0, else -1 with *why or errno. */
int act_remove_checked(const char *path, const act_open_file *old, const char **why);

/* act_drop_leftover: removes tmp if an interrupted run left it there (for
 * a hard link: a link to kept or old; a symbolic link: one to target;
 * a clone: a regular file no bigger than size). Returns 0 when tmp is
 * free now, -1 when something else holds the name. */
int act_drop_leftover(const char *tmp, act_kind kind, const act_open_file *kept,
                      const act_open_file *old, const char *target, uint64_t size);

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
