/*
 * dedup_index.c - the scan index.
 * (Placeholder while it is written: every entry point fails clearly.)
 */
#include "cli.h"
#include "dedup_dirs.h"
int dd_index_write(const dd_run *r, const char *path)
{
    (void)r;
    cli_error("%s: --index-out: not built yet", path);
    return -1;
}
