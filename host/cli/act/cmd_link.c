/*
 * cmd_link.c - hashbatch link and hashbatch remove.
 * (Placeholder while it is written: every entry point fails clearly.)
 */
#include "cli.h"
int cmd_link(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("link: not built yet");
    return CLI_EXIT_FAILURE;
}
int cmd_remove(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("remove: not built yet");
    return CLI_EXIT_FAILURE;
}
