import FlatlandJSON

// Pages: the envelope's paging members, checked as they arrive, and the page they make.
extension Ingestor {
    /// The paging member that object frame `t`'s current key names, if any: most keys are
    /// ruled out by their length.
    @inline(__always)
    func pagingMember(_ t: Int) -> PagingMember? {
        if frames[t].keyPending {
            let key = pendingKey.bytes
            guard pagingKeyLengths & (1 << UInt64(min(key.count, 63))) != 0 else { return nil }
            return pagingMember(named: key)
        }
        guard var key = frames[t].key else { return nil }
        return key.withUTF8 { utf8 in pagingMember(named: UnsafeRawBufferPointer(utf8)) }
    }

    private func pagingMember(named key: UnsafeRawBufferPointer) -> PagingMember? {
        for candidate in pagingKeys where candidate.name.withUnsafeBytes({ JSONBytes(unsafeBuffer: key).equals($0) }) {
            return candidate.member
        }
        return nil
    }

    /// A value of paging member `member` in object frame `t` (`bytes` nil for an object or an
    /// array): a non-negative integer or null for a number member, a string or null for the
    /// next link. A malformed one fails the ingest at once in an object known to be a page, or
    /// when that object ends if it turns out to be one.
    func pagingValue(_ t: Int, _ member: PagingMember, _ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer?)
        throws
    {
        if kind == .null { return }
        var members = frames[t].page ?? PageMembers()
        defer { frames[t].page = members }
        if member == .nextLink {
            guard kind == .string, let bytes else {
                return try malformed(t, &members, "the next link is \(kind.article), not a string")
            }
            members.nextLink = String(parsedUTF8: bytes)
            return
        }
        guard kind == .number, let bytes else {
            return try malformed(t, &members, "\(kind.article), not a non-negative integer")
        }
        let text = JSONNumberText(unsafeBuffer: bytes)
        guard let value = try? text.int64(), value >= 0, let int = Int(exactly: value) else {
            return try malformed(t, &members, "\(String(decoding: bytes, as: UTF8.self)), not a non-negative integer")
        }
        switch member {
        case .offset: members.offset = int
        case .count: members.count = int
        case .total: members.total = int
        case .nextLink: break
        }
    }

    private func malformed(_ t: Int, _ members: inout PageMembers, _ what: String) throws {
        let key = currentKey(t) ?? ""
        let error = IngestError(
            code: .paging, message: "the paging member \"\(key)\" is \(what)", path: path(through: t))
        // Known to be a page (a container, not an object that may still turn out an entity, with
        // its items or at the root of a declared envelope): the error is located at the value.
        if !frames[t].undecided, frames[t].sliceItems != nil || (t == 0 && rootIsPage) { throw error }
        if members.malformed == nil { members.malformed = MalformedPaging(error) }
    }

    /// A page's items array and its object ended: the page goes to the batch.
    func pageEnded(items: [(index: Int, id: String?)], count: Int, members: PageMembers?) throws {
        if let malformed = members?.malformed { throw malformed.error }
        let offset = members?.offset ?? requestStart ?? 0
        if offset > options.maxCollectionLength - count {
            throw IngestError(
                code: .limit,
                message:
                    "a page of \(count) items at offset \(offset) goes past the \(options.maxCollectionLength) positions an endpoint's collection may have",
                path: path(through: frames.count - 1))
        }
        offerSlice(
            PendingBatch.Slice(
                offset: offset, total: members?.total ?? pageContext.total, items: items, count: count,
                nextLink: members?.nextLink ?? pageContext.nextLink))
    }
}

extension FieldToken.Kind {
    /// The kind of value, for messages: "a string", "an object".
    var article: String {
        switch self {
        case .string: "a string"
        case .number: "a number"
        case .true, .false: "a boolean"
        case .null: "null"
        case .beginArray, .endArray: "an array"
        case .beginObject, .endObject, .reference: "an object"
        case .key: "a key"
        }
    }
}
