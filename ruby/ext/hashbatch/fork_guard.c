/*
 * fork_guard.c - which process may still call OpenCL.
 *
 * Owns: the pid of the process that first touched OpenCL (an engine that
 * may use a device, or the device list). OpenCL runtimes such as pocl keep
 * threads that a fork does not copy, so a forked child must not call
 * OpenCL again: there auto means the OpenSSL pool, and opencl is refused
 * with a clear error.
 * Must not: open engines or call OpenCL itself.
 */
#include "engine_parts.h"

#include <stdlib.h>
#include <unistd.h>

static pid_t opencl_pid;
static pthread_mutex_t opencl_pid_mutex = PTHREAD_MUTEX_INITIALIZER;

int hb_ext_opencl_forked(void)
{
    pthread_mutex_lock(&opencl_pid_mutex);
    pid_t p = opencl_pid;
    pthread_mutex_unlock(&opencl_pid_mutex);
    return p != 0 && p != getpid();
}

void hb_ext_opencl_touch(void)
{
    pthread_mutex_lock(&opencl_pid_mutex);
    if (opencl_pid == 0)
        opencl_pid = getpid();
    pthread_mutex_unlock(&opencl_pid_mutex);
}

void hb_ext_fork_safe_config(hb_config *cfg)
{
    const char *env = cfg->use_environment ? getenv("HASHBATCH_BACKEND") : NULL;
    hb_backend_kind kind = cfg->backend;
    if (env != NULL)
        hb_backend_parse(env, &kind);
    if (kind == HB_BACKEND_CPU)
        return;
    if (!hb_ext_opencl_forked()) {
        hb_ext_opencl_touch();
        return;
    }
    if (kind == HB_BACKEND_OPENCL)
        rb_raise(hb_ext_error_class(HB_ERR_NO_OPENCL),
                 "Hashbatch: OpenCL cannot be used in process %ld: it was forked from process %ld, "
                 "which had started OpenCL (its runtime threads do not survive a fork); use "
                 "backend: \"cpu\"",
                 (long)getpid(), (long)opencl_pid);
    cfg->backend = HB_BACKEND_CPU;
    cfg->use_environment = 0;
}
