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
} flatland_block_masks;

/// Classifies the 64 bytes at `block`: AVX2 on x86-64 processors that have it, the baseline
/// otherwise.
void flatland_classify_block(const uint8_t *block, flatland_block_masks *masks);

/// The same with what every processor of the architecture has (SSE2 on x86-64, NEON on ARM64,
/// plain C elsewhere), so that tests check this path too where the other one is chosen.
void flatland_classify_block_baseline(const uint8_t *block, flatland_block_masks *masks);

/// Checks the UTF-8 of the 64 bytes at `block` with vector lookups: 0 when well-formed, 1 when
/// not (a sequence that the block's end cuts short is not an error), -1 when this processor has
/// no vector check (then nothing was read). When `has_before` is nonzero the four bytes before
/// the block may be read, and a sequence begun in the last three of them is followed through
/// the block; when it is 0, the block is read as starting at the start of a character.
int flatland_utf8_block_check(const uint8_t *block, int has_before);

/// What the parser's fast path needs to know of a run of bytes before it lets libyajl read them
/// without the strict scanner's states (see `flatland_summarize`).
typedef struct {
    /// The number of 0x0A bytes.
    uint64_t line_feeds;
    /// The index of the last 0x0A, or -1 when there is none.
    int64_t last_line_feed;
    /// The number of UTF-8 continuation bytes (0x80 to 0xBF).
    uint64_t continuations;
    /// The number of them after the last 0x0A (all of them when there is none).
    uint64_t continuations_after;
    /// Nonzero when a byte is 0x80 or above.
    int non_ascii;
    /// Nonzero when a byte is 0x0B or 0x0C, or a surrogate escape may be wrong: a backslash,
    /// `u` and `d` or `D` (all in the run) that begin neither a pair of them (`\uD8xx` to
    /// `\uDBxx`, then `\uDCxx` to `\uDFxx`: checked through the low half's first hex digit) nor
    /// an escape below U+D800, or that follow another backslash. An escape or pair that the
    /// run's end cuts short does not count.
    int suspicious;
    /// Nonzero when UTF-8 was to be checked and is not well-formed, read as starting at the start
    /// of a character. A sequence that the end cuts short counts as well-formed when what is
    /// there of it could begin one.
    int invalid_utf8;
} flatland_summary;

/// Summarizes the `count` bytes at `bytes`, checking their UTF-8 too when `check_utf8` is
/// nonzero: AVX2 where the processor has it (UTF-8 with vector lookups, only in blocks with a
/// byte above 0x7F), the baseline otherwise.
void flatland_summarize(const uint8_t *bytes, uint64_t count, int check_utf8, flatland_summary *summary);

/// The same with what every processor of the architecture has (UTF-8 byte by byte), so that
/// tests check this path too where the other one is chosen.
void flatland_summarize_baseline(const uint8_t *bytes, uint64_t count, int check_utf8, flatland_summary *summary);

#endif
