import Flatland
import FlatlandFixtures
import FlatlandHTTP
import FlatlandServer
import FlatlandServerTesting
import Foundation
import Testing

@Suite("Retries and filters")
struct PolicyTests {
    @Test(
        "a server that fails twice then succeeds: retried with Retry-After honoured", arguments: TransportKind.allCases)
    func retryThenSucceed(_ kind: TransportKind) async throws {
        try await withServer { server, environment in
            server.knobs.fail("/devices", times: 2, status: 503, retryAfter: "0")
            let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5), maxDelay: .milliseconds(50))
            let session = makeSession(environment, configuration: .init(retryPolicy: policy), transport: kind)
            let task = session.launch(.get, "/devices?offset=0&count=2")
            let result = try await task.value
            #expect(result.items.count == 2)
            #expect(task.attempts == 3)
            #expect(task.retryDelays == [.zero, .zero])
            #expect(server.knobs.requestCount("GET", "/devices") == 3)
        }
    }

    @Test("retries are off by default, capped, and never for a POST")
    func retryLimits() async throws {
        try await withServer { server, environment in
            let plain = makeSession(environment)
            server.knobs.fail("/devices", times: 1, status: 503)
            #expect(await failure(of: plain.launch(.get, "/devices"))?.status == 503)
            #expect(server.knobs.requestCount("GET", "/devices") == 1)

            let policy = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1), maxDelay: .milliseconds(20))
            let retrying = makeSession(environment, configuration: .init(retryPolicy: policy))
            server.knobs.fail("/session", times: 1, status: 503)
            let post = retrying.launch(.post, "/session", body: Array(#"{"email":"a@b.c"}"#.utf8))
            #expect(await failure(of: post)?.status == 503)
            #expect(post.attempts == 1)
            #expect(server.knobs.requestCount("POST", "/session") == 1)

            server.knobs.fail("/users", times: 5, status: 503, retryAfter: "120")
            let capped = retrying.launch(.get, "/users")
            #expect(await failure(of: capped)?.status == 503)
            #expect(capped.retryDelays == [.milliseconds(20)])
            #expect(server.knobs.requestCount("GET", "/users") == 2)
        }
    }

    @Test("backoff is exponential and capped; Retry-After takes seconds or a date")
    func backoff() {
        let policy = RetryPolicy(maxAttempts: 6, baseDelay: .milliseconds(100), maxDelay: .seconds(1))
        #expect((1...5).map { policy.delay(afterAttempt: $0) } == [100, 200, 400, 800, 1000].map { .milliseconds($0) })
        #expect(policy.delay(afterAttempt: 1, retryAfter: "0.5") == .milliseconds(500))
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(RetryPolicy.seconds(retryAfter: "Wed, 21 Oct 2015 07:28:30 GMT", now: now) == 30)
        #expect(policy.shouldRetry(method: .get, attempt: 1, status: 503))
        #expect(policy.shouldRetry(method: .put, attempt: 1, status: nil))
        #expect(!policy.shouldRetry(method: .post, attempt: 1, status: 503))
        #expect(!policy.shouldRetry(method: .patch, attempt: 1, status: nil))
        #expect(!policy.shouldRetry(method: .get, attempt: 1, status: 404))
        #expect(!policy.shouldRetry(method: .get, attempt: 6, status: 503))
        #expect(!RetryPolicy.none.shouldRetry(method: .get, attempt: 1, status: 503))
    }

    @Test("filters run in order around every request, may change it and see the response")
    func filtersInOrder() async throws {
        try await withServer { server, environment in
            let log = FilterLog()
            let a = ClosureFilter { request, next in
                log.add("a>")
                let response = try await next(request)
                log.add("a< \(response.status)")
                return response
            }
            let b = ClosureFilter { request, next in
                log.add("b>")
                var request = request
                request.headers["X-Filter"] = "b"
                let response = try await next(request)
                log.add("b< \(response.status)")
                return response
            }
            let session = makeSession(environment, configuration: .init(filters: [a, b]))
            _ = server.knobs  // the controls see requests from their installation on
            let token = server.state.seededSessionTokens[0]
            session.credentials.token = token
            let task = session.launch(.get, "/user/me")
            let me = try await task.value
            #expect(log.entries == ["a>", "b>", "b< 200", "a< 200"])
            let seen = server.knobs.lastHeaders("/user/me")
            #expect(seen["x-filter"] == "b")
            #expect(seen["authorization"] == "Bearer \(token)")
            #expect(seen["x-request-id"] == "\(task.id).1")
            #expect(me.items == [server.state.userIDs[0]])
        }
    }
}
