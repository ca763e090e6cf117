/*
 * options.c - the engine options every subcommand shares (--backend,
 * --device, --verify), their environment defaults, opening the engine,
 * the wording of getopt failures, and sizes written with K/M/G suffixes.
 *
 * Owns: turning option text into an hb_config with the library's own
 * parsers (hb_backend_parse, hb_verify_parse), and the precedence
 * option > environment > default. Must not: hash, or parse a
 * subcommand's own options.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_engine_opts_take(cli_engine_opts *o, int c, const char *value)
{
    switch (c) {
    case CLI_OPT_BACKEND:
        o->backend = value;
        return 1;
    case CLI_OPT_DEVICE:
        o->device = value;
        return 1;
    case CLI_OPT_VERIFY:
        o->verify = value;
        return 1;
    default:
        return 0;
    }
}

/* pick: the option's value, else the environment's (unset or empty: none);
 * *from tells which, for messages. */
static const char *pick(const char *option, const char *env_name, const char **from)
{
    if (option != NULL) {
        *from = NULL;
        return option;
    }
    const char *env = getenv(env_name);
    *from = env_name;
    return (env != NULL && env[0] != '\0') ? env : NULL;
}

/* bad_value: reports an invalid value of option opt (or of env var). */
static int bad_value(const char *cmd, const char *opt, const char *from, const char *value,
                     const char *valid)
{
    if (from != NULL)
        return cli_usage_error(cmd, "invalid %s value '%s' (valid: %s)", from, value, valid);
    return cli_usage_error(cmd, "invalid argument '%s' for '--%s' (valid: %s)", value, opt, valid);
}

/* runnable_impls: the CPU implementations this CPU runs, as a list. */
static void runnable_impls(char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (unsigned k = 0; hb_cpu_impl_name(k) != NULL && used < size; k++)
        if (hb_cpu_impl_runs(hb_cpu_impl_name(k))) {
            int n = snprintf(out + used, size - used, "%s%s", used ? ", " : "", hb_cpu_impl_name(k));
            used += n > 0 ? (size_t)n : size;
        }
}

int cli_cpu_impl_invalid(const char *cmd, const char *from, const char *value)
{
    char runs[128];
    runnable_impls(runs, sizeof runs);
    int known = 0;
    for (unsigned k = 0; hb_cpu_impl_name(k) != NULL; k++)
        known |= strcmp(hb_cpu_impl_name(k), value) == 0;
    if (known && from != NULL)
        return cli_usage_error(cmd, "%s value '%s' does not run on this CPU (it runs: %s)", from,
                               value, runs);
    if (known)
        return cli_usage_error(cmd, "'--cpu-impl' value '%s' does not run on this CPU (it runs: %s)",
                               value, runs);
    char valid[192];
    snprintf(valid, sizeof valid, "avx512, avx2, portable or sha-ni; this CPU runs: %s", runs);
    return bad_value(cmd, "cpu-impl", from, value, valid);
}

int cli_engine_config(const cli_engine_opts *o, const char *cmd, hb_config *cfg)
{
    const char *from;
    const char *text;

    hb_config_init(cfg);
    /* The environment is read here, so that options can override it. */
    cfg->use_environment = 0;

    text = pick(o->backend, "HASHBATCH_BACKEND", &from);
    if (text != NULL && hb_backend_parse(text, &cfg->backend) != HB_OK)
        return bad_value(cmd, "backend", from, text, "auto, opencl, cpu");

    text = pick(o->verify, "HASHBATCH_VERIFY", &from);
    if (text != NULL && hb_verify_parse(text, &cfg->verify) != HB_OK)
        return bad_value(cmd, "verify", from, text, "off, sample, full");

    text = pick(NULL, "HASHBATCH_CPU_IMPL", &from);
    if (text != NULL && !hb_cpu_impl_runs(text))
        return cli_cpu_impl_invalid(cmd, from, text);
    cfg->cpu_impl = text;

    cfg->device_cores = pick(NULL, "HASHBATCH_DEVICE_CORES", &from);

    text = pick(o->device, "HASHBATCH_DEVICE", &from);
    if (o->device != NULL && o->device[0] == '\0')
        return cli_usage_error(cmd, "empty argument for '--device'");
    cfg->device = text;
    return CLI_EXIT_OK;
}

/* device_source: where cfg's device spec came from, for messages: the
 * environment when cfg->device is the environment's own string (as
 * cli_engine_config stores it), else the option. */
static const char *device_source(const hb_config *cfg)
{
    const char *env = getenv("HASHBATCH_DEVICE");
    return env != NULL && cfg->device == env ? "HASHBATCH_DEVICE" : NULL;
}

int cli_engine_open_failed(const char *cmd, const hb_config *cfg, hb_status st, const char *detail)
{
    const char *why = detail[0] ? detail : hb_status_str(st);
    /* device_cores only ever comes from the environment here */
    if (st == HB_ERR_INVALID_ARGUMENT && cfg->device_cores != NULL &&
        strstr(why, "device_cores: ") != NULL)
        return cli_usage_error(cmd, "invalid HASHBATCH_DEVICE_CORES value '%s': %s",
                               cfg->device_cores, strstr(why, "device_cores: ") + 14);
    if (st == HB_ERR_BAD_DEVICE_SPEC && cfg->device != NULL) {
        const char *from = device_source(cfg);
        if (from != NULL)
            return cli_usage_error(cmd, "invalid %s value '%s': %s", from, cfg->device, why);
        return cli_usage_error(cmd, "invalid argument '%s' for '--device': %s", cfg->device, why);
    }
    if (cli_engine_settings_invalid(st))
        return cli_usage_error(cmd, "invalid engine settings: %s", why);
    cli_error("cannot start the %s backend%s%s: %s%s%s", hb_backend_name(cfg->backend),
              cfg->device ? " with device " : "", cfg->device ? cfg->device : "", hb_status_str(st),
              detail[0] ? ": " : "", detail);
    return CLI_EXIT_FAILURE;
}

int cli_engine_settings_invalid(hb_status st)
{
    return st == HB_ERR_BAD_DEVICE_SPEC || st == HB_ERR_INVALID_ARGUMENT;
}

int cli_engine_open(const hb_config *cfg, const char *cmd, hb_engine **out)
{
    hb_status st = hb_engine_open(out, cfg);
    if (st == HB_OK)
        return CLI_EXIT_OK;
    *out = NULL;
    return cli_engine_open_failed(cmd, cfg, st, hb_engine_last_error(NULL));
}

int cli_getopt_error(const char *cmd, int c, char **argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    if (c == ':') {
        if (optopt > 0 && optopt < 0x100)
            return cli_usage_error(cmd, "option requires an argument -- '%c'", optopt);
        return cli_usage_error(cmd, "option '%s' requires an argument", arg);
    }
    if (optopt > 0 && optopt < 0x100)
        return cli_usage_error(cmd, "invalid option -- '%c'", optopt);
    if (optopt >= 0x100) /* a long option given an argument it takes none of */
        return cli_usage_error(cmd, "option '%s' doesn't allow an argument", arg);
    return cli_usage_error(cmd, "unrecognized option '%s'", arg);
}

int cli_parse_size(const char *text, uint64_t *out)
{
    char *end;
    if (text[0] < '0' || text[0] > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    unsigned shift = 0;
    if (*end != '\0') {
        const char *units = "KMG";
        const char *u = strchr(units, *end);
        if (u == NULL || end[1] != '\0')
            return -1;
        shift = 10u * (unsigned)(u - units + 1);
    }
    if (errno != 0 || v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}
