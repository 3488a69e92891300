#include "allocation_count.h"

#include <stdatomic.h>
#include <stddef.h>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define FLATLAND_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FLATLAND_SANITIZED 1
#endif

#if defined(__linux__) && defined(__GLIBC__) && !defined(FLATLAND_SANITIZED)

static atomic_int counting;
static atomic_llong calls;

// glibc's allocator under its own names: what `malloc`, `calloc` and `realloc` are without us.
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);

static inline void count_one(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    }
}

void *malloc(size_t size) {
    count_one();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    count_one();
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    count_one();
    return __libc_realloc(pointer, size);
}

int flatland_allocation_count_available(void) { return 1; }

void flatland_allocation_count_start(void) {
    atomic_store_explicit(&calls, 0, memory_order_relaxed);
    atomic_store_explicit(&counting, 1, memory_order_relaxed);
}

int64_t flatland_allocation_count_stop(void) {
    atomic_store_explicit(&counting, 0, memory_order_relaxed);
    return atomic_load_explicit(&calls, memory_order_relaxed);
}

#else

int flatland_allocation_count_available(void) { return 0; }

void flatland_allocation_count_start(void) {}

int64_t flatland_allocation_count_stop(void) { return 0; }

#endif

int64_t flatland_heap_bytes_in_use(void) {
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    return (int64_t)mallinfo2().uordblks;
#else
    return -1;
#endif
}
