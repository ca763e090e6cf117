/*
 * bench_peer_build.c - the isa-l_crypto peer of `hashbatch bench
 * --peer-isal DIR` (or HASHBATCH_PEER_ISAL=DIR), built: bench/isal_peer.c,
 * embedded in the program at build time (host/cli/CMakeLists.txt),
 * compiled once against the isa-l_crypto install in DIR.
 *
 * Owns: checking DIR (include/isa-l_crypto.h, include/isa-l_crypto/
 * sha1_mb.h, lib/ or lib64/ with libisal_crypto.a, else .so), finding
 * the C compiler ($CC, split at blanks, or cc, on PATH), naming the build
 * by a SHA-1 of everything that goes into it (the source, DIR's files and
 * their sizes and times, the compiler and its flags), so that a stale
 * build is never reused, and compiling it atomically into
 * $XDG_CACHE_HOME/hashbatch/ (default ~/.cache/hashbatch/). A wrong DIR
 * is a usage error; no compiler, a failed compile or an unwritable cache
 * a failure. Must not: declare or call anything of isa-l_crypto's (only
 * the compiled peer does: its structs are not ours to copy), run the
 * peer (bench_peer_run.c does), or print anything but an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

#ifndef HB_OPENSSL_INCLUDE_DIR
#define HB_OPENSSL_INCLUDE_DIR ""
#endif
#ifndef HB_OPENSSL_CRYPTO_LIBRARY
#define HB_OPENSSL_CRYPTO_LIBRARY ""
#endif

#define MAX_CC_WORDS 16
#define MAX_ARGS (MAX_CC_WORDS + 24)
#define KEY_HEX 41

static const char *const headers[] = {"isa-l_crypto.h", "isa-l_crypto/sha1_mb.h"};
static const char *const lib_dirs[] = {"lib", "lib64"};

/* too_long: did an snprintf that returned n not fit in len bytes? */
static int too_long(int n, size_t len)
{
    return n < 0 || (size_t)n >= len;
}

/* dir_error: a usage error about DIR, naming where it came from. */
static int dir_error(const bench_peer *p, const char *why)
{
    return cli_usage_error(BENCH_CMD, "%s '%s' %s", p->origin, p->dir, why);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* find_library: lib/ or lib64/ with libisal_crypto.a (nothing to find at
 * run time), else libisal_crypto.so. */
static int find_library(bench_peer *p)
{
    static const char *const names[] = {"libisal_crypto.a", "libisal_crypto.so"};
    for (size_t n = 0; n < 2; n++) {
        for (size_t d = 0; d < 2; d++) {
            snprintf(p->library, sizeof p->library, "%s/%s/%s", p->dir, lib_dirs[d], names[n]);
            if (is_file(p->library)) {
                p->library_shared = n == 1;
                return 0;
            }
        }
    }
    p->library[0] = '\0';
    return -1;
}

/* check_dir: DIR is an isa-l_crypto install prefix. */
static int check_dir(bench_peer *p)
{
    struct stat st;
    char why[BENCH_PATH_MAX + 160];
    if (p->dir[0] == '\0')
        return cli_usage_error(BENCH_CMD,
                               "%s is empty: give the directory of an isa-l_crypto "
                               "install",
                               p->origin);
    if (strlen(p->dir) > BENCH_PATH_MAX / 2)
        return dir_error(p, "is too long a path");
    if (stat(p->dir, &st) != 0) {
        snprintf(why, sizeof why, "cannot be used: %s", strerror(errno));
        return dir_error(p, why);
    }
    if (!S_ISDIR(st.st_mode))
        return dir_error(p, "is not a directory (expected an isa-l_crypto install prefix)");
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        char path[BENCH_PATH_MAX];
        snprintf(path, sizeof path, "%s/include/%s", p->dir, headers[i]);
        if (!is_file(path)) {
            snprintf(why, sizeof why,
                     "has no include/%s: expected an isa-l_crypto install prefix (its make "
                     "install with --prefix=DIR)",
                     headers[i]);
            return dir_error(p, why);
        }
    }
    if (find_library(p) != 0)
        return dir_error(p, "has no lib/libisal_crypto.a or lib/libisal_crypto.so (nor under "
                            "lib64/): expected an isa-l_crypto install prefix");
    snprintf(p->include, sizeof p->include, "%s/include", p->dir);
    return CLI_EXIT_OK;
}

/* split_words: text at blanks into words[] (in store). Returns the count,
 * or -1 when there are too many. */
static int split_words(const char *text, char *store, size_t len, char **words)
{
    snprintf(store, len, "%s", text);
    int n = 0;
    for (char *w = strtok(store, " \t"); w != NULL; w = strtok(NULL, " \t")) {
        if (n == MAX_CC_WORDS)
            return -1;
        words[n++] = w;
    }
    return n;
}

/* on_path: the executable called name (with a '/': that path) into out. */
static int on_path(const char *name, char *out, size_t len)
{
    if (strchr(name, '/') != NULL) {
        snprintf(out, len, "%s", name);
        return access(out, X_OK) == 0 && is_file(out) ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (path == NULL || path[0] == '\0')
        path = "/usr/bin:/bin";
    for (const char *d = path;;) {
        size_t n = strcspn(d, ":");
        snprintf(out, len, "%.*s/%s", (int)(n ? n : 1), n ? d : ".", name);
        if (access(out, X_OK) == 0 && is_file(out))
            return 0;
        if (d[n] == '\0')
            return -1;
        d += n + 1;
    }
}

/* find_compiler: $CC (split at blanks) or cc, its program on PATH. */
static int find_compiler(bench_peer *p, char **words, int *nwords)
{
    const char *cc = getenv("CC");
    const char *from = cc != NULL && cc[0] != '\0' ? "CC" : NULL;
    *nwords = -1;
    if (!too_long(snprintf(p->compiler, sizeof p->compiler, "%s", from ? cc : "cc"),
                  sizeof p->compiler))
        *nwords = split_words(p->compiler, p->compiler_words, sizeof p->compiler_words, words);
    if (*nwords <= 0) {
        cli_error(BENCH_CMD ": CC='%s' names no compiler (or has more than %d words, or %zu "
                            "bytes)",
                  cc, MAX_CC_WORDS, sizeof p->compiler - 1);
        return CLI_EXIT_FAILURE;
    }
    if (on_path(words[0], p->compiler_path, sizeof p->compiler_path) != 0) {
        cli_error(BENCH_CMD ": no C compiler: %s%s'%s' is not %s; %s %s needs one to build "
                            "the isa-l_crypto peer (bench/isal_peer.c): install one (Debian: "
                            "apt-get install gcc) or set CC",
                  from ? from : "", from ? "=" : "", words[0],
                  strchr(words[0], '/') ? "an executable file" : "on PATH", p->origin, p->dir);
        return CLI_EXIT_FAILURE;
    }
    words[0] = p->compiler_path;
    return CLI_EXIT_OK;
}

/* cache_dir: $XDG_CACHE_HOME/hashbatch (an absolute XDG_CACHE_HOME), else
 * $HOME/.cache/hashbatch, made with its parents. */
static int cache_dir(char *out, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg != NULL && xdg[0] == '/')
        n = snprintf(out, len, "%s/hashbatch", xdg);
    else if (home != NULL && home[0] != '\0')
        n = snprintf(out, len, "%s/.cache/hashbatch", home);
    else {
        cli_error(BENCH_CMD ": no cache directory for the isa-l_crypto peer: neither "
                            "XDG_CACHE_HOME (absolute) nor HOME is set");
        return CLI_EXIT_FAILURE;
    }
    if (too_long(n, len / 2)) {
        cli_error(BENCH_CMD ": the cache directory for the isa-l_crypto peer (from "
                            "XDG_CACHE_HOME or HOME) is too long a path");
        return CLI_EXIT_FAILURE;
    }
    for (char *s = out + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        int bad = mkdir(out, 0755) != 0 && errno != EEXIST;
        int e = errno;
        *s = c;
        if (bad) {
            cli_error_path(out, e);
            return CLI_EXIT_FAILURE;
        }
        if (c == '\0')
            return CLI_EXIT_OK;
    }
}

/* add_text, add_file: parts of the build's name. A file counts by its
 * path, identity, size and modification time. */
static void add_text(EVP_MD_CTX *md, const char *s)
{
    EVP_DigestUpdate(md, s, strlen(s) + 1);
}

static void add_file(EVP_MD_CTX *md, const char *path)
{
    struct stat st;
    char buf[BENCH_PATH_MAX + 128];
    memset(&st, 0, sizeof st);
    stat(path, &st);
    int n = snprintf(buf, sizeof buf, "%s dev=%llu ino=%llu size=%lld mtime=%lld.%09ld", path,
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                     (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    if (n > 0)
        EVP_DigestUpdate(md, buf, (size_t)n < sizeof buf ? (size_t)n + 1 : sizeof buf);
}

/* build_key: the SHA-1 (hex) of the source, the command that compiles it
 * and the files it reads. */
static int build_key(const bench_peer *p, char *const *args, char *hex)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md != NULL && EVP_DigestInit_ex(md, EVP_sha1(), NULL) == 1;
    if (ok) {
        add_text(md, "hashbatch isal_peer build 1");
        EVP_DigestUpdate(md, bench_isal_peer_source, bench_isal_peer_source_size);
        for (size_t i = 0; args[i] != NULL; i++)
            add_text(md, args[i]);
        char real[PATH_MAX];
        add_text(md, realpath(p->dir, real) ? real : p->dir);
        for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
            char path[BENCH_PATH_MAX];
            if (!too_long(snprintf(path, sizeof path, "%s/%s", p->include, headers[i]),
                          sizeof path))
                add_file(md, path);
        }
        add_file(md, p->library);
        add_file(md, p->compiler_path);
        add_file(md, HB_OPENSSL_CRYPTO_LIBRARY);
        ok = EVP_DigestFinal_ex(md, d, &n) == 1 && n == 20;
    }
    EVP_MD_CTX_free(md);
    if (!ok) {
        cli_error(BENCH_CMD ": OpenSSL's SHA-1 failed naming the isa-l_crypto peer's build");
        return CLI_EXIT_FAILURE;
    }
    for (unsigned i = 0; i < 20; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return CLI_EXIT_OK;
}

/* compile_args: the compiler's words, then its flags, with two empty
 * slots to fill in: the source (its index is returned) and the output
 * (the last argument, after -o); NULL-terminated. */
static size_t compile_args(bench_peer *p, char **words, int nwords, char **args)
{
    static char std[] = "-std=c11", opt[] = "-O2", inc[] = "-I", pthread[] = "-lpthread",
                out[] = "-o", lcrypto[] = "-lcrypto", slot[] = "";
    size_t n = 0, src;
    for (int i = 0; i < nwords; i++)
        args[n++] = words[i];
    args[n++] = std;
    args[n++] = opt;
    args[n++] = inc;
    args[n++] = p->include;
    if (HB_OPENSSL_INCLUDE_DIR[0] != '\0' && strcmp(HB_OPENSSL_INCLUDE_DIR, "/usr/include") != 0 &&
        access(HB_OPENSSL_INCLUDE_DIR, F_OK) == 0) {
        static char ssl_inc[] = HB_OPENSSL_INCLUDE_DIR;
        args[n++] = inc;
        args[n++] = ssl_inc;
    }
    src = n;
    args[n++] = slot;
    args[n++] = p->library;
    if (p->library_shared) {
        snprintf(p->rpath, sizeof p->rpath, "-Wl,-rpath,%.*s",
                 (int)(strrchr(p->library, '/') - p->library), p->library);
        args[n++] = p->rpath;
    }
    if (is_file(HB_OPENSSL_CRYPTO_LIBRARY)) {
        static char ssl_lib[] = HB_OPENSSL_CRYPTO_LIBRARY;
        args[n++] = ssl_lib;
    } else {
        args[n++] = lcrypto;
    }
    args[n++] = pthread;
    args[n++] = out;
    args[n++] = slot;
    args[n] = NULL;
    return src;
}

/* write_source: the embedded bench/isal_peer.c into a new file path. */
static int write_source(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        cli_error_path(path, errno);
        return CLI_EXIT_FAILURE;
    }
    const char *s = bench_isal_peer_source;
    size_t left = bench_isal_peer_source_size;
    while (left > 0) {
        ssize_t n = write(fd, s, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            unlink(path);
            cli_error_path(path, e);
            return CLI_EXIT_FAILURE;
        }
        s += n;
        left -= (size_t)n;
    }
    if (close(fd) != 0) {
        cli_error_path(path, errno);
        unlink(path);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

/* command_line: args with blanks between, for an error message. */
static const char *command_line(char *const *args, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; args[i] != NULL && used + 1 < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? " " : "", args[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/* compile_in: the source as isal_peer.c in the fresh directory dir (so
 * the compiler's messages name that file), compiled to dir/isal_peer,
 * renamed to p->binary when it worked; dir is emptied. */
static int compile_in(bench_peer *p, char **args, size_t src_slot, const char *dir)
{
    char src[BENCH_PATH_MAX], out[BENCH_PATH_MAX];
    if (too_long(snprintf(src, sizeof src, "%s/isal_peer.c", dir), sizeof src) ||
        too_long(snprintf(out, sizeof out, "%s/isal_peer", dir), sizeof out)) {
        cli_error_path(dir, ENAMETOOLONG);
        return CLI_EXIT_FAILURE;
    }
    int rc = write_source(src);
    if (rc != CLI_EXIT_OK)
        return rc;
    size_t last = src_slot;
    while (args[last + 1] != NULL)
        last++;
    args[src_slot] = src;
    args[last] = out;
    static bench_child c; /* large: kept off the stack */
    int ran = bench_child_run(args, 1, &c);
    int e = errno;
    unlink(src);
    if (ran == 0 && bench_child_ok(&c) && rename(out, p->binary) == 0)
        return CLI_EXIT_OK;
    e = ran == 0 && bench_child_ok(&c) ? errno : e;
    unlink(out);
    if (ran != 0 || bench_child_ok(&c)) {
        cli_error(BENCH_CMD ": building the isa-l_crypto peer into %s: %s", p->binary, strerror(e));
        return CLI_EXIT_FAILURE;
    }
    char how[96], cmd[2 * BENCH_PATH_MAX], first[2048];
    cli_error(BENCH_CMD ": compiling the isa-l_crypto peer (bench/isal_peer.c) against %s '%s' "
                        "failed (%s)\n  command: %s\n  the compiler's first lines:%s",
              p->origin, p->dir, bench_child_how(&c, how, sizeof how),
              command_line(args, cmd, sizeof cmd),
              c.out_len ? bench_first_lines(c.out, 15, first, sizeof first) : " (none)");
    return CLI_EXIT_FAILURE;
}

/* compile: in a directory of its own beside the build's name (stem), so
 * that runs at once never share files; the rename is atomic. */
static int compile(bench_peer *p, char **args, size_t src_slot, const char *stem)
{
    char dir[BENCH_PATH_MAX];
    if (too_long(snprintf(dir, sizeof dir, "%s.XXXXXX", stem), sizeof dir)) {
        cli_error_path(stem, ENAMETOOLONG);
        return CLI_EXIT_FAILURE;
    }
    if (mkdtemp(dir) == NULL) {
        cli_error_path(dir, errno);
        return CLI_EXIT_FAILURE;
    }
    int rc = compile_in(p, args, src_slot, dir);
    rmdir(dir);
    return rc;
}

int bench_peer_prepare(bench_peer *p, const char *dir, const char *origin)
{
    char *words[MAX_CC_WORDS], *args[MAX_ARGS], key[KEY_HEX], cache[BENCH_PATH_MAX],
        stem[BENCH_PATH_MAX];
    int nwords;
    memset(p, 0, sizeof *p);
    p->dir = dir;
    p->origin = origin;
    int rc = check_dir(p);
    if (rc == CLI_EXIT_OK)
        rc = find_compiler(p, words, &nwords);
    if (rc != CLI_EXIT_OK)
        return rc;
    size_t src_slot = compile_args(p, words, nwords, args);
    if ((rc = build_key(p, args, key)) != CLI_EXIT_OK || (rc = cache_dir(cache, sizeof cache)))
        return rc;
    if (too_long(snprintf(stem, sizeof stem, "%s/isal_peer-%s", cache, key), sizeof stem)) {
        cli_error_path(cache, ENAMETOOLONG);
        return CLI_EXIT_FAILURE;
    }
    snprintf(p->binary, sizeof p->binary, "%s", stem);
    p->on = 1;
    if (access(p->binary, X_OK) == 0 && is_file(p->binary)) {
        p->reused = 1;
        return CLI_EXIT_OK;
    }
    rc = compile(p, args, src_slot, stem);
    p->on = rc == CLI_EXIT_OK;
    return rc;
}
