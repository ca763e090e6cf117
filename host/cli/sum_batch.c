/*
 * sum_batch.c - groups of files hashed with one hb_sha1_batch call, and
 * their output in argument order.
 *
 * Owns: the grouping policy (up to max_bytes of read data, max_files
 * files, and MAPPED_MAX files bigger than max_bytes, which file_load maps
 * rather than reads, so they cost address space, not memory; the engine
 * hashes such big files side by side in device lanes) and the order of
 * output: each group's lines and error messages come out in the order the
 * names were given. Must not: print a digest for a file whose read failed,
 * or hold more than one group plus one file in memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sum.h"

#define MAPPED_MAX 16 /* one group of device lanes */

int sum_batch_init(sum_batch *b, hb_engine *e, size_t max_bytes, size_t max_files)
{
    memset(b, 0, sizeof *b);
    b->engine = e;
    b->max_bytes = max_bytes;
    b->max_files = max_files ? max_files : 1;
    b->items = calloc(b->max_files, sizeof *b->items);
    b->msgs = calloc(b->max_files, sizeof *b->msgs);
    b->digests = calloc(b->max_files, sizeof *b->digests);
    if (b->items == NULL || b->msgs == NULL || b->digests == NULL) {
        sum_batch_free(b);
        return ENOMEM;
    }
    return 0;
}

/* release_items: frees the waiting files' bytes and empties the group. */
static void release_items(sum_batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        file_data_release(&b->items[i].data);
    b->count = 0;
    b->bytes = 0;
    b->mapped = 0;
}

/* hash_group: digests of the readable files, in b->digests in order.
 * Returns 0 or CLI_EXIT_FAILURE after reporting. */
static int hash_group(sum_batch *b, size_t *nmsgs)
{
    size_t n = 0;
    for (size_t i = 0; i < b->count; i++) {
        if (b->items[i].err != 0)
            continue;
        b->msgs[n].data = b->items[i].data.ptr;
        b->msgs[n].len = b->items[i].data.len;
        n++;
    }
    *nmsgs = n;
    if (n == 0)
        return 0;
    hb_status st = hb_sha1_batch(b->engine, b->msgs, n, b->digests);
    if (st == HB_OK)
        return 0;
    const char *detail = hb_engine_last_error(b->engine);
    cli_error("hashing failed: %s%s%s", hb_status_str(st), detail[0] ? ": " : "", detail);
    return CLI_EXIT_FAILURE;
}

/* print_group: one line per readable file, one error per other, in
 * order. */
static void print_group(sum_batch *b)
{
    size_t j = 0;
    for (size_t i = 0; i < b->count; i++) {
        const sum_item *it = &b->items[i];
        if (it->err != 0) {
            cli_error_path(it->name, it->err);
            b->unreadable = 1;
        } else {
            sum_format_line(stdout, (const uint8_t *)b->digests[j++], it->name);
        }
    }
}

int sum_batch_flush(sum_batch *b)
{
    size_t n;
    if (b->count == 0)
        return 0;
    int rc = hash_group(b, &n);
    if (rc == 0)
        print_group(b);
    release_items(b);
    return rc;
}

/* push: queues it (the group has room). */
static void push(sum_batch *b, const sum_item *it)
{
    b->items[b->count++] = *it;
    if (it->err == 0 && it->data.mapped)
        b->mapped++;
    else if (it->err == 0)
        b->bytes += it->data.len;
}

int sum_batch_add(sum_batch *b, const char *name)
{
    sum_item it = {name, {NULL, 0, 0}, 0};
    it.err = file_load(name, b->max_bytes, &it.data);
    int mapped = it.err == 0 && it.data.mapped;
    size_t len = it.err == 0 && !mapped ? it.data.len : 0;
    int rc = 0;

    if (b->count == b->max_files || len > b->max_bytes - b->bytes ||
        (mapped && b->mapped == MAPPED_MAX))
        rc = sum_batch_flush(b);
    if (rc != 0) {
        file_data_release(&it.data);
        return rc;
    }
    push(b, &it);
    return 0;
}

void sum_batch_free(sum_batch *b)
{
    if (b->items != NULL)
        release_items(b);
    free(b->items);
    free(b->msgs);
    free(b->digests);
    memset(b, 0, sizeof *b);
}
