/*
 * main.c - entry point of the `hashbatch` command: subcommand dispatch,
 * the top-level usage, --help and --version.
 *
 * Owns: choosing the subcommand and the top-level messages.
 * Must not: parse a subcommand's options or open an engine; each cmd_*.c
 * owns its own options, help and work.
 */
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} cli_command;

static const cli_command commands[] = {
    {"devices", cmd_devices, "list OpenCL devices and the CPU pool, and what `auto` picks"},
    {"sum", cmd_sum, "print or check SHA-1 checksums, byte for byte as sha1sum does"},
    {"dedup", cmd_dedup, "find duplicate files (size, SHA-1, then byte for byte)"},
    {"link", cmd_link, "replace duplicates in a dedup plan by links (hard, reflink, symbolic)"},
    {"remove", cmd_remove, "remove duplicates in a dedup plan, keeping one file of each group"},
    {"cache", cmd_cache, "the hash cache of sum and dedup: stats, prune, clear"},
    {"bench", cmd_bench, "measure each backend against OpenSSL's SHA-1 on this machine"},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* usage: the top-level help, on f. */
static void usage(FILE *f)
{
    fprintf(f,
            "Usage: %s COMMAND [OPTION]... [ARG]...\n"
            "Hash many files with SHA-1 on OpenCL devices or the CPU.\n\n"
            "Commands:\n",
            CLI_PROGRAM);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\n  %s COMMAND --help   help on one command\n"
            "  %s --version        print the version and exit\n\n"
            "Exit status: 0 if all went well, 1 if some input could not be"
            " read\nor the engine failed, 2 on a usage error.\n",
            CLI_PROGRAM, CLI_PROGRAM);
}

/* find_command: the command called name, or NULL. */
static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* version: --version's text. */
static int version(void)
{
    printf("%s %s (libhashbatch %s)\n", CLI_PROGRAM, HB_VERSION_STRING, hb_version_string());
    return cli_finish_stdout(CLI_EXIT_OK);
}

/* help_on: `hashbatch help [COMMAND]`. */
static int help_on(const char *name)
{
    const cli_command *c = name ? find_command(name) : NULL;
    if (c == NULL) {
        if (name != NULL) {
            cli_error("unknown command '%s'", name);
            return CLI_EXIT_USAGE;
        }
        usage(stdout);
        return cli_finish_stdout(CLI_EXIT_OK);
    }
    char help_arg[] = "--help";
    char *args[] = {(char *)c->name, help_arg, NULL};
    return c->run(2, args);
}

static int is_any(const char *s, const char *a, const char *b)
{
    return strcmp(s, a) == 0 || strcmp(s, b) == 0;
}

int main(int argc, char **argv)
{
    /* Character classes and messages follow the locale, as in coreutils;
     * numbers stay in the C locale (the JSON output depends on it). */
    setlocale(LC_CTYPE, "");
    setlocale(LC_MESSAGES, "");
    cli_watch_stdout();

    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (is_any(name, "--help", "-h")) {
        usage(stdout);
        return cli_finish_stdout(CLI_EXIT_OK);
    }
    if (strcmp(name, "help") == 0)
        return help_on(argc > 2 ? argv[2] : NULL);
    if (is_any(name, "--version", "-V"))
        return version();

    const cli_command *c = find_command(name);
    if (c != NULL)
        return c->run(argc - 1, argv + 1);

    if (name[0] == '-')
        cli_error("unrecognized option '%s'", name);
    else
        cli_error("unknown command '%s'", name);
    fprintf(stderr, "Try '%s --help' for more information.\n", CLI_PROGRAM);
    return CLI_EXIT_USAGE;
}
