import Flatland
import FlatlandFixtures
import Foundation
import Testing

@testable import FlatlandBench

/// What `flatland bench` counts as the stored entities' own storage, the floor under the
/// ingest's allocations per entity.
@Suite("Storage floor")
struct StorageFloorTests {
    @Test func aRecordsPartsAreItsBoxItsIDAndItsFieldsHeapValues() throws {
        let store = Store(registry: seedFixtureRegistry())
        let id = "u-" + String(repeating: "a", count: 32)
        var user = SeedUser(id: EntityID(id))
        user.firstname = "Ada"
        user.lastname = "Lovelace-Byron-King"
        user.email = "ada@example.com"
        user.created = Date(timeIntervalSince1970: 0)
        user.avatar = URL(string: "https://img.example.com/avatars/ada.png")
        user.devices = [EntityID("d-1"), EntityID("d-2")]
        _ = try store.upsert(user)
        let parts = StorageFloor.parts(of: try #require(store.record(id: id)))
        // The record's own id once; ids of other records (the devices) share those records'
        // strings; numbers, dates and booleans are inline; the empty friends list has no storage.
        #expect(parts.records == 1)
        #expect(parts.strings == [id, "Ada", "Lovelace-Byron-King", "ada@example.com", ""].map { Array($0.utf8) })
        #expect(parts.urls == [Array("https://img.example.com/avatars/ada.png".utf8)])
        #expect(parts.arrays == [2])
    }

    @Test func untypedRecordsAreTakenApartToo() throws {
        let store = Store(registry: seedFixtureRegistry())
        try store.ingest(Array(#"{"uuid":"x-1","name":"a name longer than fifteen","tags":["t"]}"#.utf8))
        let parts = StorageFloor.parts(of: try #require(store.record(id: "x-1")))
        #expect(parts.records == 1)
        #expect(parts.strings.contains(Array("x-1".utf8)))
        #expect(parts.strings.contains(Array("a name longer than fifteen".utf8)))
        #expect(parts.strings.contains(Array("t".utf8)))
    }
}
