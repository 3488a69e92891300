import Flatland
import FlatlandFixtures
import FlatlandJSON
import Foundation
import Hummingbird
import NIOCore

/// The routes of the sample backend, over a ``SampleState``.
struct SampleAPI: Sendable {
    let state: SampleState
    let requestLog: RequestLog
    let hooks: ServerHooks
    let maxPageSize: Int
    let limits: SampleServer.Limits
    /// The `/tables` routes, once the server has opened their storage.
    let tables: TableHost

    struct Reply {
        var status: Int
        var headers: [(String, String)] = []
        var body: [UInt8] = []
    }

    struct DroppedConnection: Error {}

    func respond(to request: Request, channel: (any Channel)? = nil) async -> Response {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        let method = request.method.rawValue
        let path = request.uri.path
        requestLog.record(method: method, path: path)
        var plan = hooks.request?.arrive(method: method, path: path, headers: headers) ?? RequestPlan()
        if let hold = plan.hold, hold.afterBytes == 0 { await hold.wait() }
        var reply: Reply
        if let failure = plan.failure {
            reply = Reply(status: failure.status, body: failure.body)
            if let retryAfter = failure.retryAfter { reply.headers.append(("Retry-After", retryAfter)) }
        } else if let override = plan.override {
            reply = Reply(status: override.status, body: override.body)
        } else {
            var request = request
            let body: [UInt8]
            let tablePath = TableHost.isTablePath(path)
            let maxBody = tablePath ? tables.maxBodyBytes : 1 << 20
            do {
                body = Array(try await request.collectBody(upTo: maxBody).readableBytesView)
            } catch {
                let message = "the body is larger than \(maxBody) bytes"
                return makeResponse(tablePath ? TableAPI.error(413, message) : Self.error(413, message), plan: plan)
            }
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            if tablePath,
                let answer = await tables.respond(
                    method: method, path: path, query: query, rawQuery: request.uri.query, headers: headers, body: body,
                    authenticate: { caller($0) })
            {
                if answer.loseResponse, let channel {
                    // An injected lost response: served, and closed without a word.
                    try? await channel.close()
                    return Response(status: .ok)
                }
                reply = answer.reply
                if let cut = answer.dropAfter { plan.dropAfter = cut }
            } else {
                reply = route(method: method, path: path, query: query, headers: headers, body: body)
            }
        }
        return makeResponse(reply, plan: plan)
    }

    private func makeResponse(_ reply: Reply, plan: RequestPlan) -> Response {
        var fields = HTTPFields()
        if !reply.body.isEmpty { fields[.contentType] = "application/json" }
        for (name, value) in reply.headers {
            switch name {
            case "ETag": fields[.eTag] = value
            case "Retry-After": fields[.retryAfter] = value
            default: if let field = HTTPFields.Element.Name(name) { fields[field] = value }
            }
        }
        let status = HTTPResponse.Status(code: reply.status)
        let body = reply.body
        let streamed = plan.chunkSize != nil || (plan.hold?.afterBytes ?? 0) > 0 || plan.dropAfter != nil
        guard streamed, !body.isEmpty else {
            var buffer = ByteBuffer(bytes: body)
            guard buffer.readableBytes > SampleServer.responseChunkBytes else {
                return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: buffer))
            }
            // A large body in pieces: each waits until the client has taken enough of the ones
            // before (the channel's back-pressure), so the connection's clock sees the response
            // move as the client reads it, and a client that stops reading holds no more.
            var pieces: [ByteBuffer] = []
            while buffer.readableBytes > 0 {
                pieces.append(buffer.readSlice(length: min(buffer.readableBytes, SampleServer.responseChunkBytes))!)
            }
            return Response(status: status, headers: fields, body: ResponseBody(contentsOf: pieces))
        }
        let chunk = max(1, plan.chunkSize ?? 16 << 10)
        let pause = plan.chunkPause
        let hold = plan.hold.flatMap { $0.afterBytes > 0 ? $0 : nil }
        let drop = plan.dropAfter
        return Response(
            status: status, headers: fields,
            body: ResponseBody { writer in
                var offset = 0
                var held = false
                while offset < body.count {
                    var limit = min(body.count, offset + chunk)
                    if let drop, drop > offset, drop < limit { limit = drop }
                    if let hold, !held, hold.afterBytes > offset, hold.afterBytes < limit { limit = hold.afterBytes }
                    try await writer.write(ByteBuffer(bytes: body[offset..<limit]))
                    offset = limit
                    if let drop, offset >= drop { throw DroppedConnection() }
                    if let hold, !held, offset >= hold.afterBytes {
                        held = true
                        await hold.wait()
                    }
                    if pause > .zero { try await Task.sleep(for: pause) }
                }
                try await writer.finish(nil)
            })
    }

    // MARK: Routing

    /// Who sent a request, from its `Authorization: Bearer <token>` header.
    enum Caller: Equatable {
        /// No `Authorization` header.
        case anonymous
        /// A header that is not a bearer token, or a token the server does not know (or no
        /// longer knows: expired, or its user deleted).
        case invalid
        /// A registration not confirmed yet (`PUT /session`): the user it made.
        case pending(String)
        /// A confirmed session: its user.
        case user(String)

        /// The user whose private fields the caller may see: only a confirmed session's.
        var viewer: String? {
            if case .user(let id) = self { return id }
            return nil
        }
    }

    /// Fields shown only to their owner (the user themselves; a device's owner).
    static let privateUserFields: Set<String> = ["email"]
    static let privateDeviceFields: Set<String> = ["pushToken"]

    private func route(
        method: String, path: String, query: [String: String], headers: [String: String],
        body: [UInt8]
    ) -> Reply {
        let parts = path.split(separator: "/").map(String.init)
        let fields = query["fields"].map { $0.split(separator: ",").map(String.init).filter { $0 != "uuid" } }
        let authorization = headers["authorization"]
        let token = authorization.flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let page = (offset: query["offset"].flatMap { Int($0) } ?? 0, count: query["count"].flatMap { Int($0) } ?? 20)
        guard page.offset >= 0, page.count >= 0 else { return Self.error(400, "offset and count must be positive") }
        var route = "/" + parts.joined(separator: "/")
        var id = ""
        if parts.count == 2, parts[0] == "users" || parts[0] == "devices" {
            id = parts[1]
            route = "/\(parts[0])/{id}"
            if route == "/users/{id}" && id == "me" { route = "/user/me" }
        }
        let caller: Caller = authorization == nil ? .anonymous : self.caller(token)
        switch (method, route) {
        case ("POST", "/session"):
            return register(body)
        case ("PUT", "/session"):
            return confirm(token: token)
        case ("GET", "/user/me"):
            return asOwner(caller) { me in user(me, fields: fields, viewer: me) }
        case ("PATCH", "/user/me"):
            return asOwner(caller) { me in patch(me, body: body, ifMatch: headers["if-match"]) }
        case ("GET", "/user/me/devices"):
            return asOwner(caller) { me in
                let owner = state.tables.withLockedValue { $0.owner }
                let listed = state.store.entity(EntityID<SeedUser>(me))?.devices.map(\.rawValue) ?? []
                let devices = listed.filter { owner[$0] == me }
                return slice(devices, page: page, fields: fields) { writeDevice(&$0, $1, $2, viewer: me) }
            }
        case ("GET", "/devices"):
            return asViewer(caller) { viewer in
                slice(state.deviceIDs, page: page, fields: fields) { writeDevice(&$0, $1, $2, viewer: viewer) }
            }
        case ("GET", "/users"):
            return asViewer(caller) { viewer in
                slice(state.userIDs, page: page, fields: fields) { writeUser(&$0, $1, $2, viewer: viewer) }
            }
        case ("GET", "/users/{id}"):
            return asViewer(caller) { viewer in user(id, fields: fields, viewer: viewer) }
        case ("PATCH", "/users/{id}"):
            return asOwner(caller, of: id) { _ in patch(id, body: body, ifMatch: headers["if-match"]) }
        case ("DELETE", "/users/{id}"):
            return asOwner(caller, of: id) { _ in delete(id) }
        case ("GET", "/devices/{id}"):
            return asViewer(caller) { viewer in
                guard state.store.contains(EntityID<SeedDevice>(id)) else { return Self.error(404, "no device \(id)") }
                return entity(id) { writeDevice(&$0, $1, fields, viewer: viewer) }
            }
        case (_, "/session"), (_, "/user/me"), (_, "/user/me/devices"), (_, "/devices"), (_, "/users"),
            (_, "/users/{id}"), (_, "/devices/{id}"):
            return Self.error(405, "\(method) is not allowed on \(path)")
        default:
            return Self.error(404, "no route for \(path)")
        }
    }

    // MARK: Authorization

    private func caller(_ token: String?) -> Caller {
        guard let token else { return .invalid }
        let now = ContinuousClock.now
        return state.tables.withLockedValue { t in
            guard let session = t.sessions[token] else { return .invalid }
            if session.confirmed { return .user(session.user) }
            if expired(session, now: now) {
                expire(token, in: &t)
                return .invalid
            }
            return .pending(session.user)
        }
    }

    /// A route for one user only: the session's (`of: nil`), or the user `of` (401 with no or
    /// an unknown token, 403 for an unconfirmed session or another user's).
    private func asOwner(_ caller: Caller, of id: String? = nil, _ body: (String) -> Reply) -> Reply {
        switch caller {
        case .anonymous, .invalid:
            return Self.error(401, "a valid session token is required (Authorization: Bearer …)")
        case .pending:
            return Self.error(403, "the session is not confirmed yet (PUT /session)")
        case .user(let me):
            if let id, id != me { return Self.error(403, "only \(id) may change \(id)") }
            return body(me)
        }
    }

    /// A public route: anyone may read it; a bad token is still refused (401) so that a client
    /// learns its token is bad. `body` gets the user whose private fields may be shown.
    private func asViewer(_ caller: Caller, _ body: (String?) -> Reply) -> Reply {
        if caller == .invalid { return Self.error(401, "unknown session token") }
        return body(caller.viewer)
    }

    // MARK: Sessions

    private func expired(_ session: SampleState.SessionInfo, now: ContinuousClock.Instant) -> Bool {
        !session.confirmed && now - session.created >= limits.pendingSessionLifetime
    }

    /// Removes an unconfirmed registration: its token, session, user and device.
    private func expire(_ token: String, in t: inout SampleState.Tables) {
        t.pending.remove(token)
        guard let session = t.sessions.removeValue(forKey: token) else { return }
        _ = try? state.store.remove([session.id, session.user, session.device])
        for id in [session.id, session.user, session.device] { t.versions[id] = nil }
        t.owner[session.device] = nil
        // Registrations are appended: the newest are at the end.
        if let index = t.users.lastIndex(of: session.user) { t.users.remove(at: index) }
        if let index = t.devices.lastIndex(of: session.device) { t.devices.remove(at: index) }
    }

    /// Reserves a place for a registration with `token` among the pending ones (expired ones
    /// go first); false when the others fill the bound.
    private func reserve(_ token: String) -> Bool {
        let now = ContinuousClock.now
        return state.tables.withLockedValue { t in
            // A token without a session is another registration's reservation: it stays.
            for token in t.pending where t.sessions[token].map({ expired($0, now: now) }) ?? false {
                expire(token, in: &t)
            }
            guard t.pending.count < limits.maxPendingSessions else { return false }
            t.pending.insert(token)
            return true
        }
    }

    private func register(_ body: [UInt8]) -> Reply {
        guard case .object(let object)? = try? JSONValue(parsing: body) else {
            return Self.error(400, "the body must be a JSON object")
        }
        guard let email = object["email"]?.stringValue, email.contains("@") else {
            return Self.error(400, "email is required", field: "email")
        }
        var rng = SecureRandom()
        let token = EntityIDFormat.generate(prefix: "tok", using: &rng)
        guard reserve(token) else {
            var reply = Self.error(503, "too many registrations wait for their confirmation; try again later")
            reply.headers.append(("Retry-After", "\(max(1, limits.pendingSessionLifetime.components.seconds))"))
            return reply
        }
        let userID = EntityIDFormat.generate(prefix: "u", using: &rng)
        let deviceID = EntityIDFormat.generate(prefix: "d", using: &rng)
        let sessionID = EntityIDFormat.generate(prefix: "s", using: &rng)
        let now = Self.timestamp(Date())
        var w = JSONWriter()
        w.beginArray()
        w.beginObject()
        w.key("uuid")
        w.string(userID)
        w.key("email")
        w.string(email)
        w.key("firstname")
        w.string(object["firstname"]?.stringValue ?? "")
        w.key("lastname")
        w.string(object["lastname"]?.stringValue ?? "")
        w.key("created")
        w.string(now)
        w.key("devices")
        w.beginArray()
        w.string(deviceID)
        w.endArray()
        w.endObject()
        w.beginObject()
        w.key("uuid")
        w.string(deviceID)
        for key in ["name", "model", "os", "osVersion", "pushToken"] {
            w.key(key)
            w.string(object["device"]?[key]?.stringValue ?? "")
        }
        w.key("lastSeen")
        w.string(now)
        w.endObject()
        w.beginObject()
        w.key("uuid")
        w.string(sessionID)
        w.key("created")
        w.string(now)
        w.key("user")
        w.string(userID)
        w.key("device")
        w.string(deviceID)
        w.endObject()
        w.endArray()
        do {
            try state.store.ingest(w.bytes)
        } catch {
            state.tables.withLockedValue { _ = $0.pending.remove(token) }
            return Self.error(400, "the registration could not be stored: \(error)")
        }
        state.tables.withLockedValue { t in
            t.users.append(userID)
            t.devices.append(deviceID)
            t.owner[deviceID] = userID
            for id in [userID, deviceID, sessionID] { t.versions[id] = 1 }
            t.sessions[token] = SampleState.SessionInfo(
                id: sessionID, user: userID, device: deviceID, confirmed: false)
        }
        return sessionReply(token: token, status: 201)
    }

    private func confirm(token: String?) -> Reply {
        let now = ContinuousClock.now
        guard let token,
            state.tables.withLockedValue({ t -> Bool in
                guard let session = t.sessions[token] else { return false }
                if expired(session, now: now) {
                    expire(token, in: &t)
                    return false
                }
                t.sessions[token]?.confirmed = true
                t.pending.remove(token)
                return true
            })
        else { return Self.error(401, "unknown or expired session token") }
        return sessionReply(token: token, status: 200)
    }

    /// `{"uuid":"s-…","token":"…","confirmed":…,"created":…,"user":{…},"device":{…}}`
    private func sessionReply(token: String, status: Int) -> Reply {
        guard let info = state.tables.withLockedValue({ $0.sessions[token] }),
            let session = state.store.entity(EntityID<SeedSession>(info.id))
        else { return Self.error(500, "the session vanished") }
        var w = JSONWriter()
        w.beginObject()
        w.key("uuid")
        w.string(info.id)
        w.key("token")
        w.string(token)
        w.key("confirmed")
        w.bool(info.confirmed)
        w.key("created")
        w.string(session.created.map(Self.timestamp) ?? "")
        w.key("user")
        writeUser(&w, info.user, nil, viewer: info.user)
        w.key("device")
        writeDevice(&w, info.device, nil, viewer: info.user)
        w.endObject()
        return Reply(status: status, headers: etag(info.id), body: w.bytes)
    }

    // MARK: Entities

    /// The fields of a `T` that `viewer` may see out of `fields` (nil: all of them): every field
    /// but the private ones, unless `viewer` owns the entity.
    private func visible<T: Entity>(
        _: T.Type, _ fields: [String]?, owner: String?, viewer: String?, private hidden: Set<String>
    ) -> [String]? {
        if let viewer, viewer == owner { return fields }
        return (fields ?? T.fields.map(\.key)).filter { !hidden.contains($0) }
    }

    private func writeUser(_ w: inout JSONWriter, _ id: String, _ fields: [String]?, viewer: String?) {
        if let user = state.store.entity(EntityID<SeedUser>(id)) {
            let shown = visible(SeedUser.self, fields, owner: id, viewer: viewer, private: Self.privateUserFields)
            user.writeJSON(to: &w, only: shown)
        } else {
            w.null()
        }
    }

    private func writeDevice(_ w: inout JSONWriter, _ id: String, _ fields: [String]?, viewer: String?) {
        if let device = state.store.entity(EntityID<SeedDevice>(id)) {
            let owner = viewer == nil ? nil : state.tables.withLockedValue { $0.owner[id] }
            let shown = visible(
                SeedDevice.self, fields, owner: owner, viewer: viewer, private: Self.privateDeviceFields)
            device.writeJSON(to: &w, only: shown)
        } else {
            w.null()
        }
    }

    private func etag(_ id: String) -> [(String, String)] {
        [("ETag", "\"\(state.version(of: id) ?? 1)\"")]
    }

    private func entity(_ id: String, write: (inout JSONWriter, String) -> Void) -> Reply {
        var w = JSONWriter()
        write(&w, id)
        return Reply(status: 200, headers: etag(id), body: w.bytes)
    }

    private func user(_ id: String, fields: [String]?, viewer: String?) -> Reply {
        guard state.store.contains(EntityID<SeedUser>(id)) else { return Self.error(404, "no user \(id)") }
        return entity(id) { writeUser(&$0, $1, fields, viewer: viewer) }
    }

    private func slice(
        _ ids: [String], page: (offset: Int, count: Int), fields: [String]?,
        write: (inout JSONWriter, String, [String]?) -> Void
    ) -> Reply {
        let start = min(page.offset, ids.count)
        let end = min(ids.count, start + min(page.count, maxPageSize))
        var w = JSONWriter(capacity: (end - start) * 512 + 64)
        w.beginObject()
        w.key("offset")
        w.number(page.offset)
        w.key("count")
        w.number(end - start)
        w.key("total")
        w.number(ids.count)
        w.key("data")
        w.beginArray()
        for id in ids[start..<end] { write(&w, id, fields) }
        w.endArray()
        w.endObject()
        return Reply(status: 200, body: w.bytes)
    }

    private func patch(_ id: String, body: [UInt8], ifMatch: String?) -> Reply {
        guard state.store.contains(EntityID<SeedUser>(id)) else { return Self.error(404, "no user \(id)") }
        if let ifMatch, ifMatch != "*", ifMatch != etag(id)[0].1 {
            return Self.error(412, "the user changed: If-Match \(ifMatch) is not \(etag(id)[0].1)")
        }
        guard case .object(let object)? = try? JSONValue(parsing: body) else {
            return Self.error(400, "the body must be a JSON object")
        }
        if let uuid = object["uuid"], uuid.stringValue != id {
            return Self.error(400, "uuid does not match", field: "uuid")
        }
        let known = Set(SeedUser.fields.map(\.key))
        if let unknown = object.keys.first(where: { $0 != "uuid" && !known.contains($0) }) {
            return Self.error(400, "unknown field \(unknown)", field: unknown)
        }
        // A user lists only devices they own: attaching another user's device is refused whole.
        if case .array(let devices)? = object["devices"] {
            let owner = state.tables.withLockedValue { $0.owner }
            if let foreign = devices.first(where: { $0.stringValue.map { owner[$0] != id } ?? false }) {
                return Self.error(403, "the device \(foreign.stringValue ?? "") is not one of yours", field: "devices")
            }
        }
        var w = JSONWriter()
        w.beginObject()
        w.key("uuid")
        w.string(id)
        for (key, value) in object where key != "uuid" {
            w.key(key)
            w.value(value)
        }
        w.endObject()
        do {
            try state.store.ingest(w.bytes)
        } catch {
            return Self.error(400, "the update is not valid: \(error)", field: error.path)
        }
        state.tables.withLockedValue { $0.versions[id, default: 1] += 1 }
        return entity(id) { writeUser(&$0, $1, nil, viewer: id) }
    }

    private func delete(_ id: String) -> Reply {
        guard state.store.contains(EntityID<SeedUser>(id)) else { return Self.error(404, "no user \(id)") }
        _ = try? state.store.remove([id])
        state.tables.withLockedValue { t in
            t.users.removeAll { $0 == id }
            t.versions[id] = nil
            for (token, session) in t.sessions where session.user == id {
                t.sessions[token] = nil
                t.pending.remove(token)
            }
        }
        return Reply(status: 204)
    }

    // MARK: Helpers

    /// `{"error":{"code":404,"message":"…","field":"…"}}`
    static func error(_ status: Int, _ message: String, field: String? = nil) -> Reply {
        var w = JSONWriter()
        w.beginObject()
        w.key("error")
        w.beginObject()
        w.key("code")
        w.number(status)
        w.key("message")
        w.string(message)
        if let field {
            w.key("field")
            w.string(field)
        }
        w.endObject()
        w.endObject()
        return Reply(status: status, body: w.bytes)
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
