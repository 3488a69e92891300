#ifndef FLATLAND_ALLOCATION_COUNT_H
#define FLATLAND_ALLOCATION_COUNT_H

#include <stdint.h>

/// Counts the calls to `malloc`, `calloc` and `realloc` between a start and a stop, for the
/// `mallocs/entity` column of `flatland bench`.
///
/// The process keeps glibc's allocator: these three functions, defined in the executable,
/// count (one relaxed atomic load when not counting) and go straight on to glibc's own entry
/// points. Nothing is added to a block, so the contenders are timed on the allocator a user
/// runs. (An interposer that tracks sizes puts a header on every block: 16 bytes more per
/// allocation change the heap's layout and what stays in cache.)
///
/// Counting is available on Linux with glibc, without a sanitizer (a sanitizer replaces
/// `malloc` itself). Elsewhere `flatland_allocation_count_available` returns 0.

/// 1 where allocations are counted, 0 where they are not.
int flatland_allocation_count_available(void);

/// Starts counting from zero.
void flatland_allocation_count_start(void);

/// Stops counting and returns the number of calls counted since the start.
int64_t flatland_allocation_count_stop(void);

/// The bytes glibc's allocator has handed out and not taken back (`mallinfo2().uordblks`): exact,
/// read from the allocator's own books, with nothing interposed. -1 where it is not available
/// (not glibc, or glibc before 2.33). Under a sanitizer it reads glibc's arena, which the
/// sanitizer's allocator does not use.
int64_t flatland_heap_bytes_in_use(void);

#endif
