/*
 * mb_rounds.h - SHA-1's 80 rounds over a vector of lanes, written once.
 *
 * Owns: the compression function of FIPS 180-4 (6.1.2) on vectors whose
 * element l is lane l's word, shared by every multi-buffer kernel. The
 * file that includes it defines the vector type and its operations:
 *   MB_VEC              the vector type (one uint32 per lane)
 *   MB_ADD(a, b)        lane-wise a + b (mod 2^32)
 *   MB_ADD_K(x, k)      x + the constant k in every lane
 *   MB_ROL(x, n)        lane-wise rotate left by n
 *   MB_XOR4(a, b, c, d) a ^ b ^ c ^ d (the message schedule)
 *   MB_CH(b, c, d)      (b & c) | (~b & d)          rounds 0-19
 *   MB_PARITY(b, c, d)  b ^ c ^ d                   rounds 20-39, 60-79
 *   MB_MAJ(b, c, d)     (b & c) | (b & d) | (c & d) rounds 40-59
 * and then calls MB_COMPRESS(s, w) (or MB_COMPRESS_THEN, to load the next
 * block during the last rounds): s[0..4] the state, w[0..15] the block's
 * words (big-endian already), w used as the schedule's window.
 * Must not: be included twice in one file, or load or store memory: the
 * including kernel does its own loads (they differ per instruction set).
 */
#ifndef HB_MB_ROUNDS_H
#define HB_MB_ROUNDS_H

#define MB_K0 0x5a827999u
#define MB_K1 0x6ed9eba1u
#define MB_K2 0x8f1bbcdcu
#define MB_K3 0xca62c1d6u

/* W[t + 16] into the slot of W[t], which round t has just used: the
 * schedule runs 16 rounds ahead of the rounds, as isa-l_crypto's does, so
 * no round waits for its word. */
#define MB_AHEAD(w, t)                                                                             \
    ((w)[(t)&15] = MB_ROL(MB_XOR4((w)[((t) + 13) & 15], (w)[((t) + 8) & 15],                     \
                                  (w)[((t) + 2) & 15], (w)[(t)&15]),                               \
                          1))

/* After round t: the schedule while words are still to come (t < 64);
 * from round 64 on, slot t & 15 is free, and the kernel's hook(t) may
 * fill it (with the next block's row t & 15: its loads then overlap the
 * last 16 rounds instead of stalling the next block's first). */
#define MB_AFTER(w, t, hook)                                                                       \
    do {                                                                                           \
        if ((t) < 64)                                                                              \
            MB_AHEAD(w, t);                                                                        \
        else                                                                                       \
            hook(t);                                                                               \
    } while (0)
#define MB_NO_HOOK(t) ((void)0)

/* One round: e += rol(a, 5) + f(b, c, d) + k + W[t]; b = rol(b, 30). The
 * caller renames the five words instead of moving them. */
#define MB_ROUND(a, b, c, d, e, f, k, w, t, hook)                                                  \
    do {                                                                                           \
        e = MB_ADD(e, MB_ADD_K((w)[(t)&15], k));                                                   \
        e = MB_ADD(e, f(b, c, d));                                                                 \
        e = MB_ADD(e, MB_ROL(a, 5));                                                               \
        b = MB_ROL(b, 30);                                                                         \
        MB_AFTER(w, t, hook);                                                                      \
    } while (0)

/* Five rounds from t: after them the words are back in their places. */
#define MB_ROUND5(f, k, w, t, hook)                                                                \
    do {                                                                                           \
        MB_ROUND(a, b, c, d, e, f, k, w, (t), hook);                                               \
        MB_ROUND(e, a, b, c, d, f, k, w, (t) + 1, hook);                                           \
        MB_ROUND(d, e, a, b, c, f, k, w, (t) + 2, hook);                                           \
        MB_ROUND(c, d, e, a, b, f, k, w, (t) + 3, hook);                                           \
        MB_ROUND(b, c, d, e, a, f, k, w, (t) + 4, hook);                                           \
    } while (0)

#define MB_ROUND20(f, k, w, t, hook)                                                               \
    do {                                                                                           \
        MB_ROUND5(f, k, w, (t), hook);                                                             \
        MB_ROUND5(f, k, w, (t) + 5, hook);                                                         \
        MB_ROUND5(f, k, w, (t) + 10, hook);                                                        \
        MB_ROUND5(f, k, w, (t) + 15, hook);                                                        \
    } while (0)

/* MB_COMPRESS_THEN: s = compress(s, w), lane by lane, w[0..15] the
 * block's words on entry (its schedule's window after); hook(t), for t
 * from 64 to 79, may then overwrite w[t & 15]. A macro so that it takes
 * the including file's target attributes and inlines. */
#define MB_COMPRESS_THEN(s, w, hook)                                                               \
    do {                                                                                           \
        MB_VEC a = (s)[0], b = (s)[1], c = (s)[2], d = (s)[3], e = (s)[4];                         \
        MB_ROUND20(MB_CH, MB_K0, w, 0, hook);                                                      \
        MB_ROUND20(MB_PARITY, MB_K1, w, 20, hook);                                                 \
        MB_ROUND20(MB_MAJ, MB_K2, w, 40, hook);                                                    \
        MB_ROUND20(MB_PARITY, MB_K3, w, 60, hook);                                                 \
        (s)[0] = MB_ADD((s)[0], a);                                                                \
        (s)[1] = MB_ADD((s)[1], b);                                                                \
        (s)[2] = MB_ADD((s)[2], c);                                                                \
        (s)[3] = MB_ADD((s)[3], d);                                                                \
        (s)[4] = MB_ADD((s)[4], e);                                                                \
    } while (0)

/* mb_compress: the same, nothing loaded during the last rounds. */
#define MB_COMPRESS(s, w) MB_COMPRESS_THEN(s, w, MB_NO_HOOK)

#endif /* HB_MB_ROUNDS_H */
