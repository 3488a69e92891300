import FlatlandSync
import Testing

/// The queries the official clients' own unit tests expect, byte for byte (spaces as `%20`).
@Suite struct QueryWireTests {
    private func pullQuery(
        _ field: String, _ op: (TableFilter.FieldReference, TableTimestamp) -> TableFilter, _ token: TableTimestamp
    )
        -> TableQuery
    {
        TableQuery(
            filter: op(.field(field), token), orderBy: [.ascending(field)], skip: 0, top: 50, includeDeleted: true)
    }

    @Test func dotNetV2IncrementalPull() throws {
        let query = pullQuery("updatedAt", { $0 >= $1 }, .epoch)
        #expect(
            try query.path(table: "stringId_test_table", protocol: .v2)
                == "/tables/stringId_test_table?$filter=(updatedAt%20ge%20datetimeoffset'1970-01-01T00:00:00.0000000%2B00:00')&$orderby=updatedAt&$skip=0&$top=50&__includeDeleted=true"
        )
    }

    @Test func dotNetV2PullWithAFilterAndAParameter() throws {
        let token = try TableTimestamp(parsing: "2001-02-01T00:00:00.0000000+00:00")
        let query = TableQuery(
            filter: (.field("String") == "world") && (.field("updatedAt") >= token), orderBy: [.ascending("updatedAt")],
            skip: 0, top: 50, includeDeleted: true, parameters: [.init("param1", "val1")])
        #expect(
            try query.path(table: "stringId_test_table", protocol: .v2)
                == "/tables/stringId_test_table?$filter=((String%20eq%20'world')%20and%20(updatedAt%20ge%20datetimeoffset'2001-02-01T00:00:00.0000000%2B00:00'))&$orderby=updatedAt&$skip=0&$top=50&param1=val1&__includeDeleted=true"
        )
    }

    @Test func iOSV2IncrementalPull() throws {
        let query = pullQuery("updatedAt", { $0 >= $1 }, .epoch)
        #expect(
            try query.queryString(protocol: .v2, style: .iOS)
                == "$filter=(updatedAt%20ge%20datetimeoffset'1970-01-01T00%3A00%3A00.000Z')&$orderby=updatedAt%20asc&$skip=0&$top=50&__includeDeleted=true"
        )
    }

    @Test func mobileServicesV1IncrementalPull() throws {
        var query = pullQuery("__updatedAt", { $0 >= $1 }, .epoch)
        query.systemProperties = try SystemProperties(parsing: "updatedAt,deleted")
        #expect(
            try query.queryString(protocol: .v1)
                == "$filter=(__updatedAt%20ge%20datetimeoffset'1970-01-01T00%3A00%3A00.0000000%2B00%3A00')&$orderby=__updatedAt&$skip=0&$top=50&__includeDeleted=true&__systemproperties=__updatedAt%2C__deleted"
        )
    }

    @Test func datasyncV3IncrementalPull() throws {
        let token = try TableTimestamp(parsing: "2024-08-23T20:22:54.291Z")
        let query = TableQuery(
            filter: .field("updatedAt") > token, orderBy: [.ascending("updatedAt")], includeTotalCount: true,
            includeDeleted: true)
        #expect(
            try query.path(table: "movies", protocol: .v3)
                == "/tables/movies?$filter=(updatedAt%20gt%20cast(2024-08-23T20:22:54.291Z,Edm.DateTimeOffset))&$orderby=updatedAt&$count=true&__includedeleted=true"
        )
    }

    @Test func theOtherDateStyleCanBeChosen() throws {
        let query = TableQuery(filter: .field("updatedAt") >= TableTimestamp.epoch)
        #expect(
            try query.queryString(protocol: .v2, style: .iOS)
                == "$filter=(updatedAt%20ge%20datetimeoffset'1970-01-01T00%3A00%3A00.000Z')")
        #expect(
            try query.queryString(protocol: .v3, style: .dotNet)
                == "$filter=(updatedAt%20ge%20datetimeoffset'1970-01-01T00:00:00.0000000%2B00:00')")
        #expect(
            try query.queryString(protocol: .v2, style: .datasync)
                == "$filter=(updatedAt%20ge%20cast(1970-01-01T00:00:00.000Z,Edm.DateTimeOffset))")
    }
}

@Suite struct QueryBuilderTests {
    @Test func stringLiteralsDoubleTheirQuotesAndEncodeWhatAQueryCannotCarry() throws {
        let query = TableQuery(filter: .field("name") == "O'Hara & Sons #1 + 50% é")
        #expect(
            try query.queryString(protocol: .v2)
                == "$filter=(name%20eq%20'O''Hara%20%26%20Sons%20%231%20%2B%2050%25%20%C3%A9')")
    }

    @Test func everyOperatorAndFunction() throws {
        let notA: TableFilter = !(.field("a") != 1)
        let bAndC: TableFilter = (.field("b") > 2.5) && (.field("c") < Int64(-3))
        let d: TableFilter = .field("d") <= true
        let e: TableFilter = .field("e") == String?.none
        let f = notA || bAndC || d || e || .field("t").startsWith("x") || .field("t").endsWith("y")
        #expect(
            f.odata(.dotNet, protocol: .v2)
                == "(((((not((a ne 1)) or ((b gt 2.5) and (c lt -3))) or (d le true)) or (e eq null)) or startswith(t,'x')) or endswith(t,'y'))"
        )
    }

    @Test func containsIsSubstringofBeforeV3() {
        let f = TableFilter.field("text").contains("milk")
        #expect(f.odata(.dotNet, protocol: .v2) == "substringof('milk',text)")
        #expect(f.odata(.dotNet, protocol: .v1) == "substringof('milk',text)")
        #expect(f.odata(.datasync, protocol: .v3) == "contains(text,'milk')")
    }

    @Test func rawFiltersPassAsWrittenAndCombineInParentheses() throws {
        let query = TableQuery(filter: .raw("text eq 'it''s'") && (.field("complete") == false))
        #expect(try query.queryString(protocol: .v2) == "$filter=(text%20eq%20'it''s'%20and%20(complete%20eq%20false))")
    }

    @Test func orderSelectCountAndParametersInTheClientsOrder() throws {
        let query = TableQuery(
            orderBy: [.descending("priority"), .ascending("text")], skip: 10, top: 5, select: ["id", "text"],
            includeTotalCount: true, parameters: [.init("tag", "a b")])
        #expect(
            try query.queryString(protocol: .v2)
                == "$orderby=priority%20desc,text&$skip=10&$top=5&$select=id,text&$inlinecount=allpages&tag=a%20b")
        #expect(
            try query.queryString(protocol: .v3)
                == "$orderby=priority%20desc,text&$skip=10&$top=5&$select=id,text&$count=true&tag=a%20b")
        #expect(
            try query.queryString(protocol: .v1)
                == "$orderby=priority%20desc%2Ctext&$skip=10&$top=5&$select=id%2Ctext&$inlinecount=allpages&tag=a%20b")
    }

    @Test(arguments: ["$filter", "$TOP", "__includeDeleted", "__SystemProperties", ""])
    func reservedParametersAreRefused(name: String) {
        let query = TableQuery(parameters: [.init(name, "x")])
        #expect(throws: TableQueryError.self) { try query.queryString(protocol: .v2) }
        do {
            _ = try query.queryString(protocol: .v2)
        } catch {
            #expect(error.code == .reservedParameter)
        }
    }

    @Test func negativePagingAndSystemPropertiesOutsideV1AreRefused() {
        #expect(throws: TableQueryError.self) { try TableQuery(skip: -1).queryString(protocol: .v2) }
        #expect(throws: TableQueryError.self) { try TableQuery(top: -5).queryString(protocol: .v3) }
        #expect(throws: TableQueryError.self) { try TableQuery(systemProperties: .all).queryString(protocol: .v2) }
        #expect(throws: TableQueryError.self) { try TableQuery(select: ["a", ""]).queryString(protocol: .v2) }
    }

    @Test func tableAndIDPathsAreEncodedSegments() {
        #expect(TableQuery.tablePath("todoitem") == "/tables/todoitem")
        #expect(TableQuery.tablePath("todo item", id: "a/b?c") == "/tables/todo%20item/a%2Fb%3Fc")
    }

    @Test func orderTermsParseAsTheCommandLineGivesThem() throws {
        #expect(try TableQuery.Order(parsing: "text") == .ascending("text"))
        #expect(try TableQuery.Order(parsing: "text desc") == .descending("text"))
        #expect(try TableQuery.Order(parsing: "text ASC") == .ascending("text"))
        #expect(throws: TableQueryError.self) { try TableQuery.Order(parsing: "text sideways") }
        #expect(throws: TableQueryError.self) { try TableQuery.Order(parsing: "") }
        #expect(throws: TableQueryError.self) { try TableQuery.Order(parsing: "a b c") }
    }
}

@Suite struct SystemPropertyTests {
    @Test func namesPerProtocol() {
        #expect(TableProtocol.v1.systemPropertyNames == ["__createdAt", "__updatedAt", "__version", "__deleted"])
        #expect(TableProtocol.v2.systemPropertyNames == ["createdAt", "updatedAt", "version", "deleted"])
        #expect(TableProtocol.v3.systemPropertyNames == ["updatedAt", "version", "deleted"])
        #expect(TableProtocol.v1.apiVersion == nil)
        #expect(TableProtocol.v2.apiVersion == "2.0.0")
        #expect(TableProtocol.v3.apiVersion == "3.0.0")
    }

    @Test(arguments: [
        ("*", "*"), ("updatedAt,deleted", "__updatedAt,__deleted"), ("__updatedAt,__deleted", "__updatedAt,__deleted"),
        ("deleted, version ,CREATEDAT", "__createdAt,__version,__deleted"),
        ("createdAt,updatedAt,version,deleted", "*"),
    ])
    func listsParseWithOrWithoutThePrefix(list: String, value: String) throws {
        #expect(try SystemProperties(parsing: list).queryValue == value)
    }

    @Test(arguments: ["updated", "updatedAt,,deleted", "id", "__"])
    func unknownNamesAreRefused(list: String) {
        #expect(throws: TableQueryError.self) { try SystemProperties(parsing: list) }
    }
}

@Suite struct TimestampTests {
    @Test(arguments: [
        ("1970-01-01T00:00:00.0000000+00:00", 0, 0),
        ("2024-08-23T20:22:54.291Z", 1_724_444_574, 291_000_000),
        ("2024-08-23T20:22:54.2913456Z", 1_724_444_574, 291_345_600),
        ("2024-08-23T22:22:54.291+02:00", 1_724_444_574, 291_000_000),
        ("2024-08-23T15:22:54-05:00", 1_724_444_574, 0),
        ("1969-12-31T23:59:59.999999999Z", -1, 999_999_999),
        ("2000-02-29T12:00:00Z", 951_825_600, 0),
    ])
    func parsesAtFullPrecision(text: String, seconds: Int64, nanoseconds: Int32) throws {
        let t = try TableTimestamp(parsing: text)
        #expect(t.seconds == seconds)
        #expect(t.nanoseconds == nanoseconds)
        #expect(t.text == text)
        #expect(try TableTimestamp(parsing: t.formatted(.nanoseconds)) == t)
    }

    @Test func formatsInEachStyle() throws {
        let t = try TableTimestamp(parsing: "2024-08-23T20:22:54.2913456Z")
        #expect(t.formatted(.dotNet) == "2024-08-23T20:22:54.2913456+00:00")
        #expect(t.formatted(.milliseconds) == "2024-08-23T20:22:54.291Z")
        #expect(t.formatted(.nanoseconds) == "2024-08-23T20:22:54.2913456Z")
        #expect(TableTimestamp.epoch.formatted(.nanoseconds) == "1970-01-01T00:00:00.000Z")
        #expect(
            try TableTimestamp(parsing: "1969-12-31T23:59:59.5Z").formatted(.dotNet)
                == "1969-12-31T23:59:59.5000000+00:00")
    }

    @Test func ordersByInstantNotByText() throws {
        let a = try TableTimestamp(parsing: "2024-08-23T22:22:54.291+02:00")
        let b = try TableTimestamp(parsing: "2024-08-23T20:22:54.2910001Z")
        #expect(a < b)
        #expect(a == (try TableTimestamp(parsing: "2024-08-23T20:22:54.291Z")))
    }

    @Test(arguments: [
        "", "2024-08-23", "2024-08-23T20:22:54", "2024-08-23T20:22:54.Z", "2024-13-01T00:00:00Z",
        "2024-08-23T24:00:00Z", "2024-08-23T20:22:54.291+2:00", "2024-08-23T20:22:54.291Zjunk", "２０２４-08-23T20:22:54Z",
    ])
    func refusesWhatIsNotADateWithAZone(text: String) {
        #expect(throws: TableQueryError.self) { try TableTimestamp(parsing: text) }
    }
}
