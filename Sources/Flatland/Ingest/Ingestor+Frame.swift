@_spi(FlatlandInternal) import FlatlandJSON

extension Ingestor {
    enum Kind: UInt8 { case object, array, entity }

    /// What the parent does with a frame's result.
    enum Role: UInt8 {
        /// The document's root value, a member of a container, or an element of an array.
        case member
        /// An element of a page's items array (``Envelope/items``).
        case sliceElement
        /// The value of an entity's field: delivered to the entity.
        case field
    }

    /// What an entity frame's current member is.
    enum Member: Equatable {
        /// Nothing to decode: a key the entity's type does not declare (its bytes in the
        /// ingestor's `unknownKey`, or its text in the frame's `key`), or no member yet.
        case skipped
        /// The id member.
        case id
        /// A declared field of a typed entity, by index.
        case field(Int32)
        /// A member of an untyped entity, whose key is the frame's `key`.
        case untyped

        /// Whether the member's value is decoded into the draft.
        @inline(__always)
        var isDecoded: Bool {
            switch self {
            case .field, .untyped: true
            case .skipped, .id: false
            }
        }
    }

    /// The paging members an object outside entities carried (see ``Envelope``).
    struct PageMembers {
        var offset: Int?
        var count: Int?
        var total: Int?
        var nextLink: String?
        /// A paging member with a value that is not a non-negative integer (or not a string, for
        /// the next link): the error, thrown if the object turns out to be a page. (Boxed: the
        /// frames stay small, and an error is rare.)
        var malformed: MalformedPaging?
    }

    final class MalformedPaging {
        let error: IngestError
        init(_ error: IngestError) { self.error = error }
    }

    struct Frame: ReusableFrame {
        var kind: Kind
        var role: Role
        /// Inside an entity, or inside an object whose identity is not known yet.
        var nested: Bool
        /// Whether this frame's events go on the tape.
        var records: Bool
        /// Objects: identity not known yet.
        var undecided = false
        /// Inside an entity (not only inside an undecided object).
        var inEntity: Bool
        var parentKey: String?
        /// The current member's key, where it has to be known as text.
        var key: String?
        /// Objects: the current member's key is still only bytes, in the ingestor's `pendingKey`
        /// (only the innermost frame's can be: a child's frame makes it text first).
        var keyPending = false
        /// Arrays: the current element's index. Objects: the number of elements of the page's
        /// items array, once it has ended.
        var index = 0
        /// Where this frame's own tokens start on the tape.
        var mark = EventTape.Mark(tokens: 0, bytes: 0)
        /// Undecided objects: which identity key's value comes next, if any.
        var identityKey: Int32?
        var firstIDValue: String?
        var otherIDValues: [String?] = []
        /// Undecided objects: the first rule of the ingest's ``RuleResolver`` that the object's
        /// position allows (nil for none, or not a rule resolver).
        var firstRule: Int32?
        /// Undecided objects: entities that end up top-level if this object is a container.
        var provisionalItems: [RecordKey] = []
        var provisionalSlice: PendingBatch.Slice?
        /// Entity frames.
        var draft: EntityBox?
        /// Entity frames: the draft's type, unretained (the registry keeps every type alive).
        var type: Unretained<EntityType>?
        /// The draft is one the batch already holds for this id, decoded into again.
        var reused = false
        /// Entity frames: what the current member is.
        var member = Member.skipped
        /// Entity frames: the index of the last declared field met, -1 before the first (the
        /// field after it is likely the next one).
        var lastField = -1
        var isVersion = false
        var failed = false
        /// Objects: the paging members seen, if any.
        var page: PageMembers?
        var sliceItems: [(index: Int, id: String?)]?
        /// Arrays: whether this is a page's items array.
        var isSliceData = false

        private init() {
            kind = .object
            role = .member
            nested = false
            inEntity = false
            records = false
        }

        static var blank: Frame { Frame() }

        /// Makes this (reused) frame a new one: every member set as a new frame's, references
        /// released only where they are set.
        @inline(__always)
        mutating func reset(kind: Kind, role: Role, nested: Bool, inEntity: Bool, records: Bool, parentKey: String?) {
            self.kind = kind
            self.role = role
            self.nested = nested
            self.records = records
            undecided = false
            self.inEntity = inEntity
            self.parentKey = parentKey
            if key != nil { key = nil }
            keyPending = false
            index = 0
            mark = EventTape.Mark(tokens: 0, bytes: 0)
            identityKey = nil
            firstRule = nil
            if firstIDValue != nil { firstIDValue = nil }
            if !otherIDValues.isEmpty { otherIDValues.removeAll(keepingCapacity: true) }
            // (Emptied, its storage kept: the slot's next undecided object is likely to need it.)
            if !provisionalItems.isEmpty { provisionalItems.removeAll(keepingCapacity: true) }
            if provisionalSlice != nil { provisionalSlice = nil }
            if draft != nil { draft = nil }
            type = nil
            reused = false
            member = .skipped
            lastField = -1
            isVersion = false
            failed = false
            if page != nil { page = nil }
            if sliceItems != nil { sliceItems = nil }
            isSliceData = false
        }
    }
}
