import ArgumentParser
import Logging

/// `--log-level`: what the libraries and the server log, written to stderr. Without it nothing is
/// logged, and the command prints exactly what it printed before.
struct LogLevelOption: ParsableArguments {
    @Option(
        name: .customLong("log-level"),
        help: "Log to stderr at this level and above: trace, debug, info, notice, warning, error, critical.")
    var level: Logger.Level?

    /// A logger to stderr at the level asked for, or nil when none was.
    func logger(_ label: String) -> Logger? {
        guard let level else { return nil }
        var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = level
        return logger
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
