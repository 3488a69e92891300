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

/// The masks of one 64-byte block that a summary needs; `FLATLAND_SUMMARY_MASKS` computes them
/// for every vector width, as `FLATLAND_CLASSIFY` does.
typedef struct {
    uint64_t line_feed, continuation, non_ascii, vertical_space, backslash;
} summary_masks;

#define FLATLAND_SUMMARY_MASKS(VEC, WIDTH, MOVEMASK)                                               \
    summary_masks m = {0, 0, 0, 0, 0};                                                             \
    for (int k = 0; k < 64 / (WIDTH); k++) {                                                       \
        VEC v;                                                                                     \
        __builtin_memcpy(&v, block + (WIDTH) * k, (WIDTH));                                        \
        int shift = (WIDTH) * k;                                                                   \
        m.line_feed |= MOVEMASK(v == 0x0A) << shift;                                               \
        m.non_ascii |= MOVEMASK(v >= 0x80) << shift;                                               \
        m.vertical_space |= MOVEMASK((v == 0x0B) | (v == 0x0C)) << shift;                          \
        m.backslash |= MOVEMASK(v == '\\') << shift;                                               \
    }                                                                                              \
    if (m.non_ascii) {                                                                             \
        for (int k = 0; k < 64 / (WIDTH); k++) {                                                   \
            VEC v;                                                                                 \
            __builtin_memcpy(&v, block + (WIDTH) * k, (WIDTH));                                    \
            m.continuation |= MOVEMASK((v & 0xC0) == 0x80) << ((WIDTH) * k);                       \
        }                                                                                          \
    }

/// Whether the `\uD` at `at` (of the `count` bytes at `bytes`) may begin a surrogate escape
/// that the states must judge: a high one not followed by a low one, a low one not after a high
/// one, or one after another backslash (which may escape it). A pair of them is fine; so is
/// anything the end cuts short, since the string it is in then goes on after the chunk's last
/// event, where the states read anyway. `expected_low` is where the low half of the last pair
/// began.
__attribute__((noinline)) static int escape_needs_states(
    const uint8_t *bytes, uint64_t at, uint64_t count, uint64_t *expected_low) {
    if (at == 0 || bytes[at - 1] == '\\') return 1;
    if (at + 3 >= count) return 0;
    uint8_t third = bytes[at + 3] | 0x20;
    if (third >= '0' && third <= '7') return 0;
    if (third >= 'c' && third <= 'f') return at != *expected_low;
    if (third != '8' && third != '9' && third != 'a' && third != 'b') return 1;
    // A high surrogate: `\uD[89AB]xx` then `\uD[C-F]`.
    for (uint64_t j = 6; j <= 9; j++) {
        if (at + j >= count) return 0;
        uint8_t c = bytes[at + j];
        int ok = j == 6 ? c == '\\' : j == 7 ? c == 'u' : j == 8 ? (c | 0x20) == 'd' : ((c | 0x20) >= 'c' && (c | 0x20) <= 'f');
        if (!ok) return 1;
    }
    *expected_low = at + 6;
    return 0;
}

/// Adds one block's masks, for the block at `index` of the `count` bytes at `bytes`, to `s`.
static inline void summary_add(
    flatland_summary *s, const uint8_t *bytes, summary_masks m, uint64_t index, uint64_t count, uint64_t *expected_low) {
    if (m.vertical_space) s->suspicious = 1;
    if (m.non_ascii) s->non_ascii = 1;
    uint64_t b = m.backslash;
    while (b) {
        int k = __builtin_ctzll(b);
        b &= b - 1;
        // Most escapes are not `\uD`: those go out of line.
        uint64_t at = index + (uint64_t)k;
        if (at + 2 < count && bytes[at + 1] == 'u' && (bytes[at + 2] | 0x20) == 'd'
            && escape_needs_states(bytes, at, count, expected_low)) {
            s->suspicious = 1;
        }
    }
    uint64_t c = m.continuation;
    if (c) s->continuations += (uint64_t)__builtin_popcountll(c);
    if (m.line_feed) {
        int last = 63 - __builtin_clzll(m.line_feed);
        s->line_feeds += (uint64_t)__builtin_popcountll(m.line_feed);
        s->last_line_feed = (int64_t)(index + (uint64_t)last);
        s->continuations_after = last == 63 ? 0 : (uint64_t)__builtin_popcountll(c >> (last + 1));
    } else if (c) {
        s->continuations_after += (uint64_t)__builtin_popcountll(c);
    }
}

static int utf8_check_scalar(const uint8_t *p, uint64_t n);

/// Defines a summary function over 64-byte blocks with `BLOCK_MASKS(block)` (a statement that
/// declares `m`); the bytes after the last whole block are copied into a zeroed block, since a
/// zero byte is none of the bytes a summary looks for.
#define FLATLAND_SUMMARIZE_BODY(BLOCK_MASKS)                                                       \
    flatland_summary s = {0, -1, 0, 0, 0, 0, 0};                                                   \
    uint64_t expected_low = UINT64_MAX;                                                            \
    uint64_t i = 0;                                                                                \
    for (; i + 64 <= count; i += 64) {                                                             \
        const uint8_t *block = bytes + i;                                                          \
        BLOCK_MASKS                                                                                \
        summary_add(&s, bytes, m, i, count, &expected_low);                                        \
    }                                                                                              \
    if (i < count) {                                                                               \
        uint8_t padded[64] = {0};                                                                  \
        __builtin_memcpy(padded, bytes + i, count - i);                                            \
        const uint8_t *block = padded;                                                             \
        BLOCK_MASKS                                                                                \
        summary_add(&s, bytes, m, i, count, &expected_low);                                        \
    }                                                                                              \
    if (check_utf8 && s.non_ascii) s.invalid_utf8 = utf8_check_scalar(bytes, count);               \
    *summary = s;

/// Strict UTF-8 byte by byte, with a sequence cut short by the end accepted when what is there
/// of it could begin one.
static int utf8_check_scalar(const uint8_t *p, uint64_t n) {
    uint64_t i = 0;
    while (i < n) {
        uint8_t b = p[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        int length;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b >= 0xC2 && b <= 0xDF) {
            length = 2;
        } else if (b == 0xE0) {
            length = 3;
            lo = 0xA0;
        } else if (b == 0xED) {
            length = 3;
            hi = 0x9F;
        } else if (b >= 0xE1 && b <= 0xEF) {
            length = 3;
        } else if (b == 0xF0) {
            length = 4;
            lo = 0x90;
        } else if (b >= 0xF1 && b <= 0xF3) {
            length = 4;
        } else if (b == 0xF4) {
            length = 4;
            hi = 0x8F;
        } else {
            return 1;
        }
        for (int k = 1; k < length; k++) {
            if (i + (uint64_t)k >= n) return 0;
            uint8_t c = p[i + (uint64_t)k];
            if (k == 1 ? (c < lo || c > hi) : ((c & 0xC0) != 0x80)) return 1;
        }
        i += (uint64_t)length;
    }
    return 0;
}

#if defined(__SSE2__)
#include <immintrin.h>
#include <stdatomic.h>

typedef uint8_t bytes32 __attribute__((vector_size(32)));

#define MOVEMASK16(cmp) ((uint64_t)(uint16_t)_mm_movemask_epi8((__m128i)(cmp)))
#define MOVEMASK32(cmp) ((uint64_t)(uint32_t)_mm256_movemask_epi8((__m256i)(cmp)))

void flatland_classify_block_baseline(const uint8_t *block, flatland_block_masks *out) {
    FLATLAND_CLASSIFY(bytes16, 16, MOVEMASK16)
}

/// UTF-8 by table lookups, after Keiser and Lemire, "Validating UTF-8 in less than one
/// instruction per byte" (2021): each byte, with the one before it, is looked up by high nibble,
/// low nibble and the next byte's high nibble in three 16-entry tables whose bits name the ways
/// a pair can be malformed; a pair is malformed when all three agree on one. Third and fourth
/// bytes of a sequence are the only continuations allowed after a continuation.
enum {
    TOO_SHORT = 1 << 0,       // a lead not followed by a continuation
    TOO_LONG = 1 << 1,        // ASCII followed by a continuation
    OVERLONG_3 = 1 << 2,      // E0 80..9F
    TOO_LARGE = 1 << 3,       // F4 90..BF, F5..FF
    SURROGATE = 1 << 4,       // ED A0..BF
    OVERLONG_2 = 1 << 5,      // C0, C1
    TOO_LARGE_1000 = 1 << 6,  // F5..FF 80..8F
    OVERLONG_4 = 1 << 6,      // F0 80..8F
    TWO_CONTS = 1 << 7,       // a continuation after a continuation (allowed as third or fourth)
    CARRY = TOO_SHORT | TOO_LONG | TWO_CONTS,
};

#define FLATLAND_UTF8_TABLES(SET)                                                                  \
    const __m256i first_high = SET(TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,     \
        TOO_LONG, TOO_LONG, TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS, TOO_SHORT | OVERLONG_2,    \
        TOO_SHORT, TOO_SHORT | OVERLONG_3 | SURROGATE,                                              \
        TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4);                                       \
    const __m256i first_low = SET(CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4, CARRY | OVERLONG_2, \
        CARRY, CARRY, CARRY | TOO_LARGE, CARRY | TOO_LARGE | TOO_LARGE_1000,                        \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,                     \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,                     \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,                     \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,         \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000);                    \
    const __m256i second_high = SET(TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,          \
        TOO_SHORT, TOO_SHORT, TOO_SHORT,                                                            \
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,               \
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,                                 \
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,                                  \
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE, TOO_SHORT, TOO_SHORT, TOO_SHORT,  \
        TOO_SHORT);

/// The same 16 bytes in both 128-bit lanes (byte shuffles look up within a lane).
#define FLATLAND_TABLE32(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p)                            \
    _mm256_setr_epi8((char)(a), (char)(b), (char)(c), (char)(d), (char)(e), (char)(f), (char)(g),  \
        (char)(h), (char)(i), (char)(j), (char)(k), (char)(l), (char)(m), (char)(n), (char)(o),     \
        (char)(p), (char)(a), (char)(b), (char)(c), (char)(d), (char)(e), (char)(f), (char)(g),     \
        (char)(h), (char)(i), (char)(j), (char)(k), (char)(l), (char)(m), (char)(n), (char)(o),     \
        (char)(p))

/// 1 when the 64 bytes at `block`, after the three bytes before it (when `has_before`), are not
/// well-formed UTF-8 (a sequence the block's end cuts short is not counted), 0 when they are.
__attribute__((target("avx2"))) static int utf8_check_avx2(const uint8_t *block, int has_before) {
    uint32_t before = 0;
    if (has_before) __builtin_memcpy(&before, block - 4, 4);
    before &= 0xFFFFFF00u;
    FLATLAND_UTF8_TABLES(FLATLAND_TABLE32)
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    // The bytes before the block as the last three of a previous vector.
    __m256i previous = _mm256_insert_epi32(_mm256_setzero_si256(), (int)before, 7);
    __m256i errors = _mm256_setzero_si256();
    for (int k = 0; k < 2; k++) {
        __m256i input = _mm256_loadu_si256((const __m256i *)(block + 32 * k));
        // The 16 bytes before each lane: the previous vector's high lane, then this one's low.
        __m256i before = _mm256_permute2x128_si256(previous, input, 0x21);
        __m256i prev1 = _mm256_alignr_epi8(input, before, 15);
        __m256i prev2 = _mm256_alignr_epi8(input, before, 14);
        __m256i prev3 = _mm256_alignr_epi8(input, before, 13);
        __m256i special = _mm256_and_si256(
            _mm256_and_si256(
                _mm256_shuffle_epi8(first_high, _mm256_and_si256(_mm256_srli_epi16(prev1, 4), nibble)),
                _mm256_shuffle_epi8(first_low, _mm256_and_si256(prev1, nibble))),
            _mm256_shuffle_epi8(second_high, _mm256_and_si256(_mm256_srli_epi16(input, 4), nibble)));
        // Only 111_____ two bytes back, or 1111____ three back, end up with their top bit set.
        __m256i third = _mm256_subs_epu8(prev2, _mm256_set1_epi8((char)(0xE0 - 0x80)));
        __m256i fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8((char)(0xF0 - 0x80)));
        __m256i continuation_expected = _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8((char)0x80));
        errors = _mm256_or_si256(errors, _mm256_xor_si256(continuation_expected, special));
        previous = input;
    }
    // A pair is judged at its second byte: the last byte, if it can never lead, has none.
    uint8_t last = block[63];
    return !_mm256_testz_si256(errors, errors) || last == 0xC0 || last == 0xC1 || last >= 0xF5;
}

#define FLATLAND_SUMMARY_MASKS16 FLATLAND_SUMMARY_MASKS(bytes16, 16, MOVEMASK16)
#define FLATLAND_SUMMARY_MASKS32 FLATLAND_SUMMARY_MASKS(bytes32, 32, MOVEMASK32)

void flatland_summarize_baseline(const uint8_t *bytes, uint64_t count, int check_utf8, flatland_summary *summary) {
    FLATLAND_SUMMARIZE_BODY(FLATLAND_SUMMARY_MASKS16)
}

/// Whether the block is the usual kind, ASCII without form feeds, vertical tabs or
/// backslashes, where only the line feeds (stored in `line_feeds`) count.
__attribute__((target("avx2"))) static inline int ordinary_block_avx2(const uint8_t *block, uint64_t *line_feeds) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)block);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(block + 32));
    const __m256i vt = _mm256_set1_epi8(0x0B), ff = _mm256_set1_epi8(0x0C), bs = _mm256_set1_epi8('\\');
    __m256i odd = _mm256_or_si256(
        _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(lo, vt), _mm256_cmpeq_epi8(lo, ff)),
            _mm256_or_si256(_mm256_cmpeq_epi8(hi, vt), _mm256_cmpeq_epi8(hi, ff))),
        _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(lo, bs), _mm256_cmpeq_epi8(hi, bs)), _mm256_or_si256(lo, hi)));
    if (_mm256_movemask_epi8(odd) != 0) return 0;
    const __m256i lf = _mm256_set1_epi8(0x0A);
    *line_feeds = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, lf))
                  | (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, lf)) << 32;
    return 1;
}

__attribute__((target("avx2,popcnt,lzcnt,bmi"))) static void summarize_avx2(
    const uint8_t *bytes, uint64_t count, int check_utf8, flatland_summary *summary) {
    flatland_summary s = {0, -1, 0, 0, 0, 0, 0};
    uint64_t expected_low = UINT64_MAX;
    uint64_t i = 0;
    int after_non_ascii = 0;
    for (; i + 64 <= count; i += 64) {
        const uint8_t *block = bytes + i;
        uint64_t line_feeds;
        // A sequence begun in the three bytes before the block goes on into it.
        int open = after_non_ascii && (block[-1] >= 0xC0 || block[-2] >= 0xE0 || block[-3] >= 0xF0);
        if (!open && ordinary_block_avx2(block, &line_feeds)) {
            after_non_ascii = 0;
            if (line_feeds) {
                s.line_feeds += (uint64_t)__builtin_popcountll(line_feeds);
                s.last_line_feed = (int64_t)(i + 63 - (uint64_t)__builtin_clzll(line_feeds));
                s.continuations_after = 0;
            }
            continue;
        }
        FLATLAND_SUMMARY_MASKS32
        summary_add(&s, bytes, m, i, count, &expected_low);
        // UTF-8 where there is any: a block with a byte above 0x7F, or the end of a sequence.
        if (check_utf8 && !s.invalid_utf8 && (m.non_ascii || open) && utf8_check_avx2(block, i >= 4)) {
            s.invalid_utf8 = 1;
        }
        after_non_ascii = m.non_ascii != 0;
    }
    if (i < count) {
        uint8_t padded[64] = {0};
        __builtin_memcpy(padded, bytes + i, count - i);
        const uint8_t *block = padded;
        FLATLAND_SUMMARY_MASKS32
        summary_add(&s, bytes, m, i, count, &expected_low);
        // The last 64 bytes again, through the end of any sequence begun before them.
        if (check_utf8 && s.non_ascii && !s.invalid_utf8) {
            s.invalid_utf8 = count >= 68 ? utf8_check_avx2(bytes + count - 64, 1) : utf8_check_scalar(bytes, count);
        }
    }
    *summary = s;
}

/// 32 bytes at a time, on processors that have AVX2 (most x86-64 since 2013).
__attribute__((target("avx2"))) static void classify_avx2(const uint8_t *block, flatland_block_masks *out) {
    FLATLAND_CLASSIFY(bytes32, 32, MOVEMASK32)
}

static int utf8_unavailable(const uint8_t *block, int has_before) {
    (void)block;
    (void)has_before;
    return -1;
}

typedef void (*classify_function)(const uint8_t *, flatland_block_masks *);
typedef int (*utf8_function)(const uint8_t *, int);
typedef void (*summarize_function)(const uint8_t *, uint64_t, int, flatland_summary *);

// Chosen once, on the first call of either; a race only stores the same pointers twice.
static _Atomic(classify_function) chosen_classify = NULL;
static _Atomic(utf8_function) chosen_utf8 = NULL;
static _Atomic(summarize_function) chosen_summarize = NULL;

static void choose(void) {
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2");
    atomic_store_explicit(
        &chosen_summarize, avx2 ? summarize_avx2 : flatland_summarize_baseline, memory_order_relaxed);
    atomic_store_explicit(&chosen_utf8, avx2 ? utf8_check_avx2 : utf8_unavailable, memory_order_relaxed);
    atomic_store_explicit(
        &chosen_classify, avx2 ? classify_avx2 : flatland_classify_block_baseline, memory_order_relaxed);
}

void flatland_classify_block(const uint8_t *block, flatland_block_masks *out) {
    classify_function f = atomic_load_explicit(&chosen_classify, memory_order_relaxed);
    if (f == NULL) {
        choose();
        f = atomic_load_explicit(&chosen_classify, memory_order_relaxed);
    }
    f(block, out);
}

int flatland_utf8_block_check(const uint8_t *block, int has_before) {
    utf8_function f = atomic_load_explicit(&chosen_utf8, memory_order_relaxed);
    if (f == NULL) {
        choose();
        f = atomic_load_explicit(&chosen_utf8, memory_order_relaxed);
    }
    return f(block, has_before);
}

void flatland_summarize(const uint8_t *bytes, uint64_t count, int check_utf8, flatland_summary *summary) {
    summarize_function f = atomic_load_explicit(&chosen_summarize, memory_order_relaxed);
    if (f == NULL) {
        choose();
        f = atomic_load_explicit(&chosen_summarize, memory_order_relaxed);
    }
    f(bytes, count, check_utf8, summary);
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

int flatland_utf8_block_check(const uint8_t *block, int has_before) {
    (void)block;
    (void)has_before;
    return -1;
}

void flatland_summarize_baseline(const uint8_t *bytes, uint64_t count, int check_utf8, flatland_summary *summary) {
    FLATLAND_SUMMARIZE_BODY(FLATLAND_SUMMARY_MASKS(bytes16, 16, movemask16))
}

void flatland_summarize(const uint8_t *bytes, uint64_t count, int check_utf8, flatland_summary *summary) {
    flatland_summarize_baseline(bytes, count, check_utf8, summary);
}

#endif
