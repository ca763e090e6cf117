/*
 * cmd_dedup.c - placeholder for `hashbatch dedup` while it is being written.
 */
#include "cli.h"

int cmd_dedup(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("dedup: not built yet");
    return CLI_EXIT_USAGE;
}
