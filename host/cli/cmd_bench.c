/*
 * cmd_bench.c - placeholder for `hashbatch bench` while it is being written.
 */
#include "cli.h"

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("bench: not built yet");
    return CLI_EXIT_USAGE;
}
