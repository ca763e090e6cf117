/*
 * hcache.h - the hash cache (hcache.c): one SQLite file remembering, per
 * file, the SHA-1 of its first DD_PREFIX_BYTES and of its whole contents,
 * keyed by what identifies one version of one file (filesystem, device,
 * inode, size, modification and change times in nanoseconds; the
 * filesystem as fs_id.c names it, so that another filesystem mounted
 * later on the same device never shares a row). Used by `dedup --cache`
 * (dedup_cache.c), `sum --cache` (sum_run.c) and `hashbatch cache`
 * (cmd_cache.c). See hcache.c's top comment for the rules that make a
 * cached digest safe to use.
 *
 * Owns: the interface of the cache file. Must not: print (callers do).
 */
#ifndef HB_CLI_HCACHE_H
#define HB_CLI_HCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#define HC_FORMAT "hashbatch-hash-cache" /* the meta row's value */
#define HC_VERSION 2                     /* PRAGMA user_version of this format */
#define HC_RACY_MARGIN_NS 2000000000LL   /* timestamp granularity assumed: 2 s */
#define HC_ERR_MAX 512

typedef struct hcache hcache;

/* What identifies one version of one file. fs is fs_id's fs (nonzero):
 * a key whose fs is 0 (the filesystem is not known) is never found and
 * never stored. */
typedef struct {
    uint64_t fs, dev, ino, size;
    int64_t mtime_ns, ctime_ns;
} hc_key;

/* One row: a key and what is known of its contents. */
typedef struct {
    hc_key key;
    int has_prefix, has_full;
    uint8_t prefix[20], full[20];
    int64_t proof; /* byte proof id shared by files proven identical; 0 none */
} hc_row;

/* What `cache stats` shows. */
typedef struct {
    int64_t entries, bytes, with_full, with_proof;
    int64_t file_bytes; /* the database and its WAL on disk */
    int version;
} hc_stats;

/* hc_default_path: $XDG_CACHE_HOME/hashbatch/hashes.sqlite (~/.cache/...
 * when unset) into buf; mkdirs creates the folders. Returns 0, or -1 with
 * the cause in err. */
int hc_default_path(char *buf, size_t cap, int mkdirs, char *err, size_t errcap);

/* hc_open: opens (create: creating when missing) the cache file path,
 * checking its format and version and switching it to WAL. A cache of
 * an older version of this format is emptied and given this version (its
 * rows lack what the keys need now: they are never used). Returns 0, or
 * -1 with one line's cause in err (missing, not a database, another
 * format, a newer version, read-only, locked...); *out is then NULL and
 * the file is left as it was. */
int hc_open(const char *path, int create, hcache **out, char *err, size_t errcap);

/* hc_close: closes c (NULL allowed), rolling back an open transaction. */
void hc_close(hcache *c);

/* hc_error: the cause of c's last failure. */
const char *hc_error(const hcache *c);

/* hc_key_of: the key of a stat result on the filesystem fs (fs_id's fs;
 * 0: not known, the key is then never found nor stored). */
void hc_key_of(const struct stat *st, uint64_t fs, hc_key *k);

/* hc_now_ns: the wall clock (CLOCK_REALTIME) in nanoseconds. */
int64_t hc_now_ns(void);

/* hc_racy: could a file with key k have changed without its key changing
 * after a read that began at start_ns (its mtime or ctime not older than
 * start_ns minus the timestamp granularity)? Such a key is never stored. */
int hc_racy(const hc_key *k, int64_t start_ns);

/* hc_read_begin / hc_read_end: a read transaction around many lookups
 * (one snapshot, no per-lookup locking). 0 or -1. */
int hc_read_begin(hcache *c);
int hc_read_end(hcache *c);

/* hc_lookup: the row of (k->fs, k->dev, k->ino) when its whole key
 * equals *k.
 * Returns 1 (found, *row set), 0 (none, or a different version), -1 on
 * an error (hc_error). */
int hc_lookup(hcache *c, const hc_key *k, hc_row *row);

/* hc_key_cmp: the order hc_lookup_many wants its keys in (filesystem,
 * device, then inode, each compared as SQLite compares its 64-bit
 * integers, signed); <0, 0, >0 as for qsort. */
int hc_key_cmp(const hc_key *a, const hc_key *b);

/* hc_lookup_many: hc_lookup for keys[0..n) (sorted by hc_key_cmp, no two
 * with one filesystem, device and inode; the arrays never NULL, even for
 * n = 0) in
 * one ordered pass over their rows, which
 * costs a fraction of n lookups when the keys are many: found[i] = 1 and
 * rows[i] set where key i's row holds it unchanged, found[i] = 0
 * elsewhere. Inside hc_read_begin/end. Returns 0, or -1 on an error
 * (hc_error; found[] is then partial). */
int hc_lookup_many(hcache *c, const hc_key *keys, size_t n, hc_row *rows, unsigned char *found);

/* hc_write_begin / hc_write_commit: one write transaction (waiting up to
 * the busy timeout for another writer). 0 or -1. */
int hc_write_begin(hcache *c);
int hc_write_commit(hcache *c);

/* hc_put: stores row (replacing the file's earlier row) with its path,
 * inside a write transaction. Racy keys must not be passed; a key whose
 * fs is 0 is not stored (0 is returned). 0 or -1. */
int hc_put(hcache *c, const hc_row *row, const char *path);

/* hc_get_stats: counts of c's rows and its size on disk. 0 or -1. */
int hc_get_stats(hcache *c, hc_stats *s);

/* hc_prune: deletes rows whose path is gone or names another version
 * (key differs: another filesystem on the device included); *kept and
 * *dropped count them. 0 or -1. */
int hc_prune(hcache *c, int64_t *kept, int64_t *dropped);

/* hc_clear: deletes every row (*dropped: how many). 0 or -1. */
int hc_clear(hcache *c, int64_t *dropped);

/* hc_path: the file c was opened from. */
const char *hc_path(const hcache *c);

#endif /* HB_CLI_HCACHE_H */
