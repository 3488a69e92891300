extension EntityRecord {
    /// The fields of `desired` that this record lacks, plus the id's member first whenever any
    /// are missing, so a screen can ask the server for exactly those (`?fields=`).
    ///
    /// The id's member is the one `resolver` reads ids from for this record's prefix
    /// (``IdentityResolver/idKey(forPrefix:)``): `"uuid"` for the default resolver, `"id"` for
    /// `PrefixedIDResolver(key: "id")`, a rule's ``RuleResolver/Rule/idKey``. It is never
    /// reported as missing itself. A resolver with no id member adds none.
    public func missingFields(for desired: [String], resolver: any IdentityResolver) -> [String] {
        missingFields(for: desired, idKey: resolver.idKey(forPrefix: prefix))
    }

    /// The fields of `desired` that this record lacks, plus `idKey` first whenever any are
    /// missing (see ``missingFields(for:resolver:)``, which finds the id key for you).
    public func missingFields(for desired: [String], idKey: String?) -> [String] {
        let have = Set(presentFields)
        let missing = desired.filter { !have.contains($0) && $0 != idKey }
        guard !missing.isEmpty else { return [] }
        return (idKey.map { [$0] } ?? []) + missing
    }

    /// ``missingFields(for:resolver:)`` for the default resolver, ``PrefixedIDResolver`` on
    /// `"uuid"`. With another resolver, pass it: this would name the wrong id member.
    public func missingFields(for desired: [String]) -> [String] {
        missingFields(for: desired, resolver: PrefixedIDResolver())
    }
}
