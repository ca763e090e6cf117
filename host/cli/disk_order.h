/*
 * disk_order.h - where files lie on their disks, and what kind of disk
 * holds them: the order in which reading many files costs the fewest
 * seeks, for commands that read many files (dedup, sum).
 *
 * A file's place is the physical offset of its first extent (FIEMAP,
 * one extent asked for: one cheap ioctl per file); files without one
 * (inline data, delayed allocation, a file system without FIEMAP) are
 * placed by inode number, which on ext4 and XFS follows the inode
 * tables. A device is rotational when sysfs says so for its disk
 * (/sys/dev/block/MAJ:MIN/queue/rotational, a partition's read from its
 * disk, a device-mapper or md device also from what it sits on); an
 * unknown device (btrfs, overlay, NFS: anonymous device numbers) counts
 * as solid-state.
 *
 * Owns: FIEMAP calls, the device-kind look-ups (cached per device) and
 * the sort of placed files. Must not: read file contents, print, or know
 * the commands' data structures (callers hand it descriptors and keys).
 */
#ifndef HB_CLI_DISK_ORDER_H
#define HB_CLI_DISK_ORDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One file to be placed in read order. */
typedef struct {
    uint64_t dev;
    uint64_t pos;    /* physical byte offset of its first extent, when located */
    uint64_t ino;    /* the fallback order, and the tie-break */
    uint32_t slot;   /* the caller's index of this file */
    uint8_t located; /* 1: pos holds a physical offset */
} disk_key;

/* disk_is_rotational: 1 when the block device dev sits on a rotational
 * disk, 0 when it is solid-state or unknown. Thread-safe; the answer for
 * each device is looked up once per process. */
int disk_is_rotational(dev_t dev);

/* disk_first_extent: the physical byte offset of the first extent of the
 * open file fd in *pos. Returns 0; ENODATA when the file has no extent
 * with a known place (empty, a hole, inline data, not yet allocated);
 * else the ioctl's errno (EOPNOTSUPP or ENOTTY: the file system has no
 * FIEMAP). */
int disk_first_extent(int fd, uint64_t *pos);

/* disk_no_fiemap: does error e from disk_first_extent mean that the file
 * system has no FIEMAP at all (so asking again for its other files is
 * pointless)? */
int disk_no_fiemap(int e);

/* disk_order_sort: sorts keys[0..n) into read order: by device, then the
 * files without a place by inode number, then the located ones by
 * physical offset (inode number breaking ties). */
void disk_order_sort(disk_key *keys, size_t n);

#endif /* HB_CLI_DISK_ORDER_H */
