@_spi(FlatlandInternal) import FlatlandJSON
import Testing

private final class Thing {
    var value = 7
}

/// `Unretained` lends its object without retaining it, and debug builds check that the object
/// is still alive at every use.
@Suite struct UnretainedTests {
    @Test func lendsTheObjectItWasMadeFromAndRebuildsFromItsAddress() {
        let thing = Thing()
        let reference = Unretained(thing)
        #expect(reference.with { $0 === thing })
        reference.with { $0.value = 8 }
        #expect(thing.value == 8)
        let rebuilt = Unretained<Thing>(address: reference.address)
        #expect(rebuilt.object === thing)
        #expect(rebuilt.refers(to: reference))
        #expect(!Unretained(Thing()).refers(to: reference))
        withExtendedLifetime(thing) {}
    }

    #if DEBUG
        /// Only debug builds carry the check (a release build pays nothing for it).
        @Test func aUseAfterTheObjectIsGoneTrapsInDebugBuilds() async {
            await #expect(processExitsWith: .failure) {
                var thing: Thing? = Thing()
                let reference = Unretained(thing!)
                thing = nil
                _ = reference.with { $0.value }
            }
        }
    #endif
}
