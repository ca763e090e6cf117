/*
 * test_beneath.c - hb_open_beneath and files jobs opened with
 * hb_submit_files_at (issue 27): a path resolved beneath a folder, no
 * symbolic link followed anywhere in it.
 *
 * Covers, for the kernel's openat2 and again for the fallback of one
 * component at a time (a child process whose seccomp filter refuses
 * openat2 with EPERM, as container runtimes' filters do; ENOSYS is the
 * same branch): a file, a folder and "a/./b" open; a symbolic link as
 * the last name, as a folder in the middle (to a folder inside and to one
 * outside) gives ELOOP; "..", "a/../../x" and an absolute path give EXDEV
 * beneath and work without it; O_PATH | O_NOFOLLOW opens a last-name
 * link itself; bad arguments. Then files jobs: hb_submit_files_at hashes
 * relative paths beneath a folder (digests against OpenSSL), refuses
 * the same links and escapes per file (HB_ERR_IO with ELOOP or EXDEV)
 * while the other files hash, reads descriptor inputs as before, and
 * refuses a negative folder descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

/* The tree every test works in: root/a/b/f ("beneath"), root/a/in ->
 * b (a link to a folder inside), root/a/out -> outside (a folder beside
 * root), root/a/lf -> b/f (a link to a file), outside/secret. */
static char top[64], root_path[96];
static int root_fd = -1;

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

static void make_tree(void)
{
    char p[256];
    snprintf(top, sizeof top, "/tmp/hb-beneath-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(top));
    snprintf(root_path, sizeof root_path, "%s/root", top);
    snprintf(p, sizeof p, "%s/root/a/b", top);
    ck_assert_int_eq(mkdir(root_path, 0755), 0);
    snprintf(p, sizeof p, "%s/root/a", top);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/root/a/b", top);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/root/a/b/f", top);
    put(p, "beneath\n");
    snprintf(p, sizeof p, "%s/outside", top);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/outside/secret", top);
    put(p, "secret\n");
    snprintf(p, sizeof p, "%s/root/a/in", top);
    ck_assert_int_eq(symlink("b", p), 0);
    snprintf(p, sizeof p, "%s/root/a/out", top);
    ck_assert_int_eq(symlink("../../outside", p), 0);
    snprintf(p, sizeof p, "%s/root/a/lf", top);
    ck_assert_int_eq(symlink("b/f", p), 0);
    root_fd = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(root_fd, 0);
}

static void remove_tree(void)
{
    char cmd[128];
    if (root_fd >= 0)
        close(root_fd);
    root_fd = -1;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    ck_assert_int_eq(system(cmd), 0);
}

/* Checks of every_rule, which also runs in a child process where a
 * failed ck_assert could not reach the runner: each failure is printed
 * and counted, and the count is asserted by the caller. */
static int rule_failures;
static int without_openat2; /* the fallback: ".." refused beneath even inside */

#define EXPECT(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "line %d: ", __LINE__);                                            \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            rule_failures++;                                                                   \
        }                                                                                      \
    } while (0)

/* expect_errno: hb_open_beneath of path gives errno want (0: it opens). */
static void expect_errno(const char *path, int flags, unsigned resolve, int want)
{
    errno = 0;
    int fd = hb_open_beneath(root_fd, path, flags, resolve);
    int got = fd < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    EXPECT(got == want, "%s (resolve %u): %s, expected %s", path ? path : "NULL", resolve,
           strerror(got), strerror(want));
}

/* expect_text: what path beneath the root holds (opened beneath). */
static void expect_text(const char *path, const char *want)
{
    char buf[64] = {0};
    int fd = hb_open_beneath(root_fd, path, O_RDONLY, HB_RESOLVE_BENEATH);
    EXPECT(fd >= 0, "%s: %s", path, strerror(errno));
    if (fd < 0)
        return;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    EXPECT(got == (ssize_t)strlen(want) && strcmp(buf, want) == 0, "%s: read %zd bytes", path,
           got);
    EXPECT((fcntl(fd, F_GETFD) & FD_CLOEXEC) == FD_CLOEXEC, "%s: no close-on-exec", path);
    close(fd);
}

/* every_rule: the resolution's rules, one by one; returns the failures. */
static int every_rule(void)
{
    const unsigned B = HB_RESOLVE_BENEATH;
    rule_failures = 0;
    expect_text("a/b/f", "beneath\n");
    expect_text("a/./b/f", "beneath\n");
    if (without_openat2) /* it could not tell a ".." inside from one a rename moved out */
        expect_errno("a/b/../b/f", O_RDONLY, B, EXDEV);
    else
        expect_text("a/b/../b/f", "beneath\n"); /* ".." that stays inside */
    expect_errno("a/b", O_PATH | O_DIRECTORY, B, 0);
    expect_errno("a/b/", O_PATH | O_DIRECTORY, B, 0);
    /* links: the last name, a folder to inside, a folder to outside */
    expect_errno("a/lf", O_RDONLY, B, ELOOP);
    expect_errno("a/lf", O_RDONLY, 0, ELOOP);
    expect_errno("a/in/f", O_RDONLY, B, ELOOP);
    expect_errno("a/out/secret", O_RDONLY, B, ELOOP);
    expect_errno("a/out/secret", O_RDONLY, 0, ELOOP);
    expect_errno("a/in", O_PATH | O_DIRECTORY, B, ELOOP);
    /* O_PATH | O_NOFOLLOW: the link itself */
    int fd = hb_open_beneath(root_fd, "a/lf", O_PATH | O_NOFOLLOW, B);
    struct stat st;
    EXPECT(fd >= 0 && fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 && S_ISLNK(st.st_mode),
           "a/lf with O_PATH | O_NOFOLLOW is not the link itself");
    if (fd >= 0)
        close(fd);
    /* leaving the folder */
    expect_errno("..", O_PATH | O_DIRECTORY, B, EXDEV);
    expect_errno("a/../../outside/secret", O_RDONLY, B, EXDEV);
    expect_errno("a/../../outside/secret", O_RDONLY, 0, 0);
    char abs[160];
    snprintf(abs, sizeof abs, "%s/outside/secret", top);
    expect_errno(abs, O_RDONLY, B, EXDEV);
    expect_errno(abs, O_RDONLY, 0, 0);
    /* the rest */
    expect_errno("a/missing", O_RDONLY, B, ENOENT);
    expect_errno("a/b/f/x", O_RDONLY, B, ENOTDIR);
    expect_errno("", O_RDONLY, B, ENOENT);
    expect_errno(NULL, O_RDONLY, B, EINVAL);
    expect_errno("a/b/f", O_RDONLY, 2u, EINVAL);
    return rule_failures;
}

START_TEST(rules_with_openat2)
{
    make_tree();
    int failures = every_rule();
    remove_tree();
    ck_assert_int_eq(failures, 0);
}
END_TEST

/* refuse_openat2: a seccomp filter on this process that fails openat2
 * with EPERM and allows everything else. 0, or -1 when it could not be
 * installed. */
static int refuse_openat2(void)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof code / sizeof code[0]), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0 ? 0 : -1;
}

START_TEST(rules_without_openat2)
{
#if !defined(__x86_64__)
    ck_abort_msg("the seccomp filter of this test is written for x86-64");
#endif
    make_tree();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (refuse_openat2() != 0)
            _exit(3);
        errno = 0;
        long r = syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0);
        if (r >= 0 || errno != EPERM)
            _exit(4); /* the filter does not bite: the fallback would not run */
        without_openat2 = 1;
        _exit(every_rule() == 0 ? 0 : 5);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    remove_tree();
    ck_assert_msg(WIFEXITED(status), "the child died of signal %d", WTERMSIG(status));
    ck_assert_msg(WEXITSTATUS(status) != 3, "the seccomp filter could not be installed");
    ck_assert_msg(WEXITSTATUS(status) != 4, "openat2 was not refused by the filter");
    ck_assert_msg(WEXITSTATUS(status) == 0, "a rule failed without openat2 (status %d; "
                  "stderr says which)", WEXITSTATUS(status));
}
END_TEST

START_TEST(files_job_beneath)
{
    make_tree();
    hb_engine *e = tu_open(HB_BACKEND_CPU);
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    ck_assert_int_eq(write(pipefd[1], "piped", 5), 5);
    close(pipefd[1]);
    hb_file_input in[] = {{"a/b/f", -1},         {"a/./b/f", -1}, {"a/lf", -1},
                          {"a/in/f", -1},        {"a/out/secret", -1},
                          {"../outside/secret", -1}, {"a/missing", -1}, {NULL, pipefd[0]},
                          {"a/b", -1}};
    const size_t n = sizeof in / sizeof in[0];
    hb_file_result out[sizeof in / sizeof in[0]];
    hb_files_job *j = NULL;
    ck_assert_int_eq(hb_submit_files_at(e, root_fd, in, n, out, NULL, &j), HB_OK);
    ck_assert_int_eq(hb_files_job_wait(j, -1), HB_OK);
    hb_files_job_free(j);
    close(pipefd[0]);
    uint8_t want[20];
    tu_sha1("beneath\n", 8, want);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(out[i].status, HB_OK);
        ck_assert_mem_eq(out[i].digest, want, 20);
    }
    const int errs[] = {ELOOP, ELOOP, ELOOP, EXDEV, ENOENT};
    for (size_t i = 2; i < 7; i++) {
        ck_assert_msg(out[i].status == HB_ERR_IO && out[i].err == errs[i - 2],
                      "%s: status %d err %d", in[i].path, out[i].status, out[i].err);
    }
    tu_sha1("piped", 5, want);
    ck_assert_int_eq(out[7].status, HB_OK);
    ck_assert_mem_eq(out[7].digest, want, 20);
    ck_assert_int_eq(out[8].status, HB_ERR_IO);
    ck_assert_int_eq(out[8].err, EISDIR);
    /* the same names as given, not beneath: links followed as open(2) */
    char cwd[512];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(root_path), 0);
    ck_assert_int_eq(hb_submit_files(e, in + 2, 1, out, NULL, &j), HB_OK);
    ck_assert_int_eq(hb_files_job_wait(j, -1), HB_OK);
    hb_files_job_free(j);
    ck_assert_int_eq(chdir(cwd), 0);
    tu_sha1("beneath\n", 8, want);
    ck_assert_int_eq(out[0].status, HB_OK);
    ck_assert_mem_eq(out[0].digest, want, 20);
    /* arguments */
    ck_assert_int_eq(hb_submit_files_at(e, -1, in, 1, out, NULL, &j), HB_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(hb_submit_files_at(NULL, root_fd, in, 1, out, NULL, &j),
                     HB_ERR_NULL_ARGUMENT);
    hb_engine_close(e);
    remove_tree();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("beneath");
    TCase *tc = tcase_create("beneath");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, rules_with_openat2);
    tcase_add_test(tc, rules_without_openat2);
    tcase_add_test(tc, files_job_beneath);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
