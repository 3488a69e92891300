import FlatlandJSON
import Foundation
import Testing

@testable import FlatlandServer

/// Declared tables: the schema file, the bodies a declared table refuses, and the query options
/// that name a field it does not declare.
@Suite struct TableSchemaTests {
    static let file = """
        {
          "movies": {
            "softDelete": false,
            "fields": {
              "title": "string",
              "year": {"type": "int", "index": true},
              "duration": "int",
              "score": "double",
              "price": {"type": "decimal", "nullable": true},
              "rating": {"enum": ["Unrated", "G", "PG", "PG13", "R", "NC17"]},
              "releaseDate": {"type": "date", "nullable": true, "index": true},
              "showtime": {"type": "time", "nullable": true},
              "seen": {"type": "datetime", "nullable": true},
              "bestPictureWinner": "bool",
              "ref": {"type": "guid", "nullable": true},
              "poster": {"type": "bytes", "nullable": true},
              "extra": {"type": "json", "nullable": true}
            }
          },
          "notes": {"fields": {"text": "string"}}
        }
        """

    @Test func readsTheSchemaFile() throws {
        let tables = try TableSchema.parseFile(Array(Self.file.utf8))
        #expect(tables.map(\.name) == ["movies", "notes"])
        let movies = tables[0].declaration
        #expect(movies.softDelete == false)
        #expect(tables[1].declaration.softDelete == true)
        #expect(movies.schema.fields.map(\.name).first == "title")
        #expect(movies.schema.field("year") == .init("year", .int, indexed: true))
        #expect(movies.schema.field("releaseDate") == .init("releaseDate", .date, nullable: true, indexed: true))
        #expect(
            movies.schema.field("rating")?.type == .enumeration(["Unrated", "G", "PG", "PG13", "R", "NC17"]))
        #expect(movies.schema.field("extra")?.type == .json)
    }

    @Test(arguments: [
        ("[]", "JSON object of tables"),
        ("{\"a b\": {}}", "'a b' is not a table name"),
        ("{\"t\": {\"fields\": {\"x\": \"text\"}}}", "t.x: 'text' is not a type"),
        ("{\"t\": {\"fields\": {\"x\": {\"nullable\": true}}}}", "t.x: a field needs a type"),
        ("{\"t\": {\"fields\": {\"x y\": \"int\"}}}", "'x y' is not a field name"),
        ("{\"t\": {\"fields\": {\"updatedAt\": \"int\"}}}", "'updatedAt' is reserved"),
        ("{\"t\": {\"fields\": {\"id\": \"string\"}}}", "'id' is reserved"),
        ("{\"t\": {\"fields\": {\"r\": {\"enum\": []}}}}", "has no names"),
        ("{\"t\": {\"fields\": {\"r\": {\"enum\": [\"a\", \"a\"]}}}}", "names a value twice"),
        ("{\"t\": {\"fields\": {\"r\": {\"enum\": [1]}}}}", "names are strings"),
        ("{\"t\": {\"softDelete\": 1}}", "t.softDelete must be true or false"),
        ("{\"t\": {\"field\": {}}}", "'field' is not a member of a table"),
        ("{\"t\": {\"fields\": {\"x\": {\"type\": \"int\", \"size\": 4}}}}", "'size' is not a member of a field"),
        ("{\"t\": {}, \"T\": {}}", "declared twice"),
        ("{", "not JSON"),
    ])
    func refusesABadSchemaFileSayingWhere(file: String, saying: String) {
        #expect {
            try TableSchema.parseFile(Array(file.utf8))
        } throws: { error in
            (error as? TableSchemaError)?.message.contains(saying) == true
        }
    }

    static func client(_ kind: TestStorage) async throws -> TableAPITests.Client {
        let tables = try TableSchema.parseFile(Array(Self.file.utf8)).map {
            TableDefinition(name: $0.name, softDelete: $0.declaration.softDelete, schema: $0.declaration.schema)
        }
        let storage = try await kind.make(tables)
        return TableAPITests.Client(
            api: TableAPI(storage: storage, configuration: .init(tables: tables, protocols: [.v2, .v3])),
            version: "3.0.0")
    }

    static let good = """
        {"id":"m1","title":"The Dark","year":1994,"duration":142,"score":8.5,"price":12.25,"rating":"R",\
        "releaseDate":"1994-10-14","showtime":"20:15:00","seen":"2020-01-02T03:04:05.678+02:00",\
        "bestPictureWinner":true,"ref":"0f8fad5b-d9cb-469f-a165-70867728950e","poster":"AAEC","extra":{"a":[1]}}
        """

    @Test(arguments: TestStorage.all)
    func aBodyThatFitsIsKeptAsWritten(_ kind: TestStorage) async throws {
        let client = try await Self.client(kind)
        let created = await client.send("POST", "/tables/movies", Self.good)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let read = await client.send("GET", "/tables/movies/m1")
        let row = try JSONValue(parsing: read.body)
        #expect(row["rating"] == .string("R"))
        #expect(row["seen"] == .string("2020-01-02T03:04:05.678+02:00"))
        #expect(row["extra"]?.jsonString() == #"{"a":[1]}"#)
        // A nullable field may be null or left out; a PATCH may give some fields only.
        let minimal =
            #"{"id":"m2","title":"x","year":1,"duration":2,"score":3,"rating":"G","bestPictureWinner":false,"price":null}"#
        #expect(await client.send("POST", "/tables/movies", minimal).status == 201)
        #expect(await client.send("PATCH", "/tables/movies/m2", #"{"year":2001}"#).status == 200)
    }

    @Test(
        arguments: TestStorage.all,
        [
            (#""year":"1994""#, "'year'"), (#""year":19.5"#, "'year'"), (#""year":1e30"#, "'year'"),
            (#""score":"x""#, "'score'"), (#""rating":"X""#, "'rating'"), (#""rating":3"#, "'rating'"),
            (#""releaseDate":"1994-13-01""#, "'releaseDate'"),
            (#""releaseDate":"1994-10-14T00:00:00Z""#, "'releaseDate'"),
            (#""showtime":"25:00:00""#, "'showtime'"), (#""showtime":"20:15""#, "'showtime'"),
            (#""seen":"2020-01-02T03:04:05""#, "'seen'"), (#""seen":"yesterday""#, "'seen'"),
            (#""bestPictureWinner":"true""#, "'bestPictureWinner'"), (#""ref":"not-a-guid""#, "'ref'"),
            (#""poster":"@@@""#, "'poster'"), (#""title":null"#, "'title'"), (#""unknown":1"#, "'unknown'"),
        ])
    func aBodyThatDoesNotFitIsA400NamingTheField(_ kind: TestStorage, _ change: (String, String)) async throws {
        let (member, field) = change
        let client = try await Self.client(kind)
        // The good body with one member changed (or added).
        let key = String(member.prefix { $0 != ":" }.dropFirst().dropLast())
        guard case .object(var object) = try JSONValue(parsing: Self.good) else { throw CancellationError() }
        object.members.removeAll { $0.key == key }
        let body = "{" + String(JSONValue.object(object).jsonString().dropFirst().dropLast()) + "," + member + "}"
        let reply = await client.send("POST", "/tables/movies", body)
        #expect(reply.status == 400)
        #expect(String(decoding: reply.body, as: UTF8.self).contains(field))
        #expect(await client.send("GET", "/tables/movies/m1").status == 404)
        // A PATCH too, and nothing changes.
        #expect(await client.send("POST", "/tables/movies", Self.good).status == 201)
        let patched = await client.send("PATCH", "/tables/movies/m1", "{" + member + "}")
        #expect(patched.status == 400)
        #expect(
            try JSONValue(parsing: await client.send("GET", "/tables/movies/m1").body)["year"]?.jsonString() == "1994")
    }

    @Test(arguments: TestStorage.all)
    func aMissingFieldIsA400(_ kind: TestStorage) async throws {
        let client = try await Self.client(kind)
        let reply = await client.send("POST", "/tables/movies", #"{"title":"x"}"#)
        #expect(reply.status == 400)
        #expect(String(decoding: reply.body, as: UTF8.self).contains("missing"))
    }

    @Test(
        arguments: TestStorage.all,
        [
            "$filter=missing%20eq%2020", "$orderby=missing%20asc", "$select=foo", "$select=title,foo",
            "$filter=rating%20eq%20'X'", "$filter=rating%20gt%203", "$filter=year%20eq%20'x'%20and%20missing",
            "$filter=year(title)%20eq%201", "$filter=hour(rating)%20eq%201",
        ])
    func aFieldTheTableDoesNotDeclareIsA400(_ kind: TestStorage, query: String) async throws {
        let client = try await Self.client(kind)
        #expect(await client.send("POST", "/tables/movies", Self.good).status == 201)
        let reply = await client.send("GET", "/tables/movies?" + query)
        let body = String(decoding: reply.body, as: UTF8.self)
        #expect(reply.status == 400, "\(body)")
        #expect(body.contains("$"), "\(body)")
    }

    @Test(arguments: TestStorage.all)
    func typedColumnsAnswerTypedQueries(_ kind: TestStorage) async throws {
        let client = try await Self.client(kind)
        #expect(await client.send("POST", "/tables/movies", Self.good).status == 201)
        for (filter, count) in [
            ("year eq 1994", 1), ("year gt 1994", 0), ("price eq 12.25m", 1), ("seen eq 2020-01-02T01:04:05.678Z", 1),
            ("hour(seen) eq 1", 1), ("releaseDate eq 1994-10-14", 1), ("showtime gt 20:00", 1),
            ("rating ge 'R'", 1), ("rating lt 'R'", 0), ("bestPictureWinner", 1), ("extra ne null", 1),
            ("ref eq 0F8FAD5B-D9CB-469F-A165-70867728950E", 1), ("poster eq 'AAEC'", 1),
        ] {
            let reply = await client.send(
                "GET",
                "/tables/movies?$count=true&$filter="
                    + (filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
            #expect(reply.status == 200, "\(filter): \(String(decoding: reply.body, as: UTF8.self))")
            #expect(try JSONValue(parsing: reply.body)["count"]?.jsonString() == "\(count)", "\(filter)")
        }
    }
}
