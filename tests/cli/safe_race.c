/* safe_race.c - the hostile side of the tests/cli/test_safe_*.py races
 * (issue 27), compiled by those tests with `cc` into a temporary folder.
 *
 *   safe_race flip A B COUNTER STOP SECONDS [PAUSE [CONTROL WATCHDIR]]
 *       Exchanges the names A and B (relative to the working directory)
 *       with renameat2(RENAME_EXCHANGE), counting the exchanges, until the
 *       file STOP exists or SECONDS have passed. It writes the count and
 *       its state into COUNTER ("N R\n" running, "N P\n" paused, "N E\n"
 *       ended). While the file PAUSE exists it rests with an even count
 *       (A is the original A). The file CONTROL, read at the start and
 *       after each pause, says how to exchange:
 *         loop     (also without CONTROL) as fast as it can, 256 at a time;
 *         aim US   aimed: it watches WATCHDIR (a directory below A,
 *                  resolved once at the start) with inotify and, after
 *                  each burst of events there (a file opened, read,
 *                  created, renamed or deleted), sleeps a random 0 to US
 *                  microseconds, exchanges, sleeps again as long at most
 *                  and exchanges back. Run it on the CPU of the process
 *                  it races, with a better priority, so that its
 *                  exchanges fall between that process's system calls.
 *       It always ends with an even count; it prints "exchanges N" on
 *       stdout. Exit 0, or 2 with a message when an exchange fails.
 *
 *   safe_race save DIR STOP SECONDS MAX_US NAME...
 *       An editor saving files while something else works on them: it
 *       watches DIR with inotify and gives each NAME a trigger drawn at
 *       random: read (IN_ACCESS, a read that returned bytes; half of the
 *       names), opened (IN_OPEN) or renamed away (IN_MOVED_FROM). When
 *       NAME's trigger happens it sleeps a random time of 0 to MAX_US
 *       microseconds (timer slack 1 ns) and renames DIR/NAME.new (written
 *       beforehand with the bytes "NEW version of NAME\n") onto DIR/NAME.
 *       Each NAME is saved once. Run it on the CPU of the process it races,
 *       with a better priority, so that it interrupts that process when it
 *       wakes. Ends when STOP exists or SECONDS have passed; prints
 *       "ready" when watching, one line "saved NAME on TRIGGER" per save,
 *       then "saves N".
 *
 * Linux only; no library beyond libc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int exchange(const char *a, const char *b)
{
    return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

static void put_count(int fd, long n, char state)
{
    char buf[40];
    int len = snprintf(buf, sizeof buf, "%020ld %c\n", n, state);
    if (pwrite(fd, buf, (size_t)len, 0) != len) {
        /* the count is advisory while running; the final line is what counts */
    }
}

/* read_control: 0 loop, else the aimed mode's bound in microseconds. */
static double read_control(const char *control)
{
    char buf[64] = "";
    if (control == NULL)
        return 0;
    FILE *f = fopen(control, "r");
    if (f == NULL)
        return 0;
    if (fgets(buf, sizeof buf, f) == NULL)
        buf[0] = 0;
    fclose(f);
    return strncmp(buf, "aim ", 4) == 0 ? atof(buf + 4) : 0;
}

static void nap(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    if (ts.tv_sec > 0 || ts.tv_nsec > 0)
        nanosleep(&ts, NULL);
}

static int flip(int argc, char **argv)
{
    if (argc != 7 && argc != 8 && argc != 10) {
        fprintf(stderr, "usage: safe_race flip A B COUNTER STOP SECONDS [PAUSE [CONTROL WATCHDIR]]\n");
        return 64;
    }
    const char *a = argv[2], *b = argv[3], *stop = argv[5];
    const char *pause = argc >= 8 ? argv[7] : NULL;
    const char *control = argc == 10 ? argv[8] : NULL;
    int cfd = open(argv[4], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (cfd < 0) {
        perror(argv[4]);
        return 2;
    }
    int in = -1;
    if (argc == 10) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (in < 0 || inotify_add_watch(in, argv[9], IN_OPEN | IN_ACCESS | IN_CREATE |
                                                         IN_MOVED_FROM | IN_MOVED_TO |
                                                         IN_DELETE) < 0) {
            perror(argv[9]);
            return 2;
        }
    }
    srand((unsigned)getpid());
    double end = now_s() + atof(argv[6]);
    double aim = read_control(control) / 1e6;
    long n = 0;
    int rc = 0;
    char buf[65536] __attribute__((aligned(8)));
    put_count(cfd, n, 'R');
    for (;;) {
        if (aim > 0 && in >= 0) {
            struct pollfd p = {in, POLLIN, 0};
            if (poll(&p, 1, 5) > 0 && read(in, buf, sizeof buf) > 0) {
                while (read(in, buf, sizeof buf) > 0) {
                } /* the whole burst */
                for (int k = 0; k < 2; k++) {
                    nap(aim * (double)rand() / RAND_MAX);
                    if (exchange(a, b) != 0) {
                        fprintf(stderr, "safe_race flip: renameat2(%s, %s): %s\n", a, b,
                                strerror(errno));
                        rc = 2;
                        goto out;
                    }
                    n++;
                }
                put_count(cfd, n, 'R');
            }
        } else {
            for (int i = 0; i < 256; i++) {
                if (exchange(a, b) != 0) {
                    fprintf(stderr, "safe_race flip: renameat2(%s, %s): %s\n", a, b,
                            strerror(errno));
                    rc = 2;
                    goto out;
                }
                n++;
            }
            put_count(cfd, n, 'R');
        }
        if (access(stop, F_OK) == 0 || now_s() >= end)
            break;
        if (pause != NULL && access(pause, F_OK) == 0) {
            /* n is even here */
            put_count(cfd, n, 'P');
            while (access(pause, F_OK) == 0 && access(stop, F_OK) != 0 && now_s() < end)
                usleep(500);
            aim = read_control(control) / 1e6;
            if (in >= 0)
                while (read(in, buf, sizeof buf) > 0) {
                } /* what happened during the pause */
            put_count(cfd, n, 'R');
        }
    }
out:
    if (n % 2 != 0) {
        if (exchange(a, b) == 0)
            n++;
        else {
            fprintf(stderr, "safe_race flip: cannot restore %s: %s\n", a, strerror(errno));
            rc = 2;
        }
    }
    put_count(cfd, n, 'E');
    close(cfd);
    printf("exchanges %ld\n", n);
    return rc;
}

static int write_new(const char *dir, const char *name)
{
    char path[4096], data[512];
    snprintf(path, sizeof path, "%s/%s.new", dir, name);
    int len = snprintf(data, sizeof data, "NEW version of %s\n", name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, data, (size_t)len) != len || close(fd) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

static int save(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: safe_race save DIR STOP SECONDS MAX_US NAME...\n");
        return 64;
    }
    const char *dir = argv[2], *stop = argv[3];
    double end = now_s() + atof(argv[4]);
    double max_delay = atof(argv[5]) / 1e6;
    int names = argc - 6;
    char **name = argv + 6;
    char *saved = calloc((size_t)names + 1, 1);
    uint32_t *trigger = calloc((size_t)names + 1, sizeof *trigger);
    if (saved == NULL || trigger == NULL)
        return 2;
    srand((unsigned)getpid());
    for (int i = 0; i < names; i++) {
        int r = rand() % 4;
        trigger[i] = r < 2 ? IN_ACCESS : r == 2 ? IN_OPEN : IN_MOVED_FROM;
    }
    for (int i = 0; i < names; i++)
        if (write_new(dir, name[i]) != 0)
            return 2;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (in < 0 || inotify_add_watch(in, dir, IN_ACCESS | IN_OPEN | IN_MOVED_FROM) < 0) {
        perror("inotify");
        return 2;
    }
    printf("ready\n");
    long saves = 0;
    char buf[65536] __attribute__((aligned(8)));
    while (now_s() < end && access(stop, F_OK) != 0) {
        struct pollfd p = {in, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            continue;
        ssize_t got = read(in, buf, sizeof buf);
        if (got <= 0)
            continue;
        for (char *q = buf; q < buf + got;) {
            struct inotify_event *ev = (struct inotify_event *)q;
            q += sizeof *ev + ev->len;
            if (ev->len == 0)
                continue;
            for (int i = 0; i < names; i++) {
                if (saved[i] || strcmp(ev->name, name[i]) != 0)
                    continue;
                if (!(ev->mask & trigger[i]))
                    break;
                nap(max_delay * (double)rand() / RAND_MAX);
                char from[4096], to[4096];
                snprintf(from, sizeof from, "%s/%s.new", dir, name[i]);
                snprintf(to, sizeof to, "%s/%s", dir, name[i]);
                if (rename(from, to) == 0) {
                    saved[i] = 1;
                    saves++;
                    printf("saved %s on %s\n", name[i],
                           trigger[i] == IN_ACCESS ? "read" :
                           trigger[i] == IN_OPEN ? "open" : "rename");
                } else
                    fprintf(stderr, "safe_race save: rename %s: %s\n", from, strerror(errno));
                break;
            }
        }
    }
    printf("saves %ld\n", saves);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "flip") == 0)
        return flip(argc, argv);
    if (argc > 1 && strcmp(argv[1], "save") == 0)
        return save(argc, argv);
    fprintf(stderr, "usage: safe_race flip|save ...\n");
    return 64;
}
