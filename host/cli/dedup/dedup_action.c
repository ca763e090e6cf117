/*
 * dedup_action.c - `dedup --action hard|reflink|symlink|remove`: the
 * scan's groups acted on directly, through the very code `hashbatch link`
 * and `remove` run on a plan (act/): the groups become a plan (each path
 * with its inode's device, inode number and modification time, as the
 * scan saw them, and the roots the walk started from, as `dedup --json`
 * prints them), and act_run checks every pair again before it acts.
 *
 * Owns: checking --action, --keep, --dry-run and --log, and turning the
 * groups into a plan. Must not: act on files itself (act/ does).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "act.h"
#include "cli.h"
#include "dedup_action.h"
#include "walk.h"

/* kind_of: the act_kind --action names; -1 for anything else. */
static int kind_of(const char *text)
{
    static const char *const names[] = {"hard", "reflink", "symlink", "remove"};
    for (int i = 0; i < 4; i++)
        if (strcmp(text, names[i]) == 0)
            return i;
    return -1;
}

int dd_action_check(const dd_opts *o)
{
    act_keep k;
    if (o->action && kind_of(o->action) < 0)
        return cli_usage_error(DD_CMD,
                               "invalid action '%s' for '--action' (hard, reflink, symlink or "
                               "remove)",
                               o->action);
    if (act_keep_parse(o->keep, &k) != 0)
        return cli_usage_error(DD_CMD,
                               "invalid rule '%s' for '--keep' (first, oldest, newest or "
                               "path=PREFIX)",
                               o->keep);
    return -1;
}

/* to_plan: r's roots and groups as a plan. Returns 0 or ENOMEM. */
static int to_plan(const dd_run *r, act_plan *p)
{
    static const char hexdig[] = "0123456789abcdef";
    for (size_t i = 0; i < r->nroots; i++)
        if (dd_root_listed(r, i) &&
            act_plan_add_root(p, r->roots[i].path, (uint64_t)r->roots[i].dev,
                              (uint64_t)r->roots[i].ino) != 0)
            return ENOMEM;
    for (size_t g = 0; g < r->ngroups; g++) {
        const dd_group *gr = &r->groups[g];
        char hex[41] = "";
        if (gr->hashed) {
            for (int i = 0; i < 20; i++) {
                hex[2 * i] = hexdig[gr->sha1[i] >> 4];
                hex[2 * i + 1] = hexdig[gr->sha1[i] & 15];
            }
            hex[40] = '\0';
        }
        if (act_plan_add_group(p, gr->size, hex) != 0)
            return ENOMEM;
        for (uint32_t j = 0; j < gr->n; j++) {
            uint32_t pi = r->group_paths[gr->first + j];
            const dd_inode *k = &r->inodes[r->paths[pi].inode];
            const char *name = dd_path_name(r, pi);
            int64_t mtime = k->mtime_sec * 1000000000 + k->mtime_nsec;
            if (act_plan_add_file(p, name, strlen(name), (uint64_t)k->dev, (uint64_t)k->ino, 1,
                                  mtime) != 0)
                return ENOMEM;
        }
    }
    return 0;
}

int dd_act(dd_run *r)
{
    const dd_opts *o = r->o;
    act_opts ao;
    memset(&ao, 0, sizeof ao);
    ao.cmd = DD_CMD;
    ao.kind = (act_kind)kind_of(o->action);
    act_keep_parse(o->keep, &ao.keep);
    ao.dry_run = o->dry_run;
    ao.log_path = o->action_log;
    const char *env = getenv("HASHBATCH_REFLINK");
    ao.clone_only = env != NULL && strcmp(env, "clone") == 0;
    act_plan p;
    memset(&p, 0, sizeof p);
    if (to_plan(r, &p) != 0) {
        act_plan_free(&p);
        cli_error("%s: %s", DD_CMD, strerror(ENOMEM));
        return CLI_EXIT_FAILURE;
    }
    int rc = act_run(&p, &ao);
    act_plan_free(&p);
    if (rc == CLI_EXIT_OK && r->skipped)
        rc = CLI_EXIT_FAILURE; /* the scan itself skipped files */
    return rc;
}
