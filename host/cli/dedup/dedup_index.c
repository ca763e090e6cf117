/*
 * dedup_index.c - the scan's index (`dedup --index-out FILE`): JSON lines,
 * a first line that describes the index, then one line per path of a
 * regular file the scan examined (every file at or above --min-size, each
 * hashed whole: dd_index_hash_all), for `dedup --merge` (dedup_merge.c).
 *
 *   {"format": "hashbatch-index", "version": 1, "host": H, "cwd": C,
 *    "roots": [...], "time": "YYYY-MM-DDThh:mm:ssZ", "min_size": N,
 *    "empty": false, "files": N}
 *   {"size": N, "prefix_sha1": HEX, "sha1": HEX, "device": D, "inode": I,
 *    "mtime_ns": T, "class": C, "path": P[, "path_hex": HEX][, "fs": F]}
 *
 * "files" counts the lines that follow, so a truncated index is caught.
 * "host" is the scanning machine's name: a merge takes records of one
 * host and path, and records of one device, inode, size and mtime (from
 * any host), for one file. "fs" is the file's filesystem (fs_id.h's
 * nonzero number; absent where it could not be had, and in indexes
 * written before it: unknown); where two such records both carry one,
 * they are one file only when it agrees.
 * "class" is the scan's own: files of one class were proven equal byte
 * for byte; two classes with one SHA-1 are a collision, which tells the
 * merge that this SHA-1 alone proves nothing.
 * The file is written to a temporary name beside FILE, synced, then
 * renamed over it: a reader never sees half an index.
 *
 * Owns: the index format and writing it. Must not: decide groups.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "dedup_cache.h"
#include "dedup_dirs.h"
#include "fs_id.h"

#define INDEX_VERSION 1

int64_t dd_mtime_ns(const dd_inode *k)
{
    return k->mtime_sec * INT64_C(1000000000) + (int64_t)k->mtime_nsec;
}

/* files_failed: why a files job's result res for k is not k's digest. */
static const char *files_failed(const hb_file_result *res, const dd_inode *k, char *buf, size_t cap)
{
    if (res->status == HB_OK && res->size == k->size)
        return NULL;
    if (res->status == HB_OK || res->status == HB_ERR_FILE_CHANGED)
        return "changed during the scan: left out";
    snprintf(buf, cap, "%s%s%s", hb_status_str(res->status), res->err ? ": " : "",
             res->err ? strerror(res->err) : "");
    return buf;
}

int dd_index_hash_all(dd_run *r)
{
    size_t n = 0;
    for (uint32_t k = 0; k < r->ninodes; k++) /* what the cache knows is not read */
        if (r->inodes[k].state == DD_ALIVE && !r->inodes[k].hashed)
            (void)dd_cache_take_full(r, k);
    for (uint32_t k = 0; k < r->ninodes; k++)
        n += r->inodes[k].state == DD_ALIVE && !r->inodes[k].hashed;
    if (n == 0)
        return 0;
    hb_file_input *in = calloc(n, sizeof *in);
    hb_file_result *res = calloc(n, sizeof *res);
    uint32_t *which = malloc(n * sizeof *which);
    int rc = -1;
    if (in == NULL || res == NULL || which == NULL || dd_need_engine(r) != 0)
        goto out;
    n = 0;
    for (uint32_t k = 0; k < r->ninodes; k++)
        if (r->inodes[k].state == DD_ALIVE && !r->inodes[k].hashed) {
            in[n].path = dd_inode_name(r, k);
            in[n].fd = -1;
            which[n++] = k;
        }
    hb_files_job *job = NULL;
    hb_status st = hb_submit_files(r->engine, in, n, res, NULL, &job);
    if (st == HB_OK)
        st = hb_files_job_wait(job, -1);
    hb_files_job_free(job);
    if (st != HB_OK) {
        dd_engine_error(r, st);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        dd_inode *k = &r->inodes[which[i]];
        char buf[200];
        const char *cause = files_failed(&res[i], k, buf, sizeof buf);
        if (cause != NULL) {
            dd_fail_inode(r, which[i], cause);
            continue;
        }
        memcpy(k->full, res[i].digest, 20);
        if (k->size <= DD_PREFIX_BYTES)
            memcpy(k->prefix, res[i].digest, 20);
        k->hashed = 1;
        r->hashed_full++;
        r->bytes_full += k->size;
    }
    rc = 0;
out:
    if (rc != 0 && !r->fatal) {
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
    }
    free(in);
    free(res);
    free(which);
    return rc;
}

static void put_hex20(FILE *f, const uint8_t *d)
{
    for (int i = 0; i < 20; i++)
        fprintf(f, "%02x", d[i]);
}

/* listed: per path index, 1 when the path belongs to an alive inode
 * hashed whole (paths folded away by the scan belong to none). NULL when
 * memory is short. */
static uint8_t *listed(const dd_run *r, size_t *count)
{
    uint8_t *l = calloc(r->npaths ? r->npaths : 1, 1);
    *count = 0;
    if (l == NULL)
        return NULL;
    for (uint32_t k = 0; k < r->ninodes; k++) {
        const dd_inode *in = &r->inodes[k];
        if (in->state != DD_ALIVE || !in->hashed)
            continue;
        for (uint32_t p = 0; p < in->npaths; p++) {
            l[r->by_inode[in->first + p]] = 1;
            (*count)++;
        }
    }
    return l;
}

/* put_header: the index's first line. */
static void put_header(FILE *f, const dd_run *r, size_t count)
{
    char host[256] = "", cwd[PATH_MAX], when[32] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    if (getcwd(cwd, sizeof cwd) == NULL)
        cwd[0] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) != NULL)
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "{\"format\": \"hashbatch-index\", \"version\": %d, \"host\": ", INDEX_VERSION);
    json_put_string(f, host, strlen(host));
    fputs(", \"cwd\": ", f);
    json_put_string(f, cwd, strlen(cwd));
    fputs(", \"roots\": ", f);
    const struct dd_dirs *d = r->dirs;
    if (d == NULL || d->roots == NULL) {
        fputs("null", f);
    } else {
        fputc('[', f);
        for (size_t i = 0; i < d->nroots; i++) {
            fputs(i ? ", " : "", f);
            json_put_string(f, d->roots[i], strlen(d->roots[i]));
        }
        fputc(']', f);
    }
    fprintf(f, ", \"time\": \"%s\", \"min_size\": %" PRIu64 ", \"empty\": %s, \"files\": %zu}\n",
            when, r->o->min_size, r->o->empty ? "true" : "false", count);
}

/* put_fs: ", \"fs\": F" for inode k, asked of its first path (the one
 * its device is of: fs_id.c asks the kernel once per device), or nothing
 * when it cannot be had. */
static void put_fs(FILE *f, const dd_run *r, uint32_t k)
{
    fs_id id;
    if (fs_id_at(AT_FDCWD, dd_inode_name(r, k), r->inodes[k].dev, &id) == 0 && id.fs != 0)
        fprintf(f, ", \"fs\": %" PRIu64, id.fs);
}

/* put_lines: the header and one line per listed path, in walk order. */
static void put_lines(FILE *f, const dd_run *r, const uint8_t *l, size_t count)
{
    put_header(f, r, count);
    for (size_t i = 0; i < r->npaths; i++) {
        if (!l[i])
            continue;
        const dd_inode *k = &r->inodes[r->paths[i].inode];
        fprintf(f, "{\"size\": %" PRIu64 ", \"prefix_sha1\": \"", k->size);
        put_hex20(f, k->size <= DD_PREFIX_BYTES ? k->full : k->prefix);
        fputs("\", \"sha1\": \"", f);
        put_hex20(f, k->full);
        fprintf(f,
                "\", \"device\": %ju, \"inode\": %ju, \"mtime_ns\": %" PRId64
                ", \"class\": %" PRIu32 ", ",
                (uintmax_t)k->dev, (uintmax_t)k->ino, dd_mtime_ns(k), k->cls);
        dd_put_json_path(f, dd_path_name(r, (uint32_t)i));
        put_fs(f, r, r->paths[i].inode);
        fputs("}\n", f);
    }
}

/* write_atomic: the lines into a temporary file beside path, synced and
 * renamed over path. Returns 0 or -1 (reported). */
static int write_atomic(const dd_run *r, const char *path, const uint8_t *l, size_t count)
{
    size_t len = strlen(path);
    char *tmp = malloc(len + 16);
    if (tmp == NULL) {
        cli_error("%s", strerror(ENOMEM));
        return -1;
    }
    snprintf(tmp, len + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        cli_error("%s: --index-out: cannot create a temporary file beside it: %s", path,
                  strerror(errno));
        free(tmp);
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask); /* mkstemp made it 0600 */
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        close(fd);
        unlink(tmp);
        free(tmp);
        cli_error_path(path, ENOMEM);
        return -1;
    }
    put_lines(f, r, l, count);
    int e = 0;
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0)
        e = errno ? errno : EIO;
    if (fclose(f) != 0 && e == 0)
        e = errno;
    if (e == 0 && rename(tmp, path) != 0)
        e = errno;
    if (e != 0) {
        unlink(tmp);
        cli_error_path(path, e);
    }
    free(tmp);
    return e ? -1 : 0;
}

int dd_index_write(const dd_run *r, const char *path)
{
    size_t count;
    uint8_t *l = listed(r, &count);
    if (l == NULL) {
        cli_error("%s", strerror(ENOMEM));
        return -1;
    }
    int rc = 0;
    if (strcmp(path, "-") == 0) {
        put_lines(stdout, r, l, count);
        fflush(stdout);
    } else {
        rc = write_atomic(r, path, l, count);
    }
    free(l);
    return rc;
}
