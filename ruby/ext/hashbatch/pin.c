/*
 * pin.c - strings held still while the GVL is released.
 *
 * Owns: the lock count of strings being hashed.
 *  - A string being hashed without the GVL must not change: unless frozen
 *    it is locked with rb_str_locktmp, so a writer gets a RuntimeError
 *    ("can't modify string; temporarily locked"). rb_str_locktmp is not
 *    reentrant, so two threads hashing one string share one lock through a
 *    count (a table keyed by the string; a mutex guards it, as Ractors may
 *    hash at once); the last one out unlocks.
 *  - (That it must not move or die is its holder's business: a batch marks
 *    its strings with rb_gc_mark, which pins them, see engine.c.)
 * Must not: hash, or unlock a string it did not lock.
 */
#include "hb_ext.h"

#include <pthread.h>
#include <ruby/st.h>

static st_table *lock_counts;
static pthread_mutex_t lock_counts_mutex = PTHREAD_MUTEX_INITIALIZER;

/* lock_count_get / lock_count_put: the table, under its mutex. */
static st_data_t lock_count_get(VALUE s)
{
    st_data_t count = 0;
    pthread_mutex_lock(&lock_counts_mutex);
    st_lookup(lock_counts, (st_data_t)s, &count);
    pthread_mutex_unlock(&lock_counts_mutex);
    return count;
}

static void lock_count_put(VALUE s, st_data_t count)
{
    pthread_mutex_lock(&lock_counts_mutex);
    if (count == 0) {
        st_data_t key = (st_data_t)s;
        st_delete(lock_counts, &key, NULL);
    } else {
        st_insert(lock_counts, (st_data_t)s, count);
    }
    pthread_mutex_unlock(&lock_counts_mutex);
}

void hb_str_lock(VALUE s)
{
    if (OBJ_FROZEN(s))
        return;
    st_data_t count = lock_count_get(s);
    if (count == 0)
        rb_str_locktmp(s); /* raises if something else holds it locked */
    lock_count_put(s, count + 1);
}

/* hb_str_unlock_counted: uncounts s; unlocks at zero. Returns 0 if s was
 * not counted. */
static int hb_str_unlock_counted(VALUE s)
{
    st_data_t count = lock_count_get(s);
    if (count == 0)
        return 0;
    lock_count_put(s, count - 1);
    if (count == 1)
        rb_str_unlocktmp(s);
    return 1;
}

void hb_str_unlock(VALUE s)
{
    hb_str_unlock_counted(s);
}

void hb_ext_init_pins(void)
{
    lock_counts = st_init_numtable();
}
