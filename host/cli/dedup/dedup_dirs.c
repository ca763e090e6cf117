/*
 * dedup_dirs.c - duplicate directories.
 * (Placeholder while it is written: every entry point fails clearly.)
 */
#include "cli.h"
#include "dedup_dirs.h"
int dd_dirs_find(dd_run *r)
{
    (void)r;
    cli_error("--dirs: not built yet");
    return -1;
}
