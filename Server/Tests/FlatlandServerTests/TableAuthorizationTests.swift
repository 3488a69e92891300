import FlatlandJSON
import FlatlandServer
import Testing

/// Who may use the table routes: every route, for each access level and each kind of sender
/// (no token, a wrong token, another user's token, the owner's), over loopback.
@Suite("Tables: every route, every access level, every kind of sender")
struct TableAuthorizationTests {
    static let v2 = ["ZUMO-API-VERSION": "2.0.0"]

    /// One table of each access level, named after it.
    static let configuration = SampleServer.Configuration(
        population: .init(users: 4, sessions: 2),
        tables: TableServing(tables: TableAccess.allCases.map { TableDefinition(name: $0.rawValue, access: $0) }))

    enum Route: String, CaseIterable {
        case list, lookup, insert, patch, put, delete, undelete

        var method: String {
            switch self {
            case .list, .lookup: "GET"
            case .insert, .undelete: "POST"
            case .patch: "PATCH"
            case .put: "PUT"
            case .delete: "DELETE"
            }
        }

        /// The path on `table` (the owner's row is `r`; an insert is of a new row).
        func path(_ table: String) -> String {
            self == .list || self == .insert ? "/tables/\(table)" : "/tables/\(table)/r"
        }

        var body: String? {
            switch self {
            case .insert: #"{"id":"new","text":"new"}"#
            case .patch: #"{"text":"patched"}"#
            case .put: #"{"text":"put"}"#
            default: nil
            }
        }

        var success: Int { self == .insert ? 201 : 200 }
    }

    /// Every row of `table` as `token` sees it, deleted ones too.
    func rows(_ table: String, token: String?, port: Int) async throws -> [JSONValue] {
        let reply = try await request(
            port: port, "GET", "/tables/\(table)?__includeDeleted=true", token: token, headers: Self.v2)
        #expect(reply.status == 200)
        return reply.json?.items ?? []
    }

    /// Every access level with every kind of sender.
    static let cases = TableAccess.allCases.flatMap { access in Sender.allCases.map { (access, $0) } }

    @Test(arguments: TestStorage.all, cases)
    func everyRoute(_ kind: TestStorage, _ pair: (TableAccess, Sender)) async throws {
        let (access, sender) = pair
        try await withServer(on: kind, Self.configuration) { server, port in
            let table = access.rawValue
            let ownerToken = Sender.owner.token(server)
            let seeded = try await request(
                port: port, "POST", "/tables/\(table)", token: ownerToken, body: #"{"id":"r","text":"mine"}"#,
                headers: Self.v2)
            #expect(seeded.status == 201)
            let before = try await rows(table, token: ownerToken, port: port)

            let allowed: Bool
            switch (access, sender) {
            case (_, .wrongToken): allowed = false
            case (.anonymous, _), (_, .owner), (.authenticated, .otherUser): allowed = true
            case (_, .nobody), (.perUser, .otherUser): allowed = false
            }
            for route in Route.allCases {
                let reply = try await request(
                    port: port, route.method, route.path(table), token: sender.token(server), body: route.body,
                    headers: Self.v2)
                let expected: Int
                if allowed {
                    expected = route.success
                } else if sender == .wrongToken || sender == .nobody {
                    expected = 401
                } else {
                    // Another user on a per-user table: the owner's row does not exist for them;
                    // the table does, with only their own rows.
                    expected = route == .list || route == .insert ? route.success : 404
                }
                #expect(reply.status == expected, "\(route) \(table) as \(sender): \(reply.status)")
                #expect(reply.status < 400 || reply.json?["error"]?.stringValue != nil, "\(route): a JSON error")
                if route == .list, reply.status == 200 {
                    let ids = reply.json?.items.compactMap { $0["id"]?.stringValue }
                    #expect(ids == (access == .perUser && sender == .otherUser ? [] : ["r"]), "\(ids ?? [])")
                }
                if route == .lookup, reply.status == 200 { #expect(reply.json?["text"] == .string("mine")) }
            }
            let after = try await rows(table, token: ownerToken, port: port)
            if !allowed {
                // Nothing a refused sender sent changed what the owner sees.
                #expect(after == before)
            } else {
                let row = after.first { $0["id"] == .string("r") }
                #expect(row?["text"] == .string("put"))
                #expect(after.contains { $0["id"] == .string("new") })
            }
            if access == .perUser, sender == .otherUser {
                // Their insert is theirs: they see it, and only it.
                let theirs = try await rows(table, token: sender.token(server), port: port)
                #expect(theirs.compactMap { $0["id"]?.stringValue } == ["new"])
                #expect(theirs.first?["text"] == .string("new"))
            }
        }
    }

    @Test(arguments: TestStorage.all)
    func inAPerUserTableAnInsertOfAnotherUsersIdIsA409WithoutTheirRow(_ kind: TestStorage) async throws {
        try await withServer(on: kind, Self.configuration) { server, port in
            let owner = Sender.owner.token(server)
            let other = Sender.otherUser.token(server)
            _ = try await request(
                port: port, "POST", "/tables/perUser", token: owner, body: #"{"id":"r","text":"secret"}"#,
                headers: Self.v2)
            let taken = try await request(
                port: port, "POST", "/tables/perUser", token: other, body: #"{"id":"r","text":"mine now"}"#,
                headers: Self.v2)
            #expect(taken.status == 409)
            #expect(taken.json?["error"]?.stringValue != nil)
            #expect(!String(decoding: taken.body, as: UTF8.self).contains("secret"))
            #expect(taken.headers["etag"] == nil)
            // The owner's own duplicate gets the existing row, as in any table.
            let again = try await request(
                port: port, "POST", "/tables/perUser", token: owner, body: #"{"id":"r","text":"again"}"#,
                headers: Self.v2)
            #expect(again.status == 409)
            #expect(again.json?["text"] == .string("secret"))
            // Even with the row's own ETag, another user's write finds nothing.
            let tag = try #require(again.headers["etag"])
            for method in ["PATCH", "PUT", "DELETE"] {
                let write = try await request(
                    port: port, method, "/tables/perUser/r", token: other, body: method == "DELETE" ? nil : "{}",
                    headers: Self.v2.merging(["If-Match": tag]) { $1 })
                #expect(write.status == 404, "\(method)")
                #expect(write.headers["etag"] == nil)
            }
            let still = try await request(port: port, "GET", "/tables/perUser/r", token: owner, headers: Self.v2)
            #expect(still.headers["etag"] == tag)
            let filtered = try await request(
                port: port, "GET", "/tables/perUser?$filter=id%20eq%20'r'&$inlinecount=allpages", token: other,
                headers: Self.v2)
            #expect(filtered.json?["count"] == .number(JSONNumber(0)))
        }
    }

    @Test(arguments: TestStorage.all, Sender.allCases)
    func conditionalRequestsAndPageLinksKeepEachUsersRows(_ kind: TestStorage, _ sender: Sender) async throws {
        try await withServer(on: kind, Self.configuration) { server, port in
            let owner = Sender.owner.token(server)
            // More rows than a page of either protocol (50 in v2, 100 in v3).
            let operations = (0..<110).map {
                #"{"method":"POST","table":"perUser","body":{"id":"r\#($0)","text":"secret"}}"#
            }
            let filled = try await request(
                port: port, "POST", "/tables/$batch", token: owner,
                body: #"{"operations":[\#(operations.joined(separator: ","))]}"#, headers: Self.v2)
            #expect(filled.status == 200)
            let tag = try #require(
                try await request(port: port, "GET", "/tables/perUser/r0", token: owner, headers: Self.v2)
                    .headers["etag"])
            let token = sender.token(server)
            let refused = sender == .wrongToken || sender == .nobody ? 401 : sender == .otherUser ? 404 : nil
            // If-Match on a read, If-None-Match on each write: only the owner meets the row.
            let read = try await request(
                port: port, "GET", "/tables/perUser/r0", token: token,
                headers: Self.v2.merging(["If-Match": "\"AAAAAAAPQj8=\""]) { $1 })
            #expect(read.status == (refused ?? 412), "\(sender)")
            for method in ["PUT", "PATCH", "DELETE"] {
                let write = try await request(
                    port: port, method, "/tables/perUser/r0", token: token, body: method == "DELETE" ? nil : "{}",
                    headers: Self.v2.merging(["If-None-Match": "*"]) { $1 })
                #expect(write.status == (refused ?? 412), "\(method) as \(sender)")
                #expect(!String(decoding: write.body, as: UTF8.self).contains("secret") || sender == .owner)
            }
            // The next page's link, followed by anyone, shows only their own rows.
            for version in ["2.0.0", "3.0.0"] {
                let first = try await request(
                    port: port, "GET", "/tables/perUser?$top=1000", token: owner,
                    headers: ["ZUMO-API-VERSION": version])
                let link =
                    version == "2.0.0"
                    ? first.headers["link"].map { String($0.dropFirst().prefix { $0 != ">" }) }
                    : first.json?["nextLink"]?.stringValue
                let query = try #require(link?.split(separator: "?", maxSplits: 1).last.map(String.init))
                let next = try await request(
                    port: port, "GET", "/tables/perUser?" + query, token: token, headers: ["ZUMO-API-VERSION": version])
                if let refused, refused == 401 {
                    #expect(next.status == 401)
                } else {
                    let rows = version == "2.0.0" ? next.json?.items : next.json?["items"]?.items
                    #expect((rows ?? []).isEmpty == (sender == .otherUser), "\(version) as \(sender)")
                }
            }
            let still = try await request(port: port, "GET", "/tables/perUser/r0", token: owner, headers: Self.v2)
            #expect(still.headers["etag"] == tag)
        }
    }

    @Test(arguments: TestStorage.all)
    func anUnconfirmedRegistrationIsA403WhereATokenIsNeededAndXZumoAuthCarriesATokenToo(_ kind: TestStorage)
        async throws
    {
        try await withServer(on: kind, Self.configuration) { server, port in
            let registered = try await request(port: port, "POST", "/session", body: #"{"email":"ada@example.com"}"#)
            let pending = try #require(registered.json?["token"]?.stringValue)
            for access in [TableAccess.authenticated, .perUser] {
                let reply = try await request(
                    port: port, "GET", "/tables/\(access.rawValue)", token: pending, headers: Self.v2)
                #expect(reply.status == 403)
            }
            #expect(
                try await request(port: port, "GET", "/tables/anonymous", token: pending, headers: Self.v2).status
                    == 200)

            let owner = try #require(Sender.owner.token(server))
            let other = try #require(Sender.otherUser.token(server))
            let zumo = try await request(
                port: port, "POST", "/tables/perUser", body: #"{"id":"z"}"#,
                headers: Self.v2.merging(["X-ZUMO-AUTH": owner]) { $1 })
            #expect(zumo.status == 201)
            let mine = try await request(port: port, "GET", "/tables/perUser/z", token: owner, headers: Self.v2)
            #expect(mine.status == 200)
            // Two tokens that disagree, or a non-bearer Authorization: 401 even on an open table.
            let mixed = try await request(
                port: port, "GET", "/tables/anonymous", token: owner,
                headers: Self.v2.merging(["X-ZUMO-AUTH": other]) { $1 })
            #expect(mixed.status == 401)
            let basic = try await request(
                port: port, "GET", "/tables/anonymous", headers: Self.v2.merging(["Authorization": "Basic eDp5"]) { $1 }
            )
            #expect(basic.status == 401)
        }
    }
}
