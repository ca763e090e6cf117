/*
 * act_log.c - the log of `link`, `remove` and `dedup --action` (--log
 * FILE): one JSON object per line, appended and flushed as each thing
 * happens, so a run that was interrupted can be read back and resumed:
 *
 *   {"time": "2024-05-01T12:00:00Z", "action": "hard", "path": "b",
 *    "kept": "a", "status": "done"}
 *
 * status: "begin" (about to replace path; "temp" names the temporary),
 * "done", "already" (path already was a link to kept, or was gone for
 * remove), "skipped" (with "reason"), "failed" (with "reason") and
 * "planned" (--dry-run). A name that is not UTF-8 also gets its bytes in
 * hex ("path_hex", "kept_hex"), as `dedup --json` writes them.
 *
 * Owns: the log's format and file. Must not: decide anything, or print
 * on stdout or stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "act.h"
#include "cli.h"
#include "utf8.h"

struct act_log {
    FILE *f;
};

const char *act_kind_name(act_kind k)
{
    static const char *const names[] = {"hard", "reflink", "symlink", "remove"};
    return names[k];
}

act_log *act_log_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return NULL;
    act_log *l = malloc(sizeof *l);
    if (l == NULL || (l->f = fdopen(fd, "a")) == NULL) {
        int e = l ? errno : ENOMEM;
        free(l);
        close(fd);
        errno = e;
        return NULL;
    }
    return l;
}

/* put_name: "key": "NAME" and, for a name that is not UTF-8, its hex. */
static void put_name(FILE *f, const char *key, const char *name)
{
    fprintf(f, ", \"%s\": ", key);
    json_put_string(f, name, strlen(name));
    if (!utf8_valid(name)) {
        fprintf(f, ", \"%s_hex\": \"", key);
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
            fprintf(f, "%02x", *p);
        fputc('"', f);
    }
}

int act_log_write(act_log *l, act_kind kind, const char *path, const char *kept, const char *status,
                  const char *reason, const char *temp)
{
    if (l == NULL)
        return 0;
    char when[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) != NULL)
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(l->f, "{\"time\": \"%s\", \"action\": \"%s\"", when, act_kind_name(kind));
    put_name(l->f, "path", path);
    if (kept)
        put_name(l->f, "kept", kept);
    fprintf(l->f, ", \"status\": \"%s\"", status);
    if (reason) {
        fputs(", \"reason\": ", l->f);
        json_put_string(l->f, reason, strlen(reason));
    }
    if (temp)
        put_name(l->f, "temp", temp);
    fputs("}\n", l->f);
    return fflush(l->f) == 0 && !ferror(l->f) ? 0 : -1;
}

int act_log_close(act_log *l)
{
    if (l == NULL)
        return 0;
    int bad = ferror(l->f);
    int rc = fclose(l->f);
    free(l);
    if (bad && rc == 0) {
        errno = EIO;
        rc = -1;
    }
    return rc == 0 ? 0 : -1;
}
