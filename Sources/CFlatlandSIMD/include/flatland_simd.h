#ifndef FLATLAND_SIMD_H
#define FLATLAND_SIMD_H

#include <stdint.h>

/// Where the bytes that matter to the strict scanner are in one 64-byte block: bit `i` of each
/// mask describes byte `i` of the block.
typedef struct {
    /// `"`
    uint64_t quote;
    /// `\`
    uint64_t backslash;
    /// 0x80 and above: any byte of a multi-byte UTF-8 sequence.
    uint64_t non_ascii;
    /// 0x80 to 0xBF: a UTF-8 continuation byte.
    uint64_t continuation;
    /// 0x0A, line feed.
    uint64_t line_feed;
    /// `{`, `}`, `[` or `]`.
    uint64_t bracket;
    /// `,`
    uint64_t comma;
    /// 0x0B (vertical tab) or 0x0C (form feed): whitespace to libyajl, not to RFC 8259.
    uint64_t vertical_space;
    /// 1 when `utf8_error` was worked out (blocks with non-ASCII bytes, on processors where the
    /// check is vectorized), 0 when the caller must check the UTF-8 itself.
    uint64_t utf8_checked;
    /// When checked: nonzero if the block, after the bytes `before` (see below), holds a
    /// malformed UTF-8 sequence (a sequence cut short by the block's end is not an error).
    uint64_t utf8_error;
} flatland_block_masks;

/// Classifies the 64 bytes at `block`: AVX2 on x86-64 processors that have it, the baseline
/// otherwise. `before` holds the three bytes before the block (`block[-3]` in bits 8 to 15,
/// `block[-2]` in 16 to 23, `block[-1]` in 24 to 31), or 0 to read the block as starting at the
/// start of a character: the UTF-8 check sees a sequence that began before the block through it.
void flatland_classify_block(const uint8_t *block, uint32_t before, flatland_block_masks *masks);

/// The same with what every processor of the architecture has (SSE2 on x86-64, NEON on ARM64,
/// plain C elsewhere), so that tests check this path too where the other one is chosen. It does
/// not check UTF-8 (`utf8_checked` is 0).
void flatland_classify_block_baseline(const uint8_t *block, uint32_t before, flatland_block_masks *masks);

#endif
