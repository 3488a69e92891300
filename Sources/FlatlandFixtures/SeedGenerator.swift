import FlatlandJSON

/// A deterministic generator of responses shaped like the seed's API: sessions, users and
/// devices with prefixed ids, paginated slices, entities nested in entities.
///
/// The same seed and size always give the same bytes, so tests, benchmarks and the demo can
/// build their fixtures in code instead of shipping files.
///
/// ```swift
/// var generator = SeedGenerator(seed: 42)
/// let bytes = generator.document(approximateBytes: 10 << 20)  // about 10 MB
/// ```
public struct SeedGenerator: Sendable {
    private var rng: SplitMix64
    /// Users generated so far, so that friends refer to users that exist.
    public private(set) var userIDs: [String] = []
    private var userNames: [String: String] = [:]

    /// A generator whose output depends only on `seed`.
    public init(seed: UInt64 = 0x5EED) {
        rng = SplitMix64(seed: seed)
    }

    private static let firstNames = [
        "Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Margaret", "Dennis", "Radia",
        "Niklaus", "Hedy", "John", "Katherine", "Linus", "Sophie", "Tim", "Yukihiro", "Zoë", "José", "Åsa",
    ]
    private static let lastNames = [
        "Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Hamilton",
        "Ritchie", "Perlman", "Wirth", "Lamarr", "Backus", "Johnson", "Torvalds", "Wilson", "Berners-Lee",
        "Matsumoto", "Müller", "García", "Ångström",
    ]
    private static let models = ["Pixel 8", "iPhone 15", "Galaxy S24", "Fairphone 5", "iPad Air", "ThinkPad X1"]
    private static let systems = ["android", "ios", "linux", "windows"]
    private static let genders = ["female", "male", "other"]

    /// A new random id with `prefix`: `<prefix>-` and 32 URL-safe characters (190 bits).
    public mutating func id(_ prefix: String) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var bytes = Array(prefix.utf8)
        bytes.append(UInt8(ascii: "-"))
        for _ in 0..<32 { bytes.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
        return String(decoding: bytes, as: UTF8.self)
    }

    private mutating func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
    private mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(rng.next() % UInt64(range.count))
    }

    private mutating func date() -> String {
        let y = int(2015...2025)
        let mo = int(1...12)
        let d = int(1...28)
        let h = int(0...23)
        let mi = int(0...59)
        let s = int(0...59)
        let ms = int(0...999)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let milli = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(y)-\(two(mo))-\(two(d))T\(two(h)):\(two(mi)):\(two(s)).\(milli)Z"
    }

    /// Writes one device object.
    public mutating func writeDevice(_ w: inout JSONWriter, owner: String) {
        let uuid = id("d")
        w.beginObject()
        w.key("uuid")
        w.string(uuid)
        w.key("name")
        w.string("\(owner)'s \(pick(Self.models))")
        w.key("model")
        w.string(pick(Self.models))
        w.key("os")
        w.string(pick(Self.systems))
        w.key("osVersion")
        w.string("\(int(8...17)).\(int(0...9)).\(int(0...9))")
        w.key("pushToken")
        w.string(id("t"))
        w.key("lastSeen")
        w.string(date())
        w.endObject()
    }

    /// Writes one user object with nested devices and friends (friends as partial users).
    public mutating func writeUser(_ w: inout JSONWriter, friends friendCount: Int = 3, devices deviceCount: Int = 2) {
        let uuid = id("u")
        let first = pick(Self.firstNames)
        let last = pick(Self.lastNames)
        w.beginObject()
        w.key("uuid")
        w.string(uuid)
        w.key("firstname")
        w.string(first)
        w.key("lastname")
        w.string(last)
        w.key("email")
        w.string("\(first.lowercased()).\(int(1...9999))@example.com")
        w.key("age")
        w.number(int(18...90))
        w.key("gender")
        w.string(pick(Self.genders))
        w.key("verified")
        w.bool(rng.next() & 1 == 0)
        w.key("score")
        w.number(Double(int(0...100_000)) / 100)
        w.key("created")
        w.string(date())
        w.key("avatar")
        w.string("https://img.example.com/avatars/\(uuid).png")
        w.key("devices")
        w.beginArray()
        for _ in 0..<deviceCount { writeDevice(&w, owner: first) }
        w.endArray()
        w.key("friends")
        w.beginArray()
        if !userIDs.isEmpty {
            // Distinct friends, drawn from the users written so far.
            var chosen: [String] = []
            chosen.reserveCapacity(friendCount)
            for _ in 0..<(friendCount * 4) where chosen.count < min(friendCount, userIDs.count) {
                let candidate = pick(userIDs)
                if !chosen.contains(candidate) { chosen.append(candidate) }
            }
            for friend in chosen {
                w.beginObject()
                w.key("uuid")
                w.string(friend)
                w.key("firstname")
                w.string(userNames[friend] ?? "")
                w.endObject()
            }
        }
        w.endArray()
        w.endObject()
        userIDs.append(uuid)
        userNames[uuid] = first
    }

    /// A paginated slice `{"offset":…,"count":…,"total":…,"data":[users]}` of `count` users.
    public mutating func userSlice(offset: Int = 0, count: Int, total: Int? = nil) -> [UInt8] {
        var w = JSONWriter(capacity: count * 1024)
        writeUserSlice(&w, offset: offset, count: count, total: total ?? offset + count)
        return w.bytes
    }

    private mutating func writeUserSlice(_ w: inout JSONWriter, offset: Int, count: Int, total: Int) {
        w.beginObject()
        w.key("offset")
        w.number(offset)
        w.key("count")
        w.number(count)
        w.key("total")
        w.number(total)
        w.key("data")
        w.beginArray()
        for _ in 0..<count { writeUser(&w) }
        w.endArray()
        w.endObject()
    }

    /// A session response: `{"session":{…, "user":{…}, "device":{…}}, "users":{slice}}`, grown
    /// with users until it is about `approximateBytes` long.
    public mutating func document(approximateBytes: Int) -> [UInt8] {
        var w = JSONWriter(capacity: approximateBytes + 4096)
        w.beginObject()
        w.key("session")
        w.beginObject()
        w.key("uuid")
        w.string(id("s"))
        w.key("created")
        w.string(date())
        w.key("user")
        writeUser(&w, friends: 0, devices: 1)
        w.key("device")
        writeDevice(&w, owner: "me")
        w.endObject()
        w.key("users")
        // Users run about 950 bytes each; estimate the count, then fill.
        let perUser = 950
        let count = max(1, (approximateBytes - w.bytes.count) / perUser)
        writeUserSlice(&w, offset: 0, count: count, total: count)
        w.endObject()
        return w.bytes
    }
}

/// SplitMix64: a tiny, fast, well-distributed deterministic generator.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    /// A generator starting at `seed`.
    public init(seed: UInt64) { state = seed }
    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
