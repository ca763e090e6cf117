/*
 * fs_id.h - which filesystem a file is on, beyond st_dev.
 *
 * st_dev names a mount's device for as long as it is mounted; the same
 * number is given to the next filesystem mounted there (a loop device
 * reused, a USB disk swapped), and overlayfs shows a lower layer's file
 * under its own st_dev with the lower inode's number. A file's identity
 * is therefore (filesystem, device, inode): the filesystem named by
 * statfs's f_fsid and, where the kernel tells it, its UUID
 * (FS_IOC_GETFSUUID); and a stacked filesystem (overlayfs, its statfs
 * magic says so) is known as such, so that two names whose inode numbers
 * match across devices, one of them stacked, are taken for one file.
 *
 * Owns: those queries, remembered per st_dev for the life of the
 * process (a scan asks the kernel once per device, not once per file).
 * Must not: print, or exit.
 */
#ifndef HB_CLI_FS_ID_H
#define HB_CLI_FS_ID_H

#include <stdint.h>
#include <sys/types.h>

/* What is known of the filesystem behind one st_dev. */
typedef struct {
    uint64_t fs; /* f_fsid and UUID folded into one nonzero number; 0: unknown */
    int stacked; /* overlayfs (or another filesystem that shows other
                    filesystems' inodes under its own device) */
} fs_id;

/* fs_id_of_fd: the filesystem of the open file fd (whose st_dev is dev;
 * any descriptor, O_PATH included). Looked up once per dev and
 * remembered; thread-safe. Returns 0, or -1 with errno (then *out is
 * zeroed; EXDEV: fd is not on dev). */
int fs_id_of_fd(int fd, dev_t dev, fs_id *out);

/* fs_id_at: the same for the name at dirfd/name, for callers that hold
 * no descriptor of the file itself. The name is opened (O_PATH, and only
 * when dev is not yet known) without following a final symbolic link
 * unless it is one (a caller that followed it saw its target's device);
 * the answer is for dev only: a name now on another device gives -1 with
 * EXDEV. */
int fs_id_at(int dirfd, const char *name, dev_t dev, fs_id *out);

/* fs_id_stacked: is dev a stacked filesystem's? Known from an earlier
 * fs_id_of_fd/fs_id_at, else from /proc/self/mountinfo (read once per
 * device; unreadable: taken as not stacked). Thread-safe. 1 or 0. */
int fs_id_stacked(dev_t dev);

/* fs_id_one_file: may two names with these devices and inodes be one
 * file? Same device and inode; or the same inode number on different
 * devices where either device is stacked. Thread-safe. */
int fs_id_one_file(dev_t dev_a, ino_t ino_a, dev_t dev_b, ino_t ino_b);

#endif /* HB_CLI_FS_ID_H */
