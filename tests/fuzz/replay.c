/*
 * replay.c - main() for a fuzz target outside libFuzzer: feeds it files.
 *
 * Owns: running a target's LLVMFuzzerTestOneInput on every file of the
 * folders (or files) named on the command line, in name order, each in a
 * buffer of exactly its size, so a normal build replays the committed
 * corpus and every crash once found (tests/fuzz/crashes/<target>/) as a
 * ctest test. A target that finds a bug aborts; so does this program.
 * Usage: fuzz_X CORPUS_DIR_OR_FILE... [--optional DIR...]
 *   Before --optional every path must exist, and a folder must hold at
 *   least one file (a replay of nothing would pass silently); after it a
 *   folder may be absent or empty.
 * Must not: judge an input: the target's own checks do.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* read_all: the file's bytes in a malloc'd buffer of exactly its size
 * (one byte for an empty file, never read). NULL on error. */
static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fileno(f), &st) == 0 && st.st_size >= 0) {
        *size = (size_t)st.st_size;
        buf = malloc(*size ? *size : 1);
        if (buf != NULL && fread(buf, 1, *size, f) != *size) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

/* run_file: one input; returns 0, or -1 if it cannot be read. */
static int run_file(const char *path)
{
    size_t size = 0;
    uint8_t *buf = read_all(path, &size);
    if (buf == NULL) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    printf("replay: %s (%zu bytes)\n", path, size);
    fflush(stdout); /* the last name printed is the input that crashed */
    LLVMFuzzerTestOneInput(buf, size);
    free(buf);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* run_dir: every regular file of dir, in name order; returns how many, or
 * -1 on an error. */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    long rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **more = realloc(names, cap * sizeof *names);
            if (more == NULL) {
                rc = -1;
                break;
            }
            names = more;
        }
        if ((names[n] = strdup(path)) == NULL)
            rc = -1;
        else
            n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && run_file(names[i]) != 0)
            rc = -1;
        free(names[i]);
    }
    free(names);
    return rc == 0 ? (long)n : -1;
}

/* run_path: a folder or a file; returns the inputs run, or -1. */
static long run_path(const char *path, int optional)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (optional && errno == ENOENT)
            return 0;
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path) == 0 ? 1 : -1;
    long n = run_dir(path);
    if (n < 0)
        fprintf(stderr, "replay: cannot read the folder %s\n", path);
    else if (n == 0 && !optional)
        fprintf(stderr, "replay: %s holds no inputs\n", path);
    return n == 0 && !optional ? -1 : n;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize != NULL)
        LLVMFuzzerInitialize(&argc, &argv);
    int optional = 0, paths = 0;
    long total = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--optional") == 0) {
            optional = 1;
            continue;
        }
        long n = run_path(argv[i], optional);
        if (n < 0)
            return 1;
        total += n;
        paths += !optional;
    }
    if (paths == 0) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE... [--optional DIR...]\n", argv[0]);
        return 2;
    }
    printf("replay: %ld inputs, no failure\n", total);
    return 0;
}
