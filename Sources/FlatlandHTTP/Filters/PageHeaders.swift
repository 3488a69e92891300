import Flatland

/// What a response's headers say of its page: the `Link` header's `rel="next"` target and
/// `X-Total-Count`, for bodies that do not say it themselves (a bare array, as the Azure Mobile
/// Apps servers answer, or the many REST APIs that page with `Link`).
enum PageHeaders {
    /// The page context these headers give: `nextLink` from `Link: <url>; rel="next"`, `total`
    /// from `X-Total-Count`; nil members where the headers say nothing.
    static func context(_ headers: HTTPHeaders) -> IngestOptions.PageContext {
        var context = IngestOptions.PageContext()
        if let link = headers["Link"] { context.nextLink = nextLink(link) }
        if let total = headers["X-Total-Count"].flatMap({ Int($0.trimmingSpaces) }), total >= 0 {
            context.total = total
        }
        return context
    }

    /// The target of the first link whose `rel` names `next` (RFC 8288: `<url>; rel="next"`,
    /// `rel=next`, several links separated by commas, several relations in one `rel`).
    static func nextLink(_ header: String) -> String? {
        var rest = Substring(header)
        while let open = rest.firstIndex(of: "<") {
            guard let close = rest[open...].firstIndex(of: ">") else { return nil }
            let target = rest[rest.index(after: open)..<close]
            let paramsEnd = rest[close...].firstIndex(of: ",").map { rest.index($0, offsetBy: 0) } ?? rest.endIndex
            // A comma inside a quoted parameter would end the link early; rel values have none.
            let params = rest[rest.index(after: close)..<paramsEnd]
            for param in params.split(separator: ";") {
                let parts = param.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingSpaces.lowercased() == "rel" else { continue }
                var value = parts[1].trimmingSpaces
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                    value = String(value.dropFirst().dropLast())
                }
                if value.split(separator: " ").contains(where: { $0.lowercased() == "next" }) { return String(target) }
            }
            rest = rest[paramsEnd...].dropFirst()
        }
        return nil
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
