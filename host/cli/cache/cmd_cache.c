/*
 * cmd_cache.c - hashbatch cache stats|prune|clear.
 * (Placeholder while it is written: every entry point fails clearly.)
 */
#include "cli.h"
int cmd_cache(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("cache: not built yet");
    return CLI_EXIT_FAILURE;
}
