/*
 * hcache.c - the hash cache: an SQLite file (WAL mode and a busy timeout,
 * so runs at the same time share it safely) with one row per file:
 *
 *   files(fs, dev, ino, size, mtime_ns, ctime_ns,  -- the key
 *         prefix, sha1,                    -- SHA-1 of the first 4 KiB,
 *                                          -- of the whole file (NULL: not known)
 *         proof,                           -- byte proof id (NULL: none)
 *         path)                            -- one name, for prune and stats
 *
 * keyed by (fs, dev, ino); a row is used only when size, mtime and ctime
 * (in nanoseconds) are what the file has now. ctime matters: a rewrite
 * that puts the old mtime back (touch -r, utime) cannot put back the
 * ctime. fs (fs_id.c: statfs's f_fsid and the filesystem's UUID) matters
 * because st_dev does not name a filesystem: two images mounted in turn
 * on one loop device give equal devices, inodes and (built reproducibly)
 * times. A key whose fs is not known (0) is neither looked up nor stored.
 *
 * The format is PRAGMA user_version (HC_VERSION) plus a meta row
 * format = HC_FORMAT; a file of another format or of a newer version is
 * never written to. One of an older version of this format (version 1
 * keyed rows by device and inode only) is emptied and rebuilt at this
 * version when opened: its rows cannot be told apart by filesystem, so
 * none is ever used.
 *
 * Racy timestamps (git's "racy clean" problem): a file changed in the
 * same timestamp tick as it was read keeps its key while its bytes
 * change. So a key whose mtime or ctime is not older than the moment the
 * read began minus HC_RACY_MARGIN_NS (2 s: the coarsest granularity of
 * the common filesystems, FAT's) is never stored (hc_racy); such a file
 * is simply hashed again next time.
 *
 * Byte proofs: a proof id shared by rows says that those files were
 * compared byte for byte and found identical while their keys were what
 * the rows hold. dedup_cache.c and dedup_classes.c use it (see there);
 * this module only stores it.
 *
 * A row stored for a key the file's row already has is merged into it
 * (PUT_SQL): `sum` adds a whole-file SHA-1 without losing dedup's prefix
 * and proof.
 *
 * Owns: the schema, opening and checking the file, the SQL. Must not:
 * print, or decide what a digest proves.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sqlite3.h>

#include "fs_id.h"
#include "hcache.h"

#define BUSY_TIMEOUT_MS 10000

/* A scan over a range of rows (hc_lookup_many) seeks again after passing
 * this many rows that no key asked for: a seek descends the B-tree with
 * about log2(rows) key comparisons, so past ~32 skipped rows (a table of
 * 4 G rows) seeking is the cheaper way forward whatever the table's size. */
#define RESEEK_AFTER_SKIPPED 32

struct hcache {
    sqlite3 *db;
    sqlite3_stmt *get, *put, *range;
    int in_txn;
    char path[PATH_MAX];
    char err[HC_ERR_MAX];
};

#define STR_(x) #x
#define STR(x) STR_(x)

/* FILES_TABLE: the files table of this version. */
#define FILES_TABLE                                                                                \
    "CREATE TABLE files(fs INTEGER NOT NULL, dev INTEGER NOT NULL, ino INTEGER NOT NULL,"          \
    " size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL,"                \
    " prefix BLOB, sha1 BLOB, proof INTEGER, path TEXT NOT NULL,"                                  \
    " PRIMARY KEY(fs, dev, ino)) WITHOUT ROWID;"

static const char SCHEMA[] = "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                             "INSERT INTO meta VALUES('format', '" HC_FORMAT "');" FILES_TABLE
                             "PRAGMA user_version = " STR(HC_VERSION) ";";

/* UPGRADE: an older version's rows dropped, this version's table made. */
static const char UPGRADE[] =
    "DROP TABLE IF EXISTS files;" FILES_TABLE "PRAGMA user_version = " STR(HC_VERSION) ";";

/* set_err: c's cause, formatted. Returns -1. */
static int set_err(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* db_err: the cause of the database's last failure into c. Returns -1. */
static int db_err(hcache *c, const char *what)
{
    return set_err(c->err, sizeof c->err, "%s: %s", what, sqlite3_errmsg(c->db));
}

/* mkdir_one: makes folder p unless it exists. 0 or -1 with the cause. */
static int mkdir_one(const char *p, char *err, size_t cap)
{
    if (mkdir(p, 0700) == 0 || errno == EEXIST)
        return 0;
    return set_err(err, cap, "cannot create folder %s: %s", p, strerror(errno));
}

int hc_default_path(char *buf, size_t cap, int mkdirs, char *err, size_t errcap)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char base[PATH_MAX];
    if (xdg != NULL && xdg[0] == '/')
        snprintf(base, sizeof base, "%s", xdg);
    else if (home != NULL && home[0] != '\0')
        snprintf(base, sizeof base, "%s/.cache", home);
    else
        return set_err(err, errcap, "neither XDG_CACHE_HOME nor HOME is set");
    char dir[PATH_MAX];
    if ((size_t)snprintf(dir, sizeof dir, "%s/hashbatch", base) >= sizeof dir ||
        (size_t)snprintf(buf, cap, "%s/hashes.sqlite", dir) >= cap)
        return set_err(err, errcap, "cache path too long");
    if (mkdirs && (mkdir_one(base, err, errcap) != 0 || mkdir_one(dir, err, errcap) != 0))
        return -1;
    return 0;
}

/* exec: runs sql (no rows wanted). 0 or -1. */
static int exec(hcache *c, const char *sql)
{
    if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    return db_err(c, "cannot use it");
}

/* query_int: the first column of sql's first row into *v (0 when no
 * row). 0 or -1. */
static int query_int(hcache *c, const char *sql, int64_t *v)
{
    sqlite3_stmt *s = NULL;
    *v = 0;
    if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK)
        return db_err(c, "cannot read it");
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_err(c, "cannot read it");
}

/* in_write_txn: runs sql in its own write transaction (BEGIN IMMEDIATE)
 * when the user_version read inside it, *version, still satisfies
 * wanted(); *version is what the file has afterwards. 0 or -1. */
static int in_write_txn(hcache *c, const char *sql, int (*wanted)(hcache *, int64_t),
                        int64_t *version)
{
    if (exec(c, "BEGIN IMMEDIATE") != 0)
        return -1;
    if (query_int(c, "PRAGMA user_version", version) != 0 ||
        (wanted(c, *version) && exec(c, sql) != 0)) {
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (exec(c, "COMMIT") != 0)
        return -1;
    return query_int(c, "PRAGMA user_version", version);
}

/* is_empty_db: a new database: no version, no tables (another run may
 * have made it ours since it was first looked at). */
static int is_empty_db(hcache *c, int64_t version)
{
    int64_t tables;
    return version == 0 && query_int(c, "SELECT count(*) FROM sqlite_master", &tables) == 0 &&
           tables == 0;
}

/* is_older: one of our older versions (still so inside the transaction). */
static int is_older(hcache *c, int64_t version)
{
    (void)c;
    return version >= 1 && version < HC_VERSION;
}

/* has_format_row: does the meta table say HC_FORMAT? */
static int has_format_row(hcache *c)
{
    sqlite3_stmt *s = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(c->db, "SELECT value FROM meta WHERE key = 'format'", -1, &s, NULL) ==
            SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(s, 0);
        ok = v != NULL && strcmp((const char *)v, HC_FORMAT) == 0;
    }
    sqlite3_finalize(s);
    return ok;
}

/* check_format: a cache of ours at this version: a new empty database is
 * given our schema, one of our older versions is emptied and upgraded
 * (its rows are never used). 0 or -1 (foreign files, and newer versions,
 * are left alone). */
static int check_format(hcache *c)
{
    int64_t version;
    if (query_int(c, "PRAGMA user_version", &version) != 0)
        return -1;
    if (is_empty_db(c, version) && in_write_txn(c, SCHEMA, is_empty_db, &version) != 0)
        return -1;
    if (version != HC_VERSION && !is_older(c, version))
        return set_err(c->err, sizeof c->err,
                       version == 0
                           ? "not a hash cache (a database of something else); left as it is"
                           : "written in another format version (%lld, this is %d); "
                             "left as it is",
                       (long long)version, HC_VERSION);
    if (!has_format_row(c))
        return set_err(c->err, sizeof c->err, "not a hash cache (no format row); left as it is");
    if (is_older(c, version) && in_write_txn(c, UPGRADE, is_older, &version) != 0)
        return -1;
    if (version != HC_VERSION) /* changed by another run meanwhile */
        return set_err(c->err, sizeof c->err,
                       "written in another format version (%lld, this is %d); left as it is",
                       (long long)version, HC_VERSION);
    return 0;
}

/* to_wal: WAL journal (readers never wait for the writer). 0 or -1. */
static int to_wal(hcache *c)
{
    sqlite3_stmt *s = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(c->db, "PRAGMA journal_mode = WAL", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
        const unsigned char *m = sqlite3_column_text(s, 0);
        ok = m != NULL && strcmp((const char *)m, "wal") == 0;
    }
    sqlite3_finalize(s);
    if (!ok)
        return set_err(c->err, sizeof c->err, "cannot switch it to WAL mode: %s",
                       sqlite3_errmsg(c->db));
    return exec(c, "PRAGMA synchronous = NORMAL");
}

/* PUT_SQL: a file's row, merged with the one it has: for the same key,
 * what the new row leaves out (NULL) is kept (sum knows no prefix; a
 * proof stays while the digest does); for another key, replaced. */
#define SAME_KEY                                                                                   \
    "size = excluded.size AND mtime_ns = excluded.mtime_ns AND ctime_ns = excluded.ctime_ns"
static const char PUT_SQL[] =
    "INSERT INTO files VALUES(?10, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    " ON CONFLICT(fs, dev, ino) DO UPDATE "
    "SET"
    " prefix = CASE WHEN " SAME_KEY
    " THEN coalesce(excluded.prefix, prefix) ELSE excluded.prefix END,"
    " sha1 = CASE WHEN " SAME_KEY " THEN coalesce(excluded.sha1, sha1) ELSE excluded.sha1 END,"
    " proof = CASE WHEN " SAME_KEY " AND (excluded.sha1 IS NULL OR excluded.sha1 = sha1)"
    " THEN coalesce(excluded.proof, proof) ELSE excluded.proof END,"
    " size = excluded.size, mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns,"
    " path = excluded.path";

/* prepare: the statements used per file. 0 or -1. */
static int prepare(hcache *c)
{
    if (sqlite3_prepare_v3(c->db,
                           "SELECT size, mtime_ns, ctime_ns, prefix, sha1, proof FROM files"
                           " WHERE fs = ?3 AND dev = ?1 AND ino = ?2",
                           -1, SQLITE_PREPARE_PERSISTENT, &c->get, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(c->db,
                           "SELECT size, mtime_ns, ctime_ns, prefix, sha1, proof, ino FROM files"
                           " WHERE fs = ?4 AND dev = ?1 AND ino BETWEEN ?2 AND ?3 ORDER BY ino",
                           -1, SQLITE_PREPARE_PERSISTENT, &c->range, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(c->db, PUT_SQL, -1, SQLITE_PREPARE_PERSISTENT, &c->put, NULL) !=
            SQLITE_OK)
        return db_err(c, "cannot use it");
    return 0;
}

int hc_open(const char *path, int create, hcache **out, char *err, size_t errcap)
{
    *out = NULL;
    struct stat st;
    if (!create && stat(path, &st) != 0)
        return set_err(err, errcap, "%s", strerror(errno));
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return set_err(err, errcap, "not a regular file");
    hcache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return set_err(err, errcap, "%s", strerror(ENOMEM));
    snprintf(c->path, sizeof c->path, "%s", path);
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, &c->db, flags, NULL);
    if (rc != SQLITE_OK) {
        set_err(err, errcap, "cannot open it: %s",
                c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        hc_close(c);
        return -1;
    }
    sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
    if (sqlite3_db_readonly(c->db, "main") == 1) {
        set_err(c->err, sizeof c->err, "it cannot be written (read-only)");
    } else if (check_format(c) == 0 && to_wal(c) == 0 && prepare(c) == 0) {
        *out = c;
        return 0;
    }
    set_err(err, errcap, "%s", c->err);
    hc_close(c);
    return -1;
}

void hc_close(hcache *c)
{
    if (c == NULL)
        return;
    if (c->in_txn)
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_finalize(c->get);
    sqlite3_finalize(c->range);
    sqlite3_finalize(c->put);
    sqlite3_close(c->db);
    free(c);
}

const char *hc_error(const hcache *c)
{
    return c->err;
}

const char *hc_path(const hcache *c)
{
    return c->path;
}

void hc_key_of(const struct stat *st, uint64_t fs, hc_key *k)
{
    k->fs = fs;
    k->dev = (uint64_t)st->st_dev;
    k->ino = (uint64_t)st->st_ino;
    k->size = (uint64_t)st->st_size;
    k->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
    k->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
}

int64_t hc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int hc_racy(const hc_key *k, int64_t start_ns)
{
    int64_t limit = start_ns - HC_RACY_MARGIN_NS;
    return k->mtime_ns >= limit || k->ctime_ns >= limit;
}

int hc_read_begin(hcache *c)
{
    if (exec(c, "BEGIN") != 0)
        return -1;
    c->in_txn = 1;
    return 0;
}

int hc_read_end(hcache *c)
{
    c->in_txn = 0;
    return exec(c, "COMMIT");
}

/* blob20: column i as a 20-byte digest into out. 1 when present. */
static int blob20(sqlite3_stmt *s, int i, uint8_t *out)
{
    if (sqlite3_column_type(s, i) != SQLITE_BLOB || sqlite3_column_bytes(s, i) != 20)
        return 0;
    memcpy(out, sqlite3_column_blob(s, i), 20);
    return 1;
}

/* row_if_same: when the current row of s (size, mtime_ns, ctime_ns,
 * prefix, sha1, proof in columns 0-5) has key k, *row = that row and 1;
 * else 0. */
static int row_if_same(sqlite3_stmt *s, const hc_key *k, hc_row *row)
{
    int same = (uint64_t)sqlite3_column_int64(s, 0) == k->size &&
               sqlite3_column_int64(s, 1) == k->mtime_ns &&
               sqlite3_column_int64(s, 2) == k->ctime_ns;
    if (!same)
        return 0;
    memset(row, 0, sizeof *row);
    row->key = *k;
    row->has_prefix = blob20(s, 3, row->prefix);
    row->has_full = blob20(s, 4, row->full);
    row->proof = sqlite3_column_int64(s, 5);
    return 1;
}

int hc_lookup(hcache *c, const hc_key *k, hc_row *row)
{
    sqlite3_stmt *s = c->get;
    if (k->fs == 0)
        return 0;
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)k->dev);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)k->ino);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)k->fs);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW) {
        db_err(c, "cannot read it");
        sqlite3_reset(s);
        return -1;
    }
    int same = row_if_same(s, k, row);
    sqlite3_reset(s);
    return same;
}

int hc_key_cmp(const hc_key *a, const hc_key *b)
{
    int64_t fa = (int64_t)a->fs, fb = (int64_t)b->fs;
    if (fa != fb)
        return fa < fb ? -1 : 1;
    int64_t da = (int64_t)a->dev, db = (int64_t)b->dev;
    if (da != db)
        return da < db ? -1 : 1;
    int64_t ia = (int64_t)a->ino, ib = (int64_t)b->ino;
    return ia < ib ? -1 : ia > ib;
}

/* seek_range: points c->range at the rows of (fs, dev) from ino lo to
 * hi. */
static void seek_range(hcache *c, uint64_t fs, uint64_t dev, uint64_t lo, uint64_t hi)
{
    sqlite3_stmt *s = c->range;
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)fs);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)dev);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)lo);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)hi);
}

/* lookup_device: hc_lookup_many for keys[0..n), which share one
 * filesystem and device (fs nonzero): one ordered pass over their rows
 * from the first key's inode to
 * the last's, merged with the keys, seeking forward again where the rows
 * between two keys are many. 0 or -1. */
static int lookup_device(hcache *c, const hc_key *keys, size_t n, hc_row *rows,
                         unsigned char *found)
{
    sqlite3_stmt *s = c->range;
    uint64_t fs = keys[0].fs, dev = keys[0].dev, last = keys[n - 1].ino;
    size_t i = 0, skipped = 0;
    seek_range(c, fs, dev, keys[0].ino, last);
    while (i < n) {
        int rc = sqlite3_step(s);
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            db_err(c, "cannot read it");
            sqlite3_reset(s);
            return -1;
        }
        int64_t ino = sqlite3_column_int64(s, 6);
        while (i < n && (int64_t)keys[i].ino < ino)
            i++; /* keys without a row */
        if (i < n && (int64_t)keys[i].ino == ino) {
            found[i] = (unsigned char)row_if_same(s, &keys[i], &rows[i]);
            i++;
            skipped = 0;
        } else if (++skipped >= RESEEK_AFTER_SKIPPED && i < n) {
            seek_range(c, fs, dev, keys[i].ino, last);
            skipped = 0;
        }
    }
    sqlite3_reset(s);
    return 0;
}

int hc_lookup_many(hcache *c, const hc_key *keys, size_t n, hc_row *rows, unsigned char *found)
{
    memset(found, 0, n);
    for (size_t i = 0; i < n;) {
        size_t end = i + 1;
        while (end < n && keys[end].fs == keys[i].fs && keys[end].dev == keys[i].dev)
            end++;
        if (keys[i].fs != 0 && lookup_device(c, keys + i, end - i, rows + i, found + i) != 0)
            return -1;
        i = end;
    }
    return 0;
}

int hc_write_begin(hcache *c)
{
    if (exec(c, "BEGIN IMMEDIATE") != 0)
        return -1;
    c->in_txn = 1;
    return 0;
}

int hc_write_commit(hcache *c)
{
    c->in_txn = 0;
    if (exec(c, "COMMIT") == 0)
        return 0;
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

int hc_put(hcache *c, const hc_row *row, const char *path)
{
    sqlite3_stmt *s = c->put;
    if (row->key.fs == 0)
        return 0; /* a filesystem not known: nothing could find it again safely */
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 10, (sqlite3_int64)row->key.fs);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)row->key.dev);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)row->key.ino);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)row->key.size);
    sqlite3_bind_int64(s, 4, row->key.mtime_ns);
    sqlite3_bind_int64(s, 5, row->key.ctime_ns);
    if (row->has_prefix)
        sqlite3_bind_blob(s, 6, row->prefix, 20, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 6);
    if (row->has_full)
        sqlite3_bind_blob(s, 7, row->full, 20, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 7);
    if (row->proof != 0)
        sqlite3_bind_int64(s, 8, row->proof);
    else
        sqlite3_bind_null(s, 8);
    sqlite3_bind_text(s, 9, path, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_DONE ? 0 : db_err(c, "cannot store in it");
}

/* file_size: bytes of path on disk, 0 when it is not there. */
static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

int hc_get_stats(hcache *c, hc_stats *s)
{
    memset(s, 0, sizeof *s);
    int64_t v;
    if (query_int(c, "SELECT count(*) FROM files", &s->entries) != 0 ||
        query_int(c, "SELECT coalesce(sum(size), 0) FROM files", &s->bytes) != 0 ||
        query_int(c, "SELECT count(*) FROM files WHERE sha1 IS NOT NULL", &s->with_full) != 0 ||
        query_int(c, "SELECT count(*) FROM files WHERE proof IS NOT NULL", &s->with_proof) != 0 ||
        query_int(c, "PRAGMA user_version", &v) != 0)
        return -1;
    s->version = (int)v;
    char wal[PATH_MAX + 8];
    snprintf(wal, sizeof wal, "%s-wal", c->path);
    s->file_bytes = file_size(c->path) + file_size(wal);
    return 0;
}

/* still_there: is the file at path the version key names (on the same
 * filesystem: fs_id.c asks once per device)? */
static int still_there(const char *path, const hc_key *key)
{
    struct stat st;
    fs_id id;
    hc_key now;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        fs_id_at(AT_FDCWD, path, st.st_dev, &id) != 0)
        return 0;
    hc_key_of(&st, id.fs, &now);
    return now.fs == key->fs && now.dev == key->dev && now.ino == key->ino &&
           now.size == key->size && now.mtime_ns == key->mtime_ns && now.ctime_ns == key->ctime_ns;
}

int hc_prune(hcache *c, int64_t *kept, int64_t *dropped)
{
    *kept = *dropped = 0;
    if (hc_write_begin(c) != 0)
        return -1;
    sqlite3_stmt *sel = NULL, *del = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(c->db, "SELECT fs, dev, ino, size, mtime_ns, ctime_ns, path FROM files",
                           -1, &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c->db, "DELETE FROM files WHERE fs = ?1 AND dev = ?2 AND ino = ?3", -1,
                           &del, NULL) != SQLITE_OK) {
        db_err(c, "cannot prune it");
        goto out;
    }
    int step;
    while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
        hc_key k = {.fs = (uint64_t)sqlite3_column_int64(sel, 0),
                    .dev = (uint64_t)sqlite3_column_int64(sel, 1),
                    .ino = (uint64_t)sqlite3_column_int64(sel, 2),
                    .size = (uint64_t)sqlite3_column_int64(sel, 3),
                    .mtime_ns = sqlite3_column_int64(sel, 4),
                    .ctime_ns = sqlite3_column_int64(sel, 5)};
        const char *path = (const char *)sqlite3_column_text(sel, 6);
        if (path != NULL && still_there(path, &k)) {
            (*kept)++;
            continue;
        }
        sqlite3_reset(del);
        sqlite3_bind_int64(del, 1, sqlite3_column_int64(sel, 0));
        sqlite3_bind_int64(del, 2, sqlite3_column_int64(sel, 1));
        sqlite3_bind_int64(del, 3, sqlite3_column_int64(sel, 2));
        if (sqlite3_step(del) != SQLITE_DONE) {
            db_err(c, "cannot prune it");
            goto out;
        }
        (*dropped)++;
    }
    if (step != SQLITE_DONE) {
        db_err(c, "cannot read it");
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(del);
    if (rc == 0)
        return hc_write_commit(c);
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    c->in_txn = 0;
    return -1;
}

int hc_clear(hcache *c, int64_t *dropped)
{
    if (query_int(c, "SELECT count(*) FROM files", dropped) != 0 ||
        exec(c, "DELETE FROM files") != 0)
        return -1;
    return exec(c, "VACUUM");
}
