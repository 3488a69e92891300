import FlatlandHTTP
import Foundation

/// One page as the server answered it, kept to be answered again from memory.
struct CapturedPage: Sendable {
    var body: Data
    /// The `Link` header, if the server sent one.
    var link: String?
}

/// A transport that answers a session's requests with pages captured from the server, from
/// memory, in 64 KiB chunks: what is left of a table query without the server and the network
/// is the client's own work (filters, tracking, parse, ingest, store).
final class ReplayTransport: HTTPTransport {
    /// The pages by path and query (``TableBench/pathAndQuery(_:)``).
    let pages: [String: CapturedPage]

    init(pages: [String: CapturedPage]) { self.pages = pages }

    func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws -> HTTPResponseHead {
        guard let page = pages[TableBench.pathAndQuery(request.url)] else {
            let head = HTTPResponseHead(status: 404)
            try receiver.receive(head: head)
            return head
        }
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let link = page.link { headers["Link"] = link }
        let head = HTTPResponseHead(status: 200, headers: headers)
        try receiver.receive(head: head)
        try page.body.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let end = min(offset + Bench.chunkSize, raw.count)
                try receiver.receive(chunk: UnsafeRawBufferPointer(rebasing: raw[offset..<end]))
                offset = end
            }
        }
        return head
    }

    func shutdown() {}
}
