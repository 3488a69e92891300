import Testing

/// `flatland serve` exposes the server's limits, and refuses values that would leave it
/// unbounded or useless: usage, exit 2.
@Suite("flatland serve options")
struct ServeCLITests {
    @Test("every limit is an option with its default")
    func limitsAreOptions() throws {
        let help = try CLI.run(["serve", "--help"])
        #expect(help.status == 0)
        for (option, value) in [
            ("--header-timeout", "10.0"), ("--idle-timeout", "60.0"), ("--max-connections", "512"),
            ("--max-pending-sessions", "1000"), ("--pending-session-lifetime", "600.0"),
        ] {
            #expect(help.stdout.contains("\(option) <"), "\(option)")
            #expect(help.stdout.contains("(default: \(value))"), "\(option) \(value)")
        }
    }

    @Test(
        "a limit out of range is a usage error",
        arguments: [
            ["--header-timeout", "0"], ["--idle-timeout", "-1"], ["--idle-timeout", "nan"],
            ["--pending-session-lifetime", "1e12"], ["--max-connections", "0"], ["--max-pending-sessions", "0"],
        ])
    func outOfRange(_ option: [String]) throws {
        let run = try CLI.run(["serve", "--port", "0"] + option)
        #expect(run.status == 2)
        #expect(run.stderr.contains(option[0]))
    }
}

@Suite("flatland serve: the table options")
struct ServeTableOptionTests {
    @Test(
        "a bad table option is a usage error",
        arguments: [
            ["--tables", "a/b"], ["--tables", "x,X"], ["--tables", ""], ["--table-protocols", "v4"],
            ["--table-protocols", ""], ["--tables", "todoitem,notes:root"], ["--tables", "a:"],
            ["--tables-max-body", "0"], ["--tables-max-body", "-5"],
        ])
    func badTableOptions(_ option: [String]) throws {
        let run = try CLI.run(["serve", "--port", "0"] + option)
        #expect(run.status == 2)
        #expect(run.stderr.contains(option[0]))
    }

    @Test func theTableOptionsAreDocumented() throws {
        let help = try CLI.run(["serve", "--help"])
        for option in ["--tables", "--tables-db", "--table-protocols", "--tables-max-body", "per-user"] {
            #expect(help.stdout.contains(option))
        }
    }
}
