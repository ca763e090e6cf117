/*
 * hex.c - digests as lowercase hexadecimal text.
 *
 * Owns: hb_hex40. Must not: allocate.
 */
#include "hb_ext.h"

void hb_hex40(const uint8_t d[20], char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 20; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
}
