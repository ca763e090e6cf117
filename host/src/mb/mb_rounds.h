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
 * and then calls mb_compress(s, w): s[0..4] the state, w[0..15] the
 * block's words (big-endian already), w used as the schedule's window.
 * Must not: be included twice in one file, or load or store memory: the
 * including kernel does its own loads (they differ per instruction set).
 */
#ifndef HB_MB_ROUNDS_H
#define HB_MB_ROUNDS_H

#define MB_K0 0x5a827999u
#define MB_K1 0x6ed9eba1u
#define MB_K2 0x8f1bbcdcu
#define MB_K3 0xca62c1d6u

/* W[t] for t >= 16, in place of W[t - 16] in the 16-word window. */
#define MB_SCHEDULE(w, t)                                                                          \
    ((t) < 16 ? (w)[(t)&15]                                                                        \
              : ((w)[(t)&15] = MB_ROL(MB_XOR4((w)[((t)-3) & 15], (w)[((t)-8) & 15],                \
                                              (w)[((t)-14) & 15], (w)[(t)&15]),                    \
                                      1)))

/* One round: e += rol(a, 5) + f(b, c, d) + k + W[t]; b = rol(b, 30). The
 * caller renames the five words instead of moving them. */
#define MB_ROUND(a, b, c, d, e, f, k, w, t)                                                        \
    do {                                                                                           \
        e = MB_ADD(e, MB_ADD_K(MB_SCHEDULE(w, t), k));                                             \
        e = MB_ADD(e, f(b, c, d));                                                                 \
        e = MB_ADD(e, MB_ROL(a, 5));                                                               \
        b = MB_ROL(b, 30);                                                                         \
    } while (0)

/* Five rounds from t: after them the words are back in their places. */
#define MB_ROUND5(f, k, w, t)                                                                      \
    do {                                                                                           \
        MB_ROUND(a, b, c, d, e, f, k, w, (t));                                                     \
        MB_ROUND(e, a, b, c, d, f, k, w, (t) + 1);                                                 \
        MB_ROUND(d, e, a, b, c, f, k, w, (t) + 2);                                                 \
        MB_ROUND(c, d, e, a, b, f, k, w, (t) + 3);                                                 \
        MB_ROUND(b, c, d, e, a, f, k, w, (t) + 4);                                                 \
    } while (0)

#define MB_ROUND20(f, k, w, t)                                                                     \
    do {                                                                                           \
        MB_ROUND5(f, k, w, (t));                                                                   \
        MB_ROUND5(f, k, w, (t) + 5);                                                               \
        MB_ROUND5(f, k, w, (t) + 10);                                                              \
        MB_ROUND5(f, k, w, (t) + 15);                                                              \
    } while (0)

/* mb_compress: s = compress(s, w), lane by lane. Defined as a macro so
 * that it takes the including file's target attributes and inlines. */
#define MB_COMPRESS(s, w)                                                                          \
    do {                                                                                           \
        MB_VEC a = (s)[0], b = (s)[1], c = (s)[2], d = (s)[3], e = (s)[4];                         \
        MB_ROUND20(MB_CH, MB_K0, w, 0);                                                            \
        MB_ROUND20(MB_PARITY, MB_K1, w, 20);                                                       \
        MB_ROUND20(MB_MAJ, MB_K2, w, 40);                                                          \
        MB_ROUND20(MB_PARITY, MB_K3, w, 60);                                                       \
        (s)[0] = MB_ADD((s)[0], a);                                                                \
        (s)[1] = MB_ADD((s)[1], b);                                                                \
        (s)[2] = MB_ADD((s)[2], c);                                                                \
        (s)[3] = MB_ADD((s)[3], d);                                                                \
        (s)[4] = MB_ADD((s)[4], e);                                                                \
    } while (0)

#endif /* HB_MB_ROUNDS_H */
