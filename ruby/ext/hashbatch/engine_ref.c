/*
 * engine_ref.c - an open hb_engine shared by its users.
 *
 * Owns: opening an engine without the GVL (a kernel build takes seconds),
 * and the engine_ref around it: counted references (the Engine object or
 * the default engine, and every batch submitted to it), the read-write
 * lock that keeps hb_engine_close from overlapping a cancel or free of its
 * jobs, and fork: engines remember the pid that opened them, a forked
 * child refuses a parent's engine (its threads did not survive the fork),
 * and nothing of the parent's is closed or freed in the child.
 * Must not: submit, wait for or cancel jobs (batch.c and its callers do).
 */
#include "engine_parts.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* pool_takes_jobs: whether an engine opened with cfg has its CPU pool
 * take jobs (backend cpu, or auto with device "all", as hashbatch.h says),
 * unless the environment may have changed that. */
static int pool_takes_jobs(const hb_config *cfg, hb_engine *e)
{
    if (hb_engine_backend(e) == HB_BACKEND_CPU)
        return 1;
    if (cfg->use_environment && (getenv("HASHBATCH_BACKEND") || getenv("HASHBATCH_DEVICE")))
        return 0;
    return cfg->backend == HB_BACKEND_AUTO && cfg->device != NULL &&
           strcmp(cfg->device, "all") == 0;
}

engine_ref *hb_ext_engine_ref_new(hb_engine *e, const hb_config *cfg)
{
    engine_ref *r = ruby_xcalloc(1, sizeof(*r));
    r->e = e;
    r->pool_takes_jobs = pool_takes_jobs(cfg, e);
    r->pid = getpid();
    r->refs = 1;
    pthread_rwlock_init(&r->lock, NULL);
    return r;
}

void hb_ext_engine_ref_take(engine_ref *r)
{
    atomic_fetch_add(&r->refs, 1);
}

void *hb_ext_engine_ref_close(void *p)
{
    engine_ref *r = p;
    if (r->pid != getpid()) {
        r->e = NULL; /* a parent's: its threads and lock holders are gone */
        return NULL;
    }
    pthread_rwlock_wrlock(&r->lock);
    hb_engine *e = r->e;
    r->e = NULL;
    hb_engine_close(e);
    pthread_rwlock_unlock(&r->lock);
    return NULL;
}

void hb_ext_engine_ref_unref(engine_ref *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    hb_ext_engine_ref_close(r);
    if (r->pid == getpid())
        pthread_rwlock_destroy(&r->lock);
    ruby_xfree(r);
}

void hb_ext_engine_ref_check(const engine_ref *r)
{
    if (r->pid != getpid())
        rb_raise(hb_ext_error_class(HB_ERR_CLOSED),
                 "Hashbatch::Engine opened in process %ld cannot be used in process %ld "
                 "(after fork, open a new Engine)",
                 (long)r->pid, (long)getpid());
    if (r->e == NULL)
        rb_raise(hb_ext_error_class(HB_ERR_CLOSED), "Hashbatch::Engine is closed");
}

typedef struct {
    hb_config cfg;
    hb_engine *e;
    hb_status st;
    int ran;
    char error[1024];
} open_arg;

static void *open_nogvl(void *p)
{
    open_arg *a = p;
    a->ran = 1;
    a->st = hb_engine_open(&a->e, &a->cfg);
    if (a->st != HB_OK)
        snprintf(a->error, sizeof a->error, "%s", hb_engine_last_error(NULL));
    return NULL;
}

hb_engine *hb_ext_open_engine(hb_config *cfg)
{
    hb_ext_fork_safe_config(cfg);
    open_arg a;
    memset(&a, 0, sizeof a);
    a.cfg = *cfg;
    hb_nogvl(HB_NOGVL_OTHER, open_nogvl, &a, NULL, NULL, RB_NOGVL_INTR_FAIL);
    if (!a.ran)
        open_nogvl(&a);
    if (a.st == HB_ERR_INVALID_ARGUMENT) /* a bad value in cfg or the environment */
        rb_raise(rb_eArgError, "Hashbatch: opening an engine: %s", a.error);
    if (a.st != HB_OK)
        hb_ext_raise_text(a.st, a.error, "Hashbatch: opening an engine");
    return a.e;
}
