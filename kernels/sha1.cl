/*
 * sha1.cl - SHA-1 compression over whole 64-byte blocks, many lanes per
 * launch.
 *
 * Owns: the SHA-1 compression function and the device-side data layout.
 * Must not: pad messages, know message lengths or produce digests; the host
 * pads, packs and turns the final state into bytes (host/src/pack.c).
 *
 * Contract. A launch hashes ngroups groups of 16 lanes. Each lane has room
 * for `stride` blocks and runs the first lane_blocks[g * 16 + i] of them
 * (0 for an unused lane); the host puts lanes of similar length together.
 * Words are big-endian-decoded uints.
 *   block data: word j of lane i of block b of group g at
 *               ((g * stride + b) * 16 + j) * 16 + i
 *   state:      word k (0..4) of lane i of group g at (g * 5 + k) * 16 + i
 * Each lane's state is read, advanced over its blocks and written back in
 * place, so a long message continues across launches.
 *
 * HB_LANES picks the shape of a work-item, the layout staying the same:
 *   16: one work-item per group, the 16 lanes in one uint16 (CPU devices:
 *       the vector ops map onto AVX-512 rotates and ternary logic);
 *    1: one work-item per lane (GPUs: neighbouring work-items read
 *       neighbouring words, so loads coalesce).
 */

#ifndef HB_LANES
#define HB_LANES 16
#endif

#if HB_LANES == 16
typedef uint16 lane_t;
/* all ones in lanes still running block i, zeros in lanes done */
#define ACTIVE_MASK(i, counts) as_uint16((uint16)(i) < (counts))

static uint lanes_max(uint16 v)
{
    uint8 m8 = max(v.lo, v.hi);
    uint4 m4 = max(m8.lo, m8.hi);
    uint2 m2 = max(m4.lo, m4.hi);
    return max(m2.x, m2.y);
}
#define LOAD_WORD(base, offset) (*(__global const uint16 *)((base) + (offset)))
#define STORE_WORD(base, offset, v) (*(__global uint16 *)((base) + (offset)) = (v))
#elif HB_LANES == 1
typedef uint lane_t;
#define ACTIVE_MASK(i, counts) (0u - (uint)((i) < (counts)))
#define lanes_max(v) (v)
#define LOAD_WORD(base, offset) ((base)[(offset)])
#define STORE_WORD(base, offset, v) ((base)[(offset)] = (v))
#else
#error "HB_LANES must be 16 or 1"
#endif

#define ROTL(x, n) rotate((x), (lane_t)(n))

/* Round functions as bit selects: one ternary-logic instruction each. */
#define F_CH(b, c, d) bitselect((d), (c), (b))
#define F_PARITY(b, c, d) ((b) ^ (c) ^ (d))
#define F_MAJ(b, c, d) bitselect((b), (c), (b) ^ (d))

#define K0 0x5A827999u
#define K1 0x6ED9EBA1u
#define K2 0x8F1BBCDCu
#define K3 0xCA62C1D6u

/* Message schedule, 16 words kept in a ring. */
#define SCHEDULE(t)                                                      \
    (w[(t) & 15] = ROTL(w[((t) - 3) & 15] ^ w[((t) - 8) & 15] ^          \
                        w[((t) - 14) & 15] ^ w[(t) & 15], 1))

#define ROUND(a, b, c, d, e, f, k, wt)                                   \
    do {                                                                 \
        (e) += ROTL((a), 5) + f((b), (c), (d)) + (lane_t)(k) + (wt);      \
        (b) = ROTL((b), 30);                                             \
    } while (0)

/* Five rounds rotate the names back to where they started. */
#define ROUNDS5_FIRST(t, f, k)                                           \
    ROUND(a, b, c, d, e, f, k, w[(t) + 0]);                              \
    ROUND(e, a, b, c, d, f, k, w[(t) + 1]);                              \
    ROUND(d, e, a, b, c, f, k, w[(t) + 2]);                              \
    ROUND(c, d, e, a, b, f, k, w[(t) + 3]);                              \
    ROUND(b, c, d, e, a, f, k, w[(t) + 4])

#define ROUNDS5(t, f, k)                                                 \
    ROUND(a, b, c, d, e, f, k, SCHEDULE((t) + 0));                       \
    ROUND(e, a, b, c, d, f, k, SCHEDULE((t) + 1));                       \
    ROUND(d, e, a, b, c, f, k, SCHEDULE((t) + 2));                       \
    ROUND(c, d, e, a, b, f, k, SCHEDULE((t) + 3));                       \
    ROUND(b, c, d, e, a, f, k, SCHEDULE((t) + 4))

__kernel void hb_sha1_blocks(__global const uint *blocks,
                             __global uint *state,
                             __global const uint *lane_blocks,
                             uint stride,
                             uint ngroups)
{
#if HB_LANES == 16
    const size_t group = get_global_id(0);
    const size_t lane = 0;
#else
    const size_t group = get_global_id(0) >> 4;
    const size_t lane = get_global_id(0) & 15;
#endif
    if (group >= ngroups)
        return;

    __global uint *lane_state = state + group * 80 + lane;
    lane_t h0 = LOAD_WORD(lane_state, 0);
    lane_t h1 = LOAD_WORD(lane_state, 16);
    lane_t h2 = LOAD_WORD(lane_state, 32);
    lane_t h3 = LOAD_WORD(lane_state, 48);
    lane_t h4 = LOAD_WORD(lane_state, 64);

    const lane_t counts = LOAD_WORD(lane_blocks + group * 16 + lane, 0);
    const uint most = lanes_max(counts);
    __global const uint *block = blocks + group * (size_t)stride * 256 + lane;
    for (uint i_block = 0; i_block < most; i_block++, block += 256) {
        lane_t w[16];
        for (int j = 0; j < 16; j++)
            w[j] = LOAD_WORD(block, j * 16);

        lane_t a = h0, b = h1, c = h2, d = h3, e = h4;
        ROUNDS5_FIRST(0, F_CH, K0);
        ROUNDS5_FIRST(5, F_CH, K0);
        ROUNDS5_FIRST(10, F_CH, K0);
        ROUND(a, b, c, d, e, F_CH, K0, w[15]);
        ROUND(e, a, b, c, d, F_CH, K0, SCHEDULE(16));
        ROUND(d, e, a, b, c, F_CH, K0, SCHEDULE(17));
        ROUND(c, d, e, a, b, F_CH, K0, SCHEDULE(18));
        ROUND(b, c, d, e, a, F_CH, K0, SCHEDULE(19));

        ROUNDS5(20, F_PARITY, K1);
        ROUNDS5(25, F_PARITY, K1);
        ROUNDS5(30, F_PARITY, K1);
        ROUNDS5(35, F_PARITY, K1);

        ROUNDS5(40, F_MAJ, K2);
        ROUNDS5(45, F_MAJ, K2);
        ROUNDS5(50, F_MAJ, K2);
        ROUNDS5(55, F_MAJ, K2);

        ROUNDS5(60, F_PARITY, K3);
        ROUNDS5(65, F_PARITY, K3);
        ROUNDS5(70, F_PARITY, K3);
        ROUNDS5(75, F_PARITY, K3);
        const lane_t active = ACTIVE_MASK(i_block, counts);
        h0 += a & active;
        h1 += b & active;
        h2 += c & active;
        h3 += d & active;
        h4 += e & active;
    }

    STORE_WORD(lane_state, 0, h0);
    STORE_WORD(lane_state, 16, h1);
    STORE_WORD(lane_state, 32, h2);
    STORE_WORD(lane_state, 48, h3);
    STORE_WORD(lane_state, 64, h4);
}
