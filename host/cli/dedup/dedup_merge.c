/*
 * dedup_merge.c - merging scan indexes.
 * (Placeholder while it is written: every entry point fails clearly.)
 */
#include "cli.h"
#include "dedup_dirs.h"
int dd_merge_main(const dd_opts *o, const hb_config *cfg, char *const *indexes, size_t n)
{
    (void)o;
    (void)cfg;
    (void)indexes;
    (void)n;
    cli_error("--merge: not built yet");
    return CLI_EXIT_FAILURE;
}
