#include "flatland_simd.h"

#if defined(__SSE2__)
#include <immintrin.h>
#include <stdatomic.h>

static inline uint64_t mask16(__m128i m) { return (uint64_t)(uint16_t)_mm_movemask_epi8(m); }

static void classify_sse2(const uint8_t *block, flatland_block_masks *out) {
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i lower = _mm_set1_epi8(0x20);
    const __m128i open = _mm_set1_epi8('{');
    const __m128i close = _mm_set1_epi8('}');
    const __m128i comma = _mm_set1_epi8(',');
    const __m128i line_feed = _mm_set1_epi8(0x0A);
    const __m128i vertical_tab = _mm_set1_epi8(0x0B);
    const __m128i form_feed = _mm_set1_epi8(0x0C);
    const __m128i top_two = _mm_set1_epi8((char)0xC0);
    const __m128i continuation = _mm_set1_epi8((char)0x80);
    flatland_block_masks m = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(block + 16 * k));
        // `[` and `]` are `{` and `}` without the 0x20 bit.
        __m128i folded = _mm_or_si128(v, lower);
        int shift = 16 * k;
        m.quote |= mask16(_mm_cmpeq_epi8(v, quote)) << shift;
        m.backslash |= mask16(_mm_cmpeq_epi8(v, backslash)) << shift;
        m.non_ascii |= mask16(v) << shift;
        m.continuation |= mask16(_mm_cmpeq_epi8(_mm_and_si128(v, top_two), continuation)) << shift;
        m.line_feed |= mask16(_mm_cmpeq_epi8(v, line_feed)) << shift;
        m.bracket |= mask16(_mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close))) << shift;
        m.comma |= mask16(_mm_cmpeq_epi8(v, comma)) << shift;
        m.vertical_space |= mask16(_mm_or_si128(_mm_cmpeq_epi8(v, vertical_tab), _mm_cmpeq_epi8(v, form_feed)))
            << shift;
    }
    *out = m;
}

static inline uint64_t mask32(__m256i m) __attribute__((target("avx2")));
static inline uint64_t mask32(__m256i m) { return (uint64_t)(uint32_t)_mm256_movemask_epi8(m); }

/// The same masks, 32 bytes at a time, on processors that have AVX2 (most x86-64 since 2013).
__attribute__((target("avx2"))) static void classify_avx2(const uint8_t *block, flatland_block_masks *out) {
    const __m256i quote = _mm256_set1_epi8('"');
    const __m256i backslash = _mm256_set1_epi8('\\');
    const __m256i lower = _mm256_set1_epi8(0x20);
    const __m256i open = _mm256_set1_epi8('{');
    const __m256i close = _mm256_set1_epi8('}');
    const __m256i comma = _mm256_set1_epi8(',');
    const __m256i line_feed = _mm256_set1_epi8(0x0A);
    const __m256i vertical_tab = _mm256_set1_epi8(0x0B);
    const __m256i form_feed = _mm256_set1_epi8(0x0C);
    const __m256i top_two = _mm256_set1_epi8((char)0xC0);
    const __m256i continuation = _mm256_set1_epi8((char)0x80);
    flatland_block_masks m = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 2; k++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(block + 32 * k));
        __m256i folded = _mm256_or_si256(v, lower);
        int shift = 32 * k;
        m.quote |= mask32(_mm256_cmpeq_epi8(v, quote)) << shift;
        m.backslash |= mask32(_mm256_cmpeq_epi8(v, backslash)) << shift;
        m.non_ascii |= mask32(v) << shift;
        m.continuation |= mask32(_mm256_cmpeq_epi8(_mm256_and_si256(v, top_two), continuation)) << shift;
        m.line_feed |= mask32(_mm256_cmpeq_epi8(v, line_feed)) << shift;
        m.bracket |= mask32(_mm256_or_si256(_mm256_cmpeq_epi8(folded, open), _mm256_cmpeq_epi8(folded, close)))
            << shift;
        m.comma |= mask32(_mm256_cmpeq_epi8(v, comma)) << shift;
        m.vertical_space |= mask32(
                                _mm256_or_si256(_mm256_cmpeq_epi8(v, vertical_tab), _mm256_cmpeq_epi8(v, form_feed)))
            << shift;
    }
    *out = m;
}

typedef void (*classify_function)(const uint8_t *, flatland_block_masks *);

static classify_function choose(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? classify_avx2 : classify_sse2;
}

void flatland_classify_block(const uint8_t *block, flatland_block_masks *out) {
    // Chosen once; a race only stores the same pointer twice.
    static _Atomic(classify_function) chosen = NULL;
    classify_function f = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (f == NULL) {
        f = choose();
        atomic_store_explicit(&chosen, f, memory_order_relaxed);
    }
    f(block, out);
}

#elif defined(__ARM_NEON) || defined(__ARM_NEON__)
#include <arm_neon.h>

/// One bit per lane of a comparison result (all ones or all zeros per byte).
static inline uint64_t mask16(uint8x16_t m) {
    static const uint8_t weights[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t bits = vandq_u8(m, vld1q_u8(weights));
    uint64_t low = vaddv_u8(vget_low_u8(bits));
    uint64_t high = vaddv_u8(vget_high_u8(bits));
    return low | (high << 8);
}

void flatland_classify_block(const uint8_t *block, flatland_block_masks *out) {
    flatland_block_masks m = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 4; k++) {
        uint8x16_t v = vld1q_u8(block + 16 * k);
        uint8x16_t folded = vorrq_u8(v, vdupq_n_u8(0x20));
        int shift = 16 * k;
        m.quote |= mask16(vceqq_u8(v, vdupq_n_u8('"'))) << shift;
        m.backslash |= mask16(vceqq_u8(v, vdupq_n_u8('\\'))) << shift;
        m.non_ascii |= mask16(vcgeq_u8(v, vdupq_n_u8(0x80))) << shift;
        m.continuation |= mask16(vceqq_u8(vandq_u8(v, vdupq_n_u8(0xC0)), vdupq_n_u8(0x80))) << shift;
        m.line_feed |= mask16(vceqq_u8(v, vdupq_n_u8(0x0A))) << shift;
        m.bracket |= mask16(vorrq_u8(vceqq_u8(folded, vdupq_n_u8('{')), vceqq_u8(folded, vdupq_n_u8('}')))) << shift;
        m.comma |= mask16(vceqq_u8(v, vdupq_n_u8(','))) << shift;
        m.vertical_space |= mask16(vorrq_u8(vceqq_u8(v, vdupq_n_u8(0x0B)), vceqq_u8(v, vdupq_n_u8(0x0C)))) << shift;
    }
    *out = m;
}

#else

void flatland_classify_block(const uint8_t *block, flatland_block_masks *out) {
    flatland_block_masks m = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 64; i++) {
        uint8_t b = block[i];
        uint64_t bit = (uint64_t)1 << i;
        uint8_t folded = b | 0x20;
        if (b == '"') m.quote |= bit;
        if (b == '\\') m.backslash |= bit;
        if (b >= 0x80) m.non_ascii |= bit;
        if ((b & 0xC0) == 0x80) m.continuation |= bit;
        if (b == 0x0A) m.line_feed |= bit;
        if (folded == '{' || folded == '}') m.bracket |= bit;
        if (b == ',') m.comma |= bit;
        if (b == 0x0B || b == 0x0C) m.vertical_space |= bit;
    }
    *out = m;
}

#endif
