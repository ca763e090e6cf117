/*
 * dedup_action.h - `dedup --action KIND`: the scan's groups acted on
 * directly (dedup_action.c), as `hashbatch link`/`remove` act on a plan.
 *
 * Owns: that interface. Must not: hold policy (dedup_action.c and act/ do).
 */
#ifndef HB_CLI_DEDUP_ACTION_H
#define HB_CLI_DEDUP_ACTION_H

#include "dedup.h"

/* dd_action_check: validates --action, --keep, --dry-run and --log
 * before the scan. Returns -1 to go on, else the exit status (2: usage). */
int dd_action_check(const dd_opts *o);

/* dd_act: acts on r's groups. Returns the exit status. */
int dd_act(dd_run *r);

#endif /* HB_CLI_DEDUP_ACTION_H */
