/// A table of constants for the life of the process: allocated and filled once, by its
/// initializer, then only read, and never freed.
///
/// This is the one type of FlatlandJSON that shares raw memory between threads, and says why
/// that is safe. **Invariant: nothing writes the table after `init` returns.** The type offers
/// reads alone (a subscript, and ``pointer`` as an `UnsafePointer` for C), and the storage is
/// never deallocated, so every pointer into it stays valid for as long as any thread may use it.
/// Hence `Sendable`. Debug builds check every subscript against the table's bounds.
///
/// The parser's byte classes and libyajl's table of callbacks are its uses: both are read on the
/// hot path, where an `Array` would cost a bounds check and a retain per read.
struct ImmortalTable<Element: BitwiseCopyable>: @unchecked Sendable {
    /// The table's first element. Read-only: the table never changes.
    let pointer: UnsafePointer<Element>
    /// The number of elements.
    let count: Int

    /// A table of `count` elements, each `initial`, then changed by `fill`, which may write the
    /// buffer until it returns and never after.
    init(count: Int, initial: Element, fill: (UnsafeMutableBufferPointer<Element>) -> Void = { _ in }) {
        let storage = UnsafeMutableBufferPointer<Element>.allocate(capacity: max(count, 1))
        storage.initialize(repeating: initial)
        fill(UnsafeMutableBufferPointer(rebasing: storage[..<count]))
        pointer = UnsafePointer(storage.baseAddress!)
        self.count = count
    }

    /// The element at `index`, which must be in the table.
    @inline(__always)
    subscript(index: Int) -> Element {
        assert(index >= 0 && index < count, "index \(index) outside a table of \(count)")
        return pointer[index]
    }
}
