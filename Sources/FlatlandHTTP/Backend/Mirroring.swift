import Flatland
import FlatlandJSON

/// The same request sent to two environments at once, and how the answers differ: the seed's
/// "test a new server development" case.
///
/// ```swift
/// let comparison = await Mirroring.compare(.get, "/devices?offset=0&count=20",
///                                          primary: production.backend, candidate: development.backend)
/// if !comparison.matches { print(comparison.differences) }
/// ```
public enum Mirroring {
    /// What the two environments answered.
    public struct Comparison: Sendable {
        /// The primary environment's task.
        public let primaryTask: HTTPTask
        /// The candidate environment's task.
        public let candidateTask: HTTPTask
        /// The primary's outcome.
        public let primary: Result<HTTPResult, HTTPError>
        /// The candidate's outcome.
        public let candidate: Result<HTTPResult, HTTPError>
        /// What differs, one sentence each: empty when the answers match.
        public let differences: [String]
        /// Whether both answered the same.
        public var matches: Bool { differences.isEmpty }
    }

    /// Sends the request to both backends concurrently, each into its own store, and compares
    /// the statuses, the entities returned (ids, order) and their fields.
    public static func compare(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        primary: Backend, candidate: Backend
    ) async -> Comparison {
        let a = primary.launch(method, path, body: body, headers: headers)
        let b = candidate.launch(method, path, body: body, headers: headers)
        let ra: Result<HTTPResult, HTTPError>
        let rb: Result<HTTPResult, HTTPError>
        do { ra = .success(try await a.value) } catch { ra = .failure(error) }
        do { rb = .success(try await b.value) } catch { rb = .failure(error) }
        var differences: [String] = []
        switch (ra, rb) {
        case (.success(let x), .success(let y)):
            if x.status != y.status { differences.append("status \(x.status) vs \(y.status)") }
            if x.items != y.items {
                differences.append("items differ: \(x.items.count) vs \(y.items.count) entities, or another order")
            }
            for id in Set(x.items).intersection(y.items).sorted() {
                let fx = primary.store.record(id: id)?.fields
                let fy = candidate.store.record(id: id)?.fields
                if fx != fy {
                    let keys = Set(fx?.keys ?? []).union(fy?.keys ?? []).sorted().filter { fx?[$0] != fy?[$0] }
                    differences.append("\(id): fields differ: \(keys.joined(separator: ", "))")
                }
            }
            if x.endpointCollection?.total != y.endpointCollection?.total {
                differences.append(
                    "total \(x.endpointCollection?.total.map(String.init) ?? "-") vs "
                        + "\(y.endpointCollection?.total.map(String.init) ?? "-")")
            }
        case (.failure(let x), .failure(let y)):
            if x.code != y.code || x.status != y.status {
                differences.append("errors differ: \(x.code) \(x.status ?? 0) vs \(y.code) \(y.status ?? 0)")
            } else if x.bodyJSON != y.bodyJSON {
                differences.append("error bodies differ")
            }
        case (.success(let x), .failure(let y)):
            differences.append("primary answered \(x.status), candidate failed: \(y)")
        case (.failure(let x), .success(let y)):
            differences.append("primary failed: \(x), candidate answered \(y.status)")
        }
        return Comparison(
            primaryTask: a, candidateTask: b, primary: ra, candidate: rb, differences: differences)
    }
}
