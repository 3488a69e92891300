import FlatlandJSON
import Foundation
import Testing

@testable import Flatland

/// A label that remembers the value each decode replaced, to show what the ingestor hands
/// ``FieldValue/decode(from:updating:)``.
private struct Label: FieldValue {
    var text = ""
    var replaced: [String] = []

    static func decode(from reader: inout FieldReader) throws(FieldError) -> Label {
        Label(text: try reader.readString())
    }
    static func decode(from reader: inout FieldReader, updating value: inout Label) throws(FieldError) {
        let text = try reader.readString()
        value.replaced.append(value.text)
        value.text = text
    }
    func encode(to writer: inout JSONWriter) { writer.string(text) }
}

private struct Post: Entity, Equatable {
    static let prefix = "p"
    var id: EntityID<Post>
    var title = Label()
    var body = ""
    var subtitle: String? = nil

    init(id: EntityID<Post>) { self.id = id }

    static let fields: [Field<Post>] = [
        Field("title", \.title), Field("body", \.body), Field("subtitle", \.subtitle),
    ]
}

/// Decoding into the value a field already holds: an entity met again in one response is
/// decoded into its first draft, and text that did not change keeps its storage.
@Suite("Decoding over a field's value")
struct UpdatingDecodeTests {
    @Test func anEntityMetAgainIsDecodedOverItsFirstValues() throws {
        let store = Store(registry: try EntityRegistry([Post.self]))
        try store.ingest(
            bytes(
                #"[{"uuid":"p-1","title":"one","body":"first"},{"uuid":"p-2","title":"two"},"#
                    + #"{"uuid":"p-1","title":"one"},{"uuid":"p-1","title":"uno","subtitle":"s"}]"#))
        let post = try #require(store.entity(EntityID<Post>("p-1")))
        // A fresh draft holds the default; each later object of the same id decodes over it.
        #expect(post.title.replaced == ["", "one", "one"])
        #expect(post.title.text == "uno")
        #expect(post.body == "first")
        #expect(post.subtitle == "s")
        #expect(store.entity(EntityID<Post>("p-2"))?.title.replaced == [""])
    }

    @Test func laterTextWinsAndNullClears() throws {
        let store = Store(registry: try EntityRegistry([Post.self]))
        let long = String(repeating: "long body ", count: 5)
        try store.ingest(
            bytes(
                #"[{"uuid":"p-1","body":"\#(long)","subtitle":"\#(long)"},"#
                    + #"{"uuid":"p-1","body":"\#(long)","subtitle":null},"#
                    + #"{"uuid":"p-1","body":"short"}]"#))
        let post = try #require(store.entity(EntityID<Post>("p-1")))
        #expect(post.body == "short")
        #expect(post.subtitle == nil)
    }

    @Test func aWrongTypeOverAnEntityMetAgainFailsAndChangesNothing() throws {
        let store = Store(registry: try EntityRegistry([Post.self]))
        try store.ingest(bytes(#"{"uuid":"p-1","body":"kept"}"#))
        let error = #expect(throws: IngestError.self) {
            try store.ingest(bytes(#"[{"uuid":"p-1","body":"new"},{"uuid":"p-1","body":7}]"#))
        }
        #expect(error?.message == "expected string, found number")
        #expect(store.entity(EntityID<Post>("p-1"))?.body == "kept")
    }

    /// One token's reader, as the ingestor makes them.
    private static func withReader<R>(
        _ kind: FieldToken.Kind, _ text: String, _ body: (inout FieldReader) throws -> R
    ) rethrows -> R {
        let storage = Array(text.utf8)
        let tokens = [TapeToken(kind: kind, start: 0, length: Int32(storage.count))]
        return try storage.withUnsafeBytes { raw in
            try tokens.withUnsafeBufferPointer { t in
                var reader = FieldReader(tokens: t, storage: raw)
                return try body(&reader)
            }
        }
    }

    private static func storage(_ s: String) -> UnsafeRawPointer? {
        s.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
    }

    @Test(arguments: [
        String(repeating: "same text ", count: 4), "Grüße aus Köln, wieder und wieder", "🙂 and 🙃, 🙂 and 🙃",
    ])
    func equalTextKeepsItsStorage(text: String) throws {
        var value = String(decoding: Array(text.utf8), as: UTF8.self)  // its own storage
        let before = try #require(Self.storage(value))
        try Self.withReader(.string, text) { try String.decode(from: &$0, updating: &value) }
        #expect(value == text)
        #expect(Self.storage(value) == before)

        // Other text of the same length is new storage.
        let other = String(text.reversed())
        try #require(other != text)
        try Self.withReader(.string, other) { try String.decode(from: &$0, updating: &value) }
        #expect(value == other)
        #expect(Self.storage(value) != before)
    }

    @Test func optionalsAndErrors() throws {
        let text = String(repeating: "optional ", count: 4)
        var value: String? = String(decoding: Array(text.utf8), as: UTF8.self)
        let before = try #require(Self.storage(value!))
        try Self.withReader(.string, text) { try String?.decode(from: &$0, updating: &value) }
        #expect(value.map(Self.storage) == before)
        try Self.withReader(.null, "") { try String?.decode(from: &$0, updating: &value) }
        #expect(value == nil)
        try Self.withReader(.string, "back") { try String?.decode(from: &$0, updating: &value) }
        #expect(value == "back")

        // A token of the wrong type throws and leaves the value as it was.
        var kept = text
        let error = #expect(throws: FieldError.self) {
            try Self.withReader(.number, "7") { try String.decode(from: &$0, updating: &kept) }
        }
        #expect(error?.message == "expected string, found number")
        #expect(kept == text)
        // The default (here `Int`'s) replaces the value.
        var n = 1
        try Self.withReader(.number, "42") { try Int.decode(from: &$0, updating: &n) }
        #expect(n == 42)
    }
}
