import FlatlandJSON

// Keys and paths: the current keys of the frames, as bytes or text, and the JSON path they make.
extension Ingestor {
    /// Object frame `t`'s current key as text, made from its bytes the first time.
    func objectKey(_ t: Int) -> String? {
        if frames[t].keyPending {
            frames[t].key = pendingKey.string
            frames[t].keyPending = false
        }
        return frames[t].key
    }

    /// Whether object frame `t`'s current key is `name`.
    func keyEquals(_ t: Int, _ name: StaticString) -> Bool {
        if frames[t].keyPending { return pendingKey.equals(name) }
        guard let key = frames[t].key else { return false }
        return key == name.description
    }

    func currentKey(_ t: Int) -> String? {
        if frames[t].keyPending { return pendingKey.string }
        if frames[t].kind == .entity {
            switch frames[t].member {
            case .field(let field):
                if let type = frames[t].draft?.type { return type.fieldKeys[Int(field)] }
            case .skipped:
                if frames[t].key == nil { return unknownKey.string }
            case .id, .untyped:
                break
            }
        }
        return frames[t].key
    }

    /// The key a child of entity frame `t` sits under, kept on the frame for paths.
    func childKey(_ t: Int) -> String? {
        let key = currentKey(t)
        if frames[t].member == .skipped { frames[t].key = key }
        return key
    }

    /// The JSON path of the value being read in frame `last`: `$.data[3].age`.
    func path(through last: Int) -> String {
        var path = "$"
        guard last >= 0 else { return path }
        for i in 0...last {
            switch frames[i].kind {
            case .array:
                path += "[\(frames[i].index)]"
            default:
                if let key = currentKey(i) { path += "." + key }
            }
        }
        return path
    }
}
