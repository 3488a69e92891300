@_spi(FlatlandInternal) import FlatlandJSON

// Fields: an entity's members decoded into its draft.
extension Ingestor {
    @inline(__always)
    func isIDKey(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let idKey else { return false }
        return idKey.withUnsafeBytes { JSONBytes(unsafeBuffer: key).equals($0) }
    }

    func entityKey(_ t: Int, _ key: UnsafeRawBufferPointer) {
        // The usual key: the next declared field of a typed entity, where no version key is
        // looked for and the key is not the id's.
        var hint = frames[t].lastField &+ 1
        if !looksForVersionKeys, let type = frames[t].type {
            // (A type may declare a field under the id's key: the id wins, below.)
            if type.with({ $0.isField(hint, named: key) }),
                key.count != idKeyLength || !isIDKey(key)
            {
                frames[t].member = .field(Int32(truncatingIfNeeded: hint))
                frames[t].lastField = hint
                return
            }
            hint = .max  // tried: the table is next
        }
        // The type's own version key wins over the one in the options. (`type` is the draft's
        // type, unretained.)
        if !looksForVersionKeys {
            frames[t].isVersion = false
        } else if let own = frames[t].type?.with({ $0.dataVersionKeyBytes }) {
            frames[t].isVersion = own.withUnsafeBytes { JSONBytes(unsafeBuffer: key).equals($0) }
        } else if let versionKey {
            frames[t].isVersion = versionKey.withUnsafeBytes { JSONBytes(unsafeBuffer: key).equals($0) }
        } else {
            frames[t].isVersion = false
        }
        if key.count == idKeyLength, isIDKey(key) {
            frames[t].member = .id
        } else if let type = frames[t].type {
            if let i = type.with({ $0.fieldIndex(JSONBytes(unsafeBuffer: key), hint: hint) }) {
                frames[t].member = .field(Int32(truncatingIfNeeded: i))
                frames[t].lastField = i
            } else {
                frames[t].member = .skipped
                if frames[t].key != nil { frames[t].key = nil }
                unknownKey.set(key)
            }
        } else {
            frames[t].member = .untyped
            frames[t].key = String(parsedUTF8: key)
        }
    }

    func entityScalar(_ t: Int, _ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer) throws {
        if frames[t].failed { return }
        if frames[t].isVersion, kind == .number {
            frames[t].draft?.dataVersion = try? JSONNumberText(unsafeBuffer: bytes).double()
        }
        if frames[t].member.isDecoded { try deliverScalar(kind, bytes, to: t) }
    }

    /// A recorded field value is complete: decode it into its entity and drop it from the tape.
    func fieldValueEnded(from mark: EventTape.Mark, entity p: Int) throws {
        let result: Result<Void, IngestError>
        do throws(FieldError) {
            try tape.withReader(from: mark, to: tape.tokenCount) { (reader) throws(FieldError) in
                try decodeField(&reader, into: p)
            }
            result = .success(())
        } catch {
            result = fieldFailed(error, frame: p)
        }
        tape.truncate(to: mark)
        try result.get()
    }

    /// Decodes one scalar (or reference) into the current field of entity frame `e`, through a
    /// one-token reader that needs no allocation and no closure.
    func deliverScalar(_ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer, to e: Int) throws {
        scalarToken.pointee = TapeToken(kind: kind, start: 0, length: Int32(truncatingIfNeeded: bytes.count))
        var reader = FieldReader(tokens: UnsafeBufferPointer(start: scalarToken, count: 1), storage: bytes)
        try deliver(&reader, to: e)
    }

    /// Decodes a nested entity's id into the current field of entity frame `e`: an id field
    /// shares the string.
    func deliverReference(_ id: String, to e: Int) throws {
        var text = id
        try withUnsafePointer(to: id) { shared in
            try text.withUTF8 { utf8 in
                scalarToken.pointee = TapeToken(
                    kind: .reference, start: 0, length: Int32(truncatingIfNeeded: utf8.count), reference: 0)
                var reader = FieldReader(
                    tokens: UnsafeBufferPointer(start: scalarToken, count: 1), storage: UnsafeRawBufferPointer(utf8),
                    references: UnsafeBufferPointer(start: shared, count: 1))
                try deliver(&reader, to: e)
            }
        }
    }

    /// Decodes the current field of entity frame `e` from `reader`.
    func deliver(_ reader: inout FieldReader, to e: Int) throws {
        do throws(FieldError) {
            try decodeField(&reader, into: e)
        } catch {
            try fieldFailed(error, frame: e).get()
        }
    }

    func decodeField(_ reader: inout FieldReader, into e: Int) throws(FieldError) {
        guard !frames[e].failed, frames[e].draft != nil else { return }
        switch frames[e].member {
        case .field(let index):
            guard let type = frames[e].type else { return }
            let field = Int(index)
            // A draft decoded into again may change what its indexes read after the batch read it.
            if frames[e].reused, type.with({ $0.fieldsReadByIndexes.contains(field) }) {
                batch.indexedValuesWillChange(frames[e].draft.unsafelyUnwrapped)
            }
            // The frame keeps the draft alive, the registry its type: no retain and release
            // around every value.
            var failure: FieldError?
            Unretained(frames[e].draft.unsafelyUnwrapped).with { draft in
                type.with { type in
                    do throws(FieldError) {
                        try draft.decode(field: field, from: &reader, type: type)
                    } catch { failure = error }
                }
            }
            if let failure { throw failure }
        case .untyped:
            guard let draft = frames[e].draft, let key = frames[e].key else { return }
            try draft.append(member: key, from: &reader)
        case .skipped, .id:
            break
        }
    }

    func fieldFailed(_ error: FieldError, frame e: Int) -> Result<Void, IngestError> {
        let error = IngestError(
            code: .decoding, message: error.message, path: path(through: e) + error.relativePath)
        switch options.badEntity {
        case .failResponse:
            return .failure(error)
        case .skipAndReport:
            frames[e].failed = true
            skipped.append(error)
            return .success(())
        }
    }
}
