/*
 * dedup_action.c - dedup --action.
 * (Placeholder while it is written: every entry point fails clearly.)
 */
#include "cli.h"
#include "dedup_action.h"
int dd_action_check(const dd_opts *o)
{
    (void)o;
    return cli_usage_error(DD_CMD, "--action: not built yet");
}
int dd_act(dd_run *r)
{
    (void)r;
    return CLI_EXIT_FAILURE;
}
