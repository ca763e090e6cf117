/*
 * progress.c - the progress meter of long runs (see progress.h):
 * "\r<stage>: F/T files, B/T bytes, R/s, ETA m:ss" erased with "\r\033[K".
 *
 * Owns: the meter's state, its clock, its rate limit and its lock.
 * Must not: print anything but its own line on its own stream.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define REDRAW_NS 200000000LL /* 5 Hz */
#define FIRST_DRAW_NS 500000000LL

struct progress {
    FILE *f;
    pthread_mutex_t lock;
    const char *label;
    uint64_t files, bytes; /* done in this stage */
    uint64_t total_files, total_bytes;
    int64_t opened_ns, stage_ns, drawn_ns;
    int64_t first_draw_ns; /* no drawing before this much time */
    int shown;             /* the line is on the screen */
};

/* now_ns: the monotonic clock in nanoseconds. */
static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

progress *progress_open(FILE *f, int quiet)
{
    if (quiet || f == NULL || !isatty(fileno(f)))
        return NULL;
    progress *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->f = f;
    pthread_mutex_init(&p->lock, NULL);
    p->label = "scanning";
    p->opened_ns = p->stage_ns = now_ns();
    p->first_draw_ns = FIRST_DRAW_NS;
    /* Tests see the meter at once with HASHBATCH_PROGRESS_FIRST_MS=0. */
    const char *first = getenv("HASHBATCH_PROGRESS_FIRST_MS");
    if (first != NULL && first[0] >= '0' && first[0] <= '9')
        p->first_draw_ns = strtoll(first, NULL, 10) * 1000000LL;
    return p;
}

/* human: n bytes as "12.3 MiB" into buf. */
static void human(char *buf, size_t cap, double n)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    unsigned u = 0;
    while (n >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        n /= 1024.0;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", n, units[u]);
}

/* draw: writes the line (lock held). */
static void draw(progress *p, int64_t now)
{
    char done[32], total[48], rate[32], eta[48] = "";
    double secs = (double)(now - p->stage_ns) * 1e-9;
    double bps = secs > 0 ? (double)p->bytes / secs : 0;
    human(done, sizeof done, (double)p->bytes);
    human(rate, sizeof rate, bps);
    total[0] = '\0';
    if (p->total_bytes) {
        char t[32];
        human(t, sizeof t, (double)p->total_bytes);
        snprintf(total, sizeof total, " of %s", t);
        if (bps > 0 && p->total_bytes > p->bytes) {
            unsigned long left = (unsigned long)((double)(p->total_bytes - p->bytes) / bps);
            snprintf(eta, sizeof eta, ", ETA %lu:%02lu", left / 60, left % 60);
        }
    }
    fprintf(p->f, "\r%s: %llu", p->label, (unsigned long long)p->files);
    if (p->total_files)
        fprintf(p->f, "/%llu", (unsigned long long)p->total_files);
    fprintf(p->f, " files, %s%s, %s/s%s\033[K", done, total, rate, eta);
    fflush(p->f);
    p->shown = 1;
    p->drawn_ns = now;
}

void progress_stage(progress *p, const char *label, uint64_t total_files, uint64_t total_bytes)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->label = label;
    p->files = p->bytes = 0;
    p->total_files = total_files;
    p->total_bytes = total_bytes;
    p->stage_ns = now_ns();
    pthread_mutex_unlock(&p->lock);
}

void progress_add(progress *p, uint64_t files, uint64_t bytes)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->files += files;
    p->bytes += bytes;
    int64_t now = now_ns();
    if (now - p->opened_ns >= p->first_draw_ns && now - p->drawn_ns >= REDRAW_NS)
        draw(p, now);
    pthread_mutex_unlock(&p->lock);
}

/* erase: removes the line (lock held). */
static void erase(progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", p->f);
        fflush(p->f);
        p->shown = 0;
    }
}

void progress_clear(progress *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    erase(p); /* drawn again at the next redraw tick */
    pthread_mutex_unlock(&p->lock);
}

void progress_close(progress *p)
{
    if (p == NULL)
        return;
    erase(p);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
