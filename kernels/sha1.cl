/*
 * sha1.cl - SHA-1 compression over whole 64-byte blocks, many lanes per
 * launch, in three kernels.
 *
 * Owns: the SHA-1 compression function and the device-side data layouts:
 *   hb_sha1_blocks   blocks the host packed (any device): state in, blocks,
 *                    state out, so a long message continues across launches;
 *   hb_sha1_in_place whole blocks read straight from the caller's bytes,
 *                    only the padded final blocks packed by the host (CPU
 *                    devices sharing host memory); state in and out;
 *   hb_sha1_uniform  messages of one short length, start to end in one
 *                    launch: it builds the constant padding block of a
 *                    length that is a multiple of 64 itself and writes each
 *                    message's final digest bytes.
 * Must not: pad a message whose length is not a multiple of 64 (the host
 * packs those final blocks: host/src/pack.c, stage_in_place.c), or keep
 * state between launches; the first two kernels produce lane states, which
 * the host turns into digest bytes.
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
 * The probe (host/src/probe.h): every kernel also takes `probe`, through
 * which the host's verification by structure asks chosen lanes for their
 * state at chosen block boundaries. Words [0, 16) name the groups watched
 * (slot s watches group probe[s]; 0xFFFFFFFF: slot unused); word
 * PROBE_AT(s, k) + i is a block count a (0: none) for check k (0 or 1) of
 * lane i of slot s's group, and the kernel writes that lane's state after
 * its first a blocks of this launch to the five words
 * PROBE_OUT(s, k) + w * 16 + i. Groups no slot watches pay one scan of the
 * slots per launch and one test per block.
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

static uint lanes_min(uint16 v)
{
    uint8 m8 = min(v.lo, v.hi);
    uint4 m4 = min(m8.lo, m8.hi);
    uint2 m2 = min(m4.lo, m4.hi);
    return min(m2.x, m2.y);
}
#define LOAD_WORD(base, offset) (*(__global const uint16 *)((base) + (offset)))
#define STORE_WORD(base, offset, v) (*(__global uint16 *)((base) + (offset)) = (v))
#elif HB_LANES == 1
typedef uint lane_t;
#define ACTIVE_MASK(i, counts) (0u - (uint)((i) < (counts)))
#define lanes_max(v) (v)
#define lanes_min(v) (v)
#define LOAD_WORD(base, offset) ((base)[(offset)])
#define STORE_WORD(base, offset, v) ((base)[(offset)] = (v))
#else
#error "HB_LANES must be 16 or 1"
#endif

#define ROTL(x, n) rotate((x), (lane_t)(n))

#if HB_LANES == 16
/* all ones in the lanes where a == b */
#define LANES_EQUAL(a, b) as_uint16((uint16)(a) == (b))
#define ANY_LANE(mask) any(as_int16(mask))
#define LANE_IDS ((uint16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
/* v in the lanes of mask, the word at base + offset elsewhere */
#define MERGE_WORD(base, offset, v, mask) bitselect(LOAD_WORD((base), (offset)), (v), (mask))
#else
#define MERGE_WORD(base, offset, v, mask) (v)
#define LANES_EQUAL(a, b) (0u - (uint)((uint)(a) == (b)))
#define ANY_LANE(mask) ((mask) != 0u)
#define LANE_IDS ((uint)(get_global_id(0) & 15))
#endif

/* ---- the probe ---------------------------------------------------------- */

#define PROBE_SLOTS 8
#define PROBE_NONE 0xFFFFFFFFu
#define PROBE_AT(s, k) (16 + ((s) * 2 + (k)) * 16)
#define PROBE_OUT(s, k) (16 + PROBE_SLOTS * 32 + ((s) * 2 + (k)) * 80)

/* probe_slot: the slot watching `group`, or -1. */
static int probe_slot(__global const uint *probe, size_t group)
{
    for (int s = 0; s < PROBE_SLOTS; s++)
        if (probe[s] != PROBE_NONE && probe[s] == group)
            return s;
    return -1;
}

/* probe_write: the lanes (offset `lane` into the slot's words) whose
 * check k asked for their state after `done` blocks get h written. */
static inline __attribute__((always_inline)) void probe_write(__global uint *probe, int slot,
                                                              int k, size_t lane, uint done,
                                                              const lane_t h[5])
{
    const lane_t wanted = LANES_EQUAL(done, LOAD_WORD(probe + PROBE_AT(slot, k) + lane, 0));
    if (!ANY_LANE(wanted))
        return;
    __global uint *out = probe + PROBE_OUT(slot, k) + lane;
    for (int w = 0; w < 5; w++)
        STORE_WORD(out, w * 16, MERGE_WORD(out, w * 16, h[w], wanted));
}

/* probe_next_stop: the first block count after `done` at which the probe
 * wants the state of one of this work-item's lanes, else `most`; never
 * (PROBE_NONE, past any block) when its group is not watched (slot < 0).
 * The block loops test only this one scalar per block, so an unwatched
 * group, and a watched one between its stops, runs as if there were no
 * probe. */
static uint probe_next_stop(__global const uint *probe, int slot, size_t lane, uint done,
                            uint most)
{
    if (slot < 0)
        return PROBE_NONE;
    uint stop = most;
    for (int k = 0; k < 2; k++) {
        const lane_t at = LOAD_WORD(probe + PROBE_AT(slot, k) + lane, 0);
        const lane_t later = select((lane_t)most, at, at > (lane_t)done);
        stop = min(stop, lanes_min(later));
    }
    return stop;
}

/* probe_at_stop: after `done` blocks, a stop: the states wanted there
 * written; the next stop returned. */
static inline __attribute__((always_inline)) uint probe_at_stop(__global uint *probe, int slot,
                                                                size_t lane, uint done,
                                                                uint most, const lane_t h[5])
{
    probe_write(probe, slot, 0, lane, done, h);
    probe_write(probe, slot, 1, lane, done, h);
    return probe_next_stop(probe, slot, lane, done, most);
}

#if HB_LANES == 1
/* PROBE_STOP: the same, one lane per work-item, and not inlined: the
 * block loop that calls it, rarely, keeps a GPU's few registers for the
 * compression (the state passes by value). */
__attribute__((noinline)) static uint probe_lane_at_stop(__global uint *probe, int slot,
                                                         size_t lane, uint done, uint most,
                                                         uint h0, uint h1, uint h2, uint h3,
                                                         uint h4)
{
    const uint h[5] = {h0, h1, h2, h3, h4};
    return probe_at_stop(probe, slot, lane, done, most, h);
}
#define PROBE_STOP(probe, slot, lane, done, most, h)                                 \
    probe_lane_at_stop((probe), (slot), (lane), (done), (most), (h)[0], (h)[1], (h)[2], \
                       (h)[3], (h)[4])
#else
#define PROBE_STOP(probe, slot, lane, done, most, h)                                 \
    probe_at_stop((probe), (slot), (lane), (done), (most), (h))
#endif

/* ---- faults built in on purpose (test builds only) ----------------------
 * The host adds these defines only when a test asks for a broken kernel
 * (hb_testing_set_device_break), so that verification can be shown to
 * catch each kind of fault; the library never builds them otherwise. */
#ifdef HB_BREAK_LANE /* lane HB_BREAK_LANE of every group: wrong after each block */
#define BREAK_AFTER_BLOCK(h) ((h)[0] ^= LANES_EQUAL(HB_BREAK_LANE, LANE_IDS) & (lane_t)1u)
#else
#define BREAK_AFTER_BLOCK(h) ((void)0)
#endif
/* kernel number HB_BREAK_KERNEL (0 blocks, 1 in place, 2 uniform): every
 * lane's final state wrong */
#define BREAK_KERNEL(n, h) BREAK_KERNEL_(n, h)
#if defined(HB_BREAK_KERNEL)
#define BREAK_KERNEL_(n, h) ((n) == HB_BREAK_KERNEL ? (void)((h)[0] ^= (lane_t)1u) : (void)0)
#else
#define BREAK_KERNEL_(n, h) ((void)0)
#endif

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

/* compress_block: one block, w[0..15] its big-endian words, into h[0..4];
 * lanes whose `active` bits are zero keep their state. */
static inline __attribute__((always_inline)) void compress_block(lane_t w[16], lane_t h[5],
                                                                 const lane_t active)
{
    lane_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
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
    h[0] += a & active;
    h[1] += b & active;
    h[2] += c & active;
    h[3] += d & active;
    h[4] += e & active;
}

#define LOAD_STATE(h, lane_state)                                        \
    do {                                                                 \
        for (int k_ = 0; k_ < 5; k_++)                                   \
            (h)[k_] = LOAD_WORD((lane_state), k_ * 16);                  \
    } while (0)
#define STORE_STATE(h, lane_state)                                       \
    do {                                                                 \
        for (int k_ = 0; k_ < 5; k_++)                                   \
            STORE_WORD((lane_state), k_ * 16, (h)[k_]);                  \
    } while (0)

__kernel void hb_sha1_blocks(__global const uint *blocks,
                             __global uint *state,
                             __global const uint *lane_blocks,
                             uint stride,
                             uint ngroups,
                             __global uint *probe)
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
    lane_t h[5];
    LOAD_STATE(h, lane_state);
    const lane_t counts = LOAD_WORD(lane_blocks + group * 16 + lane, 0);
    const uint most = lanes_max(counts);
    const int slot = probe_slot(probe, group);
    __global const uint *block = blocks + group * (size_t)stride * 256 + lane;
    uint stop = probe_next_stop(probe, slot, lane, 0, most);
    for (uint i_block = 0; i_block < most; i_block++, block += 256) {
        lane_t w[16];
        for (int j = 0; j < 16; j++)
            w[j] = LOAD_WORD(block, j * 16);
        compress_block(w, h, ACTIVE_MASK(i_block, counts));
        BREAK_AFTER_BLOCK(h);
        if (i_block + 1 == stop)
            stop = PROBE_STOP(probe, slot, lane, stop, most, h);
    }
    BREAK_KERNEL(0, h);
    STORE_STATE(h, lane_state);
}

#if HB_LANES == 16 && defined(HB_IN_PLACE)
/*
 * hb_sha1_in_place: the same compression, reading whole blocks straight
 * from the caller's bytes (CPU devices, where a buffer made over host
 * memory is that memory: no copy). Only the padded final blocks are
 * packed, as raw bytes, by the host.
 *
 * Contract, for lane i of group g (l = g * 16 + i):
 *   lane_whole[l] blocks are read in place, starting at byte
 *   lane_offset[l] of `bytes`; then lane_blocks[l] - lane_whole[l] final
 *   blocks from tails + l * 128 (at most 2). Blocks are raw message bytes;
 *   the kernel swaps them to big-endian words and transposes the 16
 *   lanes' blocks into the 16 words of the schedule, with shuffles.
 *   state: as for hb_sha1_blocks.
 */

/* Unaligned views of a block: 16 words, 64 bytes (clang vector types). */
typedef uint block_words __attribute__((ext_vector_type(16), aligned(1)));
typedef uchar block_bytes __attribute__((ext_vector_type(64)));

/* The 64 bytes at p (any alignment) as 16 big-endian words: one load and
 * one byte shuffle. */
static inline __attribute__((always_inline)) uint16 load_block_be(__global const uchar *p)
{
    const block_words raw = *(__global const block_words *)p;
    const block_bytes bytes = __builtin_astype(raw, block_bytes);
    const block_bytes swapped = __builtin_shufflevector(bytes, bytes, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12, 19, 18, 17, 16, 23, 22, 21, 20, 27, 26, 25, 24, 31, 30, 29, 28, 35, 34, 33, 32, 39, 38, 37, 36, 43, 42, 41, 40, 47, 46, 45, 44, 51, 50, 49, 48, 55, 54, 53, 52, 59, 58, 57, 56, 63, 62, 61, 60);
    return __builtin_astype(swapped, uint16);
}

/* transpose16: m[i] holds block words of lane i; afterwards m[j] holds
 * word j of every lane. Four levels, each swapping one bit of the row
 * and column index between pairs of rows. */
#define TRANSPOSE_PAIR(m, r, d, ia, ib)                                      \
    do {                                                                  \
        const uint16 a_ = (m)[r], b_ = (m)[(r) + (d)];                    \
        (m)[r] = __builtin_shufflevector(a_, b_, ia);                     \
        (m)[(r) + (d)] = __builtin_shufflevector(a_, b_, ib);             \
    } while (0)
#define IDX_A8 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define IDX_B8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define IDX_A4 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define IDX_B4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define IDX_A2 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define IDX_B2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define IDX_A1 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define IDX_B1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31

static inline __attribute__((always_inline)) void transpose16(uint16 m[16])
{
    TRANSPOSE_PAIR(m, 0, 8, IDX_A8, IDX_B8);
    TRANSPOSE_PAIR(m, 1, 8, IDX_A8, IDX_B8);
    TRANSPOSE_PAIR(m, 2, 8, IDX_A8, IDX_B8);
    TRANSPOSE_PAIR(m, 3, 8, IDX_A8, IDX_B8);
    TRANSPOSE_PAIR(m, 4, 8, IDX_A8, IDX_B8);
    TRANSPOSE_PAIR(m, 5, 8, IDX_A8, IDX_B8);
    TRANSPOSE_PAIR(m, 6, 8, IDX_A8, IDX_B8);
    TRANSPOSE_PAIR(m, 7, 8, IDX_A8, IDX_B8);
    TRANSPOSE_PAIR(m, 0, 4, IDX_A4, IDX_B4);
    TRANSPOSE_PAIR(m, 1, 4, IDX_A4, IDX_B4);
    TRANSPOSE_PAIR(m, 2, 4, IDX_A4, IDX_B4);
    TRANSPOSE_PAIR(m, 3, 4, IDX_A4, IDX_B4);
    TRANSPOSE_PAIR(m, 8, 4, IDX_A4, IDX_B4);
    TRANSPOSE_PAIR(m, 9, 4, IDX_A4, IDX_B4);
    TRANSPOSE_PAIR(m, 10, 4, IDX_A4, IDX_B4);
    TRANSPOSE_PAIR(m, 11, 4, IDX_A4, IDX_B4);
    TRANSPOSE_PAIR(m, 0, 2, IDX_A2, IDX_B2);
    TRANSPOSE_PAIR(m, 1, 2, IDX_A2, IDX_B2);
    TRANSPOSE_PAIR(m, 4, 2, IDX_A2, IDX_B2);
    TRANSPOSE_PAIR(m, 5, 2, IDX_A2, IDX_B2);
    TRANSPOSE_PAIR(m, 8, 2, IDX_A2, IDX_B2);
    TRANSPOSE_PAIR(m, 9, 2, IDX_A2, IDX_B2);
    TRANSPOSE_PAIR(m, 12, 2, IDX_A2, IDX_B2);
    TRANSPOSE_PAIR(m, 13, 2, IDX_A2, IDX_B2);
    TRANSPOSE_PAIR(m, 0, 1, IDX_A1, IDX_B1);
    TRANSPOSE_PAIR(m, 2, 1, IDX_A1, IDX_B1);
    TRANSPOSE_PAIR(m, 4, 1, IDX_A1, IDX_B1);
    TRANSPOSE_PAIR(m, 6, 1, IDX_A1, IDX_B1);
    TRANSPOSE_PAIR(m, 8, 1, IDX_A1, IDX_B1);
    TRANSPOSE_PAIR(m, 10, 1, IDX_A1, IDX_B1);
    TRANSPOSE_PAIR(m, 12, 1, IDX_A1, IDX_B1);
    TRANSPOSE_PAIR(m, 14, 1, IDX_A1, IDX_B1);
}

/* Where lane l's block i comes from: in place, or its packed tail. Lanes
 * past their last block read their tail again (the result is masked). */
static inline __attribute__((always_inline)) __global const uchar *
block_source(__global const uchar *bytes, __global const uchar *tails, uint offset, uint whole,
             size_t l, uint i_block)
{
    if (i_block < whole)
        return bytes + offset + (size_t)i_block * 64;
    return tails + l * 128 + (size_t)min(i_block - whole, 1u) * 64;
}

__kernel void hb_sha1_in_place(__global const uchar *bytes,
                               __global const uint *lane_offset,
                               __global const uint *lane_whole,
                               __global const uchar *tails,
                               __global uint *state,
                               __global const uint *lane_blocks,
                               uint ngroups,
                               __global uint *probe)
{
    const size_t group = get_global_id(0);
    if (group >= ngroups)
        return;
    __global uint *lane_state = state + group * 80;
    lane_t h[5];
    LOAD_STATE(h, lane_state);
    const size_t first = group * 16;
    const uint16 counts = vload16(0, lane_blocks + first);
    const uint16 offsets = vload16(0, lane_offset + first);
    const uint16 wholes = vload16(0, lane_whole + first);
    const uint most = lanes_max(counts);
    const int slot = probe_slot(probe, group);
    uint stop = probe_next_stop(probe, slot, 0, 0, most);
    for (uint i_block = 0; i_block < most; i_block++) {
        uint16 w[16];
#pragma unroll
        for (int i = 0; i < 16; i++)
            w[i] = load_block_be(block_source(bytes, tails, offsets[i], wholes[i], first + i,
                                              i_block));
        transpose16(w);
        compress_block(w, h, ACTIVE_MASK(i_block, counts));
        BREAK_AFTER_BLOCK(h);
        if (i_block + 1 == stop)
            stop = PROBE_STOP(probe, slot, 0, stop, most, h);
    }
    BREAK_KERNEL(1, h);
    STORE_STATE(h, lane_state);
}
/* padding_schedule: K + W[t] for the 80 rounds of the padding block of a
 * message of `length` bytes, length a multiple of 64: the same for every
 * lane, so it is computed once, in scalars. */
static inline __attribute__((always_inline)) void padding_schedule(uint length, uint kw[80])
{
#ifdef HB_BREAK_PADDING /* test builds: the padding block's length wrong */
    length ^= 1u;
#endif
    uint w[16] = {0x80000000u, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, length >> 29, length << 3};
#pragma unroll
    for (int t = 0; t < 80; t++) {
        if (t >= 16)
            w[t & 15] = rotate(w[(t - 3) & 15] ^ w[(t - 8) & 15] ^ w[(t - 14) & 15] ^ w[t & 15],
                               1u);
        kw[t] = w[t & 15] + (t < 20 ? K0 : t < 40 ? K1 : t < 60 ? K2 : K3);
    }
}

#define ROUNDS5_FIXED(t, f)                                              \
    ROUND(a, b, c, d, e, f, 0u, kw[(t) + 0]);                            \
    ROUND(e, a, b, c, d, f, 0u, kw[(t) + 1]);                            \
    ROUND(d, e, a, b, c, f, 0u, kw[(t) + 2]);                            \
    ROUND(c, d, e, a, b, f, 0u, kw[(t) + 3]);                            \
    ROUND(b, c, d, e, a, f, 0u, kw[(t) + 4])

/* compress_fixed_block: a block whose K + W[t] is the same in every lane. */
static inline __attribute__((always_inline)) void compress_fixed_block(const uint kw[80],
                                                                       lane_t h[5])
{
    lane_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    ROUNDS5_FIXED(0, F_CH);
    ROUNDS5_FIXED(5, F_CH);
    ROUNDS5_FIXED(10, F_CH);
    ROUNDS5_FIXED(15, F_CH);
    ROUNDS5_FIXED(20, F_PARITY);
    ROUNDS5_FIXED(25, F_PARITY);
    ROUNDS5_FIXED(30, F_PARITY);
    ROUNDS5_FIXED(35, F_PARITY);
    ROUNDS5_FIXED(40, F_MAJ);
    ROUNDS5_FIXED(45, F_MAJ);
    ROUNDS5_FIXED(50, F_MAJ);
    ROUNDS5_FIXED(55, F_MAJ);
    ROUNDS5_FIXED(60, F_PARITY);
    ROUNDS5_FIXED(65, F_PARITY);
    ROUNDS5_FIXED(70, F_PARITY);
    ROUNDS5_FIXED(75, F_PARITY);
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

/*
 * hb_sha1_uniform: nmsg messages of one length, each from its own place:
 * lane l (message l) reads its whole blocks in place from byte
 * lane_offset[l] of `bytes`; its final blocks are SHA-1's constant padding
 * block when the length is a multiple of 64 (built here), else the host's
 * packed tails (tails + l * 128). The digest bytes of message l go to
 * digests + digest_offset + l * 20. No plan, no state buffer: the batch
 * runs start to end in one launch. Its probe's groups are work-items
 * (messages 16g..16g+15); probed states are after whole blocks only. 
 */
__kernel void hb_sha1_uniform(__global const uchar *bytes,
                              __global const uint *lane_offset,
                              __global const uchar *tails,
                              uint length,
                              uint nmsg,
                              __global uchar *digests,
                              uint digest_offset,
                              __global uint *probe)
{
    const size_t first = get_global_id(0) * 16;
    if (first >= nmsg)
        return;
    const int slot = probe_slot(probe, get_global_id(0));
    const uint16 offsets = vload16(0, lane_offset + first);
    const uint16 all = (uint16)0xFFFFFFFFu;
    uint16 h[5] = {(uint16)0x67452301u, (uint16)0xEFCDAB89u, (uint16)0x98BADCFEu,
                   (uint16)0x10325476u, (uint16)0xC3D2E1F0u};
    const uint whole = length / 64, rest = length % 64;
    uint stop = probe_next_stop(probe, slot, 0, 0, whole);
    for (uint b = 0; b < whole; b++) {
        uint16 w[16];
#pragma unroll
        for (int i = 0; i < 16; i++)
            w[i] = load_block_be(bytes + offsets[i] + (size_t)b * 64);
        transpose16(w);
        compress_block(w, h, all);
        BREAK_AFTER_BLOCK(h);
        if (b + 1 == stop)
            stop = PROBE_STOP(probe, slot, 0, stop, whole, h);
    }
    if (rest == 0) {
        uint kw[80];
        padding_schedule(length, kw);
        compress_fixed_block(kw, h);
    } else {
        const uint finals = rest + 9 > 64 ? 2 : 1;
        for (uint f = 0; f < finals; f++) {
            uint16 w[16];
#pragma unroll
            for (int i = 0; i < 16; i++)
                w[i] = load_block_be(tails + (first + i) * 128 + f * 64);
            transpose16(w);
            compress_block(w, h, all);
        }
    }
    BREAK_AFTER_BLOCK(h);
    BREAK_KERNEL(2, h);
    __global uchar *out = digests + digest_offset + first * 20;
    const uint lanes = min(16u, nmsg - (uint)first);
    for (uint i = 0; i < lanes; i++)
        for (int k = 0; k < 5; k++) {
            const uint v = h[k][i];
            vstore4((uchar4)((uchar)(v >> 24), (uchar)(v >> 16), (uchar)(v >> 8), (uchar)v), 0,
                    out + i * 20 + k * 4);
        }
}
#endif /* HB_IN_PLACE */
