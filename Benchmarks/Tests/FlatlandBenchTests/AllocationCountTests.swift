import CAllocationCount
import Foundation
import Testing

/// Whether a sanitizer runtime is in the process: it replaces `malloc`, and nothing is counted.
let sanitizerIsLoaded = ["__asan_init", "__tsan_init"].contains { (name: String) in dlsym(nil, name) != nil }

/// The counter behind `flatland bench`'s mallocs/entity column.
@Suite("Allocation count")
struct AllocationCountTests {
    @Test func countsEveryCallBetweenStartAndStop() throws {
        #if os(Linux)
            let expected = !sanitizerIsLoaded
        #else
            let expected = false
        #endif
        #expect((flatland_allocation_count_available() != 0) == expected)
        guard expected else { return }

        flatland_allocation_count_start()
        for size in 1...100 {
            let p = malloc(size)
            free(p)
        }
        let c = calloc(10, 10)
        let r = realloc(c, 1000)
        free(r)
        let counted = flatland_allocation_count_stop()
        // 102 calls of ours; the test runner's other threads may add a few.
        #expect(counted >= 102 && counted < 1000, "\(counted)")

        // Nothing is counted after the stop, and a start counts from zero.
        free(malloc(16))
        flatland_allocation_count_start()
        let array = [Int](repeating: 7, count: 4096)
        let afterRestart = flatland_allocation_count_stop()
        #expect(array.count == 4096)
        #expect(afterRestart >= 1 && afterRestart < 100, "\(afterRestart)")
    }
}
