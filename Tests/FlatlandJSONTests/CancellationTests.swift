import FlatlandJSON
import Testing

struct StopHere: Error, Equatable {
    let reason: String
}

/// A handler stops the parse by throwing; the parser then fails once and for all.
@Suite struct CancellationTests {
    static let document = #"{"a":[1,2,3],"b":"text","c":{"d":true,"e":null}}"#

    @Test(arguments: chunkings)
    func cancellationErrorStopsTheParse(_ chunkSize: Int?) throws {
        var count = 0
        let recorder = Recorder { _, _ in
            count += 1
            if count == 4 { throw CancellationError() }
        }
        let outcome = parse(Self.document.bytes, chunkSize: chunkSize, recorder: recorder)
        let error = try #require(outcome.error)
        #expect(error.code == .cancelled)
        #expect(outcome.events == [.beginObject, .key("a"), .beginArray], "nothing after the throwing event")
        #expect(count == 4, "no event was delivered after the cancellation")
        // The 4th event is the number 1, which ends at offset 7.
        #expect(error.location?.offset == 7)
    }

    @Test func everyLaterCallThrowsTheSameError() throws {
        let recorder = Recorder { event, _ in if event == .string("text") { throw CancellationError() } }
        let parser = JSONStreamParser(handler: recorder)
        var first: JSONError?
        do {
            try parser.feed(Self.document.utf8)
        } catch {
            first = error
        }
        let error = try #require(first)
        #expect(error.code == .cancelled)
        for _ in 0..<3 {
            #expect(throws: error) { try parser.feed("[1]".utf8) }
            #expect(throws: error) { try parser.finish() }
        }
        #expect(recorder.events.count == 8, "{ a [ 1 2 3 ] b: the events before the string")
    }

    @Test func syntaxErrorsAreStickyToo() throws {
        let parser = JSONStreamParser(handler: Recorder())
        let error = try #require(throws: JSONError.self) { try parser.feed("[1,,".utf8) }
        #expect(error.code == .syntax)
        #expect(throws: error) { try parser.feed("2]".utf8) }
        #expect(throws: error) { try parser.finish() }
        let truncated = JSONStreamParser(handler: Recorder())
        try truncated.feed("[1".utf8)
        let end = try #require(throws: JSONError.self) { try truncated.finish() }
        #expect(end.code == .truncated)
        #expect(throws: end) { try truncated.finish() }
        #expect(throws: end) { try truncated.feed("]".utf8) }
    }

    @Test(arguments: chunkings)
    func ownErrorsBecomeHandlerErrorsWithTheUnderlyingError(_ chunkSize: Int?) throws {
        let recorder = Recorder { event, _ in if event == .key("c") { throw StopHere(reason: "no c") } }
        let outcome = parse(Self.document.bytes, chunkSize: chunkSize, recorder: recorder)
        let error = try #require(outcome.error)
        #expect(error.code == .handler)
        #expect(error.underlying as? StopHere == StopHere(reason: "no c"))
        let keyEnd = Self.document.utf8.count - #":{"d":true,"e":null}}"#.utf8.count
        #expect(error.location?.offset == keyEnd)
        #expect(outcome.events.last == .string("text"))
    }

    @Test(arguments: chunkings)
    func jsonErrorsFromTheHandlerKeepTheirCodeAndGainALocation(_ chunkSize: Int?) throws {
        let text = "[\n  1,\n  2.5,\n  3\n]"
        let recorder = Recorder { _, number in _ = try number?.int64() }
        let outcome = parse(text.bytes, chunkSize: chunkSize, recorder: recorder)
        let error = try #require(outcome.error)
        var direct: JSONError?
        do { _ = try JSONNumber("2.5")!.int64() } catch { direct = error }
        #expect(error.code == .number)
        #expect(error.message == direct?.message)
        #expect(direct?.location == nil)
        // Located at the end of the number token: line 3, after "  2.5".
        #expect(error.location == JSONLocation(offset: 12, line: 3, column: 6))
        #expect(outcome.events == [.beginArray, .number("1")])
    }

    @Test func misuseAfterFinish() throws {
        let parser = JSONStreamParser(handler: Recorder())
        try parser.feed("[]".utf8)
        try parser.finish()
        let feed = try #require(throws: JSONError.self) { try parser.feed("[]".utf8) }
        #expect(feed.code == .misuse)
        let finish = try #require(throws: JSONError.self) { try parser.finish() }
        #expect(finish.code == .misuse)
        #expect(parser.bytesConsumed == 2)
    }
}
