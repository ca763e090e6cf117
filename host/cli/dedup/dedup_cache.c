/*
 * dedup_cache.c - dedup's use of the hash cache.
 * (Placeholder while it is written: every entry point fails clearly.)
 */
#include <stdio.h>
#include "cli.h"
#include "dedup_cache.h"
void dd_cache_begin(dd_run *r)
{
    (void)r;
    fprintf(stderr, "%s: --cache: not built yet; going on without it\n", CLI_PROGRAM);
}
void dd_cache_end(dd_run *r)
{
    (void)r;
}
