#include "flatland_simd.h"

/// The classification of one block, written once for every vector width: `VEC` is a vector of
/// `WIDTH` unsigned bytes (a compiler vector extension, so `==` and `|` work lane by lane) and
/// `MOVEMASK(v)` turns a comparison result (all ones or all zeros per lane) into one bit per lane.
#define FLATLAND_CLASSIFY(VEC, WIDTH, MOVEMASK)                                                    \
    flatland_block_masks m = {0, 0, 0, 0, 0, 0, 0, 0};                                             \
    for (int k = 0; k < 64 / (WIDTH); k++) {                                                       \
        VEC v;                                                                                     \
        __builtin_memcpy(&v, block + (WIDTH) * k, (WIDTH));                                        \
        /* `[` and `]` are `{` and `}` without the 0x20 bit. */                                    \
        VEC folded = v | 0x20;                                                                     \
        int shift = (WIDTH) * k;                                                                   \
        m.quote |= MOVEMASK(v == '"') << shift;                                                    \
        m.backslash |= MOVEMASK(v == '\\') << shift;                                               \
        m.non_ascii |= MOVEMASK(v >= 0x80) << shift;                                               \
        m.continuation |= MOVEMASK((v & 0xC0) == 0x80) << shift;                                   \
        m.line_feed |= MOVEMASK(v == 0x0A) << shift;                                               \
        m.bracket |= MOVEMASK((folded == '{') | (folded == '}')) << shift;                         \
        m.comma |= MOVEMASK(v == ',') << shift;                                                    \
        m.vertical_space |= MOVEMASK((v == 0x0B) | (v == 0x0C)) << shift;                          \
    }                                                                                              \
    *out = m;

typedef uint8_t bytes16 __attribute__((vector_size(16)));

#if defined(__SSE2__)
#include <immintrin.h>
#include <stdatomic.h>

typedef uint8_t bytes32 __attribute__((vector_size(32)));

#define MOVEMASK16(cmp) ((uint64_t)(uint16_t)_mm_movemask_epi8((__m128i)(cmp)))
#define MOVEMASK32(cmp) ((uint64_t)(uint32_t)_mm256_movemask_epi8((__m256i)(cmp)))

void flatland_classify_block_baseline(const uint8_t *block, flatland_block_masks *out) {
    FLATLAND_CLASSIFY(bytes16, 16, MOVEMASK16)
}

/// 32 bytes at a time, on processors that have AVX2 (most x86-64 since 2013).
__attribute__((target("avx2"))) static void classify_avx2(const uint8_t *block, flatland_block_masks *out) {
    FLATLAND_CLASSIFY(bytes32, 32, MOVEMASK32)
}

typedef void (*classify_function)(const uint8_t *, flatland_block_masks *);

void flatland_classify_block(const uint8_t *block, flatland_block_masks *out) {
    // Chosen once; a race only stores the same pointer twice.
    static _Atomic(classify_function) chosen = NULL;
    classify_function f = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (f == NULL) {
        __builtin_cpu_init();
        f = __builtin_cpu_supports("avx2") ? classify_avx2 : flatland_classify_block_baseline;
        atomic_store_explicit(&chosen, f, memory_order_relaxed);
    }
    f(block, out);
}

#else

#if defined(__ARM_NEON) || defined(__ARM_NEON__)
#include <arm_neon.h>

/// One bit per lane: each lane keeps its own bit of a byte, then each half is summed.
static inline uint64_t movemask16(bytes16 cmp) {
    static const uint8_t weights[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t bits = vandq_u8((uint8x16_t)cmp, vld1q_u8(weights));
    return (uint64_t)vaddv_u8(vget_low_u8(bits)) | ((uint64_t)vaddv_u8(vget_high_u8(bits)) << 8);
}

#else

static inline uint64_t movemask16(bytes16 cmp) {
    uint64_t bits = 0;
    for (int i = 0; i < 16; i++) bits |= (uint64_t)(cmp[i] >> 7) << i;
    return bits;
}

#endif

void flatland_classify_block_baseline(const uint8_t *block, flatland_block_masks *out) {
    FLATLAND_CLASSIFY(bytes16, 16, movemask16)
}

void flatland_classify_block(const uint8_t *block, flatland_block_masks *out) {
    flatland_classify_block_baseline(block, out);
}

#endif
