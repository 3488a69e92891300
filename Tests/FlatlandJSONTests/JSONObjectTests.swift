import FlatlandJSON
import Testing

/// `JSONObject` keeps its members in order, duplicates included; lookup returns the last member
/// with a key, setting replaces that one or appends, setting nil removes them all. Changes by
/// key took a linear search each (100,000 keys: 9.2 s to ingest; 1,000,000: over a minute).
@Suite struct JSONObjectTests {
    @Test(.timeLimit(.minutes(1)))
    func twoHundredThousandKeysAreSetInLinearTime() {
        let n = 200_000
        let keys = (0..<n).map { "k\($0)" }
        var object = JSONObject()
        for (i, key) in keys.enumerated() { object[key] = .number(JSONNumber(Int64(i))) }
        // Replace every tenth, in place.
        for i in stride(from: 0, to: n, by: 10) { object[keys[i]] = .string("r\(i)") }
        #expect(object.count == n)
        #expect(object.members.first?.key == "k0" && object.members.last?.key == "k\(n - 1)")
        #expect(object["k0"] == .string("r0"))
        #expect(object["k199999"] == .number(JSONNumber(Int64(199_999))))
        #expect(object["k123450"] == .string("r123450"))
        #expect(object["missing"] == nil)
        #expect(object.keys == keys)
    }

    /// The documented rules, on objects below and above the size at which an index is kept.
    @Test(arguments: [3, 40])
    func duplicatesFollowTheDocumentedRules(_ size: Int) throws {
        var text = "{" + (0..<size).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        text += #","dup":"first","k1":"again","dup":"second"}"#
        guard case .object(var object) = try JSONValue(parsing: text) else {
            Issue.record("not an object")
            return
        }
        #expect(object.count == size + 3)
        #expect(object["dup"] == "second")
        #expect(object["k1"] == "again")
        object["dup"] = "third"
        #expect(object.members.filter { $0.key == "dup" }.map(\.value) == ["first", "third"])
        #expect(object.members[size + 2].value == "third")
        object["k1"] = 100
        #expect(object.members[1].value == 1)
        #expect(object.members[size + 1].value == 100)
        object["new"] = true
        #expect(object.members.last?.key == "new")
        #expect(object["new"] == true)
        object["dup"] = nil
        #expect(!object.keys.contains("dup"))
        #expect(object["dup"] == nil)
        #expect(object["new"] == true)
        object["k0"] = "zero"
        #expect(object.members[0].value == "zero")
        #expect(object.count == size + 2)
    }

    /// Every operation, at random, against a plain list of members searched the way the
    /// documentation says: both must agree after each step.
    @Test(arguments: [1, 2, 3])
    func randomOperationsAgreeWithALinearModel(_ seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var object = JSONObject()
        var model: [(key: String, value: JSONValue)] = []
        for step in 0..<3000 {
            let key = "k\(Int.random(in: 0..<60, using: &rng))"
            let value = JSONValue.number(JSONNumber(Int64(step)))
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<55:
                object[key] = value
                if let i = model.lastIndex(where: { $0.key == key }) {
                    model[i].value = value
                } else {
                    model.append((key, value))
                }
            case 55..<62:
                object[key] = nil
                model.removeAll { $0.key == key }
            case 62..<72:
                // A duplicate appended directly, as a parser does.
                object.members.append((key, value))
                model.append((key, value))
            case 72..<75:
                object.members.reverse()
                model.reverse()
            case 75..<77:
                if !model.isEmpty {
                    let i = Int.random(in: 0..<model.count, using: &rng)
                    object.members.remove(at: i)
                    model.remove(at: i)
                }
            case 77..<80:
                let copy = object
                object[key] = .string("changed")
                #expect(copy.members.map(\.key) == model.map(\.key))
                #expect(copy[key] == model.last { $0.key == key }?.value)
                if let i = model.lastIndex(where: { $0.key == key }) {
                    model[i].value = .string("changed")
                } else {
                    model.append((key, .string("changed")))
                }
            default:
                break
            }
            #expect(object[key] == model.last { $0.key == key }?.value, "step \(step)")
            #expect(object.count == model.count)
        }
        #expect(object.members.map(\.key) == model.map(\.key))
        #expect(object.members.map(\.value) == model.map(\.value))
        #expect(object == JSONObject(model))
        #expect(object.hashValue == JSONObject(model).hashValue)
    }
}
