/*
 * machine_key.h - the words that name this machine in the library's
 * caches: what a measurement kept between runs depends on.
 *
 * Owns: the key prefix "hashbatch V | host H | cpu MODEL | " (the
 * library's version, the host name, /proc/cpuinfo's model name, vendor,
 * family, model and stepping of the first CPU), with
 * control characters made spaces so it fits on one line of a file.
 * Must not: print or fail: a part it cannot read is left empty.
 */
#ifndef HB_MACHINE_KEY_H
#define HB_MACHINE_KEY_H

#include <stddef.h>

/* hb_machine_key: the prefix into out (always terminated); returns its
 * length. */
size_t hb_machine_key(char *out, size_t size);

/* hb_key_sanitize: control characters (tabs, newlines) in key become
 * spaces. */
void hb_key_sanitize(char *key);

#endif /* HB_MACHINE_KEY_H */
