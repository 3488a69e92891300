import Foundation

/// An OData `$filter` expression, built rather than written by hand.
///
/// ```swift
/// let f: TableFilter = .field("complete") == false && .field("text").startsWith("Buy")
/// let g: TableFilter = .field("updatedAt") >= .date(token) || !(.field("priority") < 3)
/// ```
///
/// Every comparison and every `and`/`or` is written in parentheses, as the official clients
/// write them: `((complete eq false) and startswith(text,'Buy'))`. String literals double their
/// quotes (`'O''Hara'`); how dates are written depends on the protocol (see ``WireStyle``).
/// ``raw(_:)`` passes OData text as written (the caller doubles quotes inside string literals).
public indirect enum TableFilter: Sendable, Hashable {
    /// `(lhs op rhs)`.
    case comparison(Operand, ComparisonOperator, Operand)
    /// `(lhs and rhs)`.
    case and(TableFilter, TableFilter)
    /// `(lhs or rhs)`.
    case or(TableFilter, TableFilter)
    /// `not(x)`.
    case not(TableFilter)
    /// `startswith(field,'text')`.
    case startsWith(field: String, String)
    /// `endswith(field,'text')`.
    case endsWith(field: String, String)
    /// `substringof('text',field)` in v1 and v2, `contains(field,'text')` in v3.
    case contains(field: String, String)
    /// OData text, passed as written.
    case raw(String)

    /// The comparison operators of OData.
    public enum ComparisonOperator: String, Sendable, Hashable {
        case eq, ne, gt, ge, lt, le
    }

    /// One side of a comparison: a field or a literal.
    public enum Operand: Sendable, Hashable {
        /// A member of the row, by its wire name.
        case field(String)
        /// A literal value.
        case literal(Literal)
    }

    /// A literal value.
    public enum Literal: Sendable, Hashable {
        case string(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)
        case null
        /// A date and time, written in the style of the protocol.
        case date(TableTimestamp)
    }

    /// A field, to compare or to test: `.field("text") == "milk"`.
    public static func field(_ name: String) -> FieldReference { FieldReference(name: name) }

    /// A field named in a filter.
    public struct FieldReference: Sendable, Hashable {
        /// The field's wire name.
        public var name: String

        /// The field named `name` (so that `.field("a") == 1` reads alike on either side).
        public static func field(_ name: String) -> FieldReference { FieldReference(name: name) }

        /// `startswith(name,'prefix')`.
        public func startsWith(_ prefix: String) -> TableFilter { .startsWith(field: name, prefix) }
        /// `endswith(name,'suffix')`.
        public func endsWith(_ suffix: String) -> TableFilter { .endsWith(field: name, suffix) }
        /// `substringof('text',name)` (v1, v2) or `contains(name,'text')` (v3).
        public func contains(_ text: String) -> TableFilter { .contains(field: name, text) }
    }

    /// `(a and b)`.
    public static func && (a: TableFilter, b: TableFilter) -> TableFilter { .and(a, b) }
    /// `(a or b)`.
    public static func || (a: TableFilter, b: TableFilter) -> TableFilter { .or(a, b) }
    /// `not(a)`.
    public static prefix func ! (a: TableFilter) -> TableFilter { .not(a) }
}

/// Values that can stand as a literal in a ``TableFilter``.
public protocol TableFilterLiteral: Sendable {
    /// The literal.
    var tableFilterLiteral: TableFilter.Literal { get }
}

extension String: TableFilterLiteral {
    public var tableFilterLiteral: TableFilter.Literal { .string(self) }
}
extension Int: TableFilterLiteral {
    public var tableFilterLiteral: TableFilter.Literal { .int(Int64(self)) }
}
extension Int64: TableFilterLiteral {
    public var tableFilterLiteral: TableFilter.Literal { .int(self) }
}
extension Double: TableFilterLiteral {
    public var tableFilterLiteral: TableFilter.Literal { .double(self) }
}
extension Bool: TableFilterLiteral {
    public var tableFilterLiteral: TableFilter.Literal { .bool(self) }
}
extension TableTimestamp: TableFilterLiteral {
    public var tableFilterLiteral: TableFilter.Literal { .date(self) }
}
extension Optional: TableFilterLiteral where Wrapped: TableFilterLiteral {
    public var tableFilterLiteral: TableFilter.Literal { self?.tableFilterLiteral ?? .null }
}

extension TableFilter.FieldReference {
    private func compare(_ op: TableFilter.ComparisonOperator, _ value: some TableFilterLiteral) -> TableFilter {
        .comparison(.field(name), op, .literal(value.tableFilterLiteral))
    }

    /// `(name eq value)`.
    public static func == (f: Self, v: some TableFilterLiteral) -> TableFilter { f.compare(.eq, v) }
    /// `(name ne value)`.
    public static func != (f: Self, v: some TableFilterLiteral) -> TableFilter { f.compare(.ne, v) }
    /// `(name gt value)`.
    public static func > (f: Self, v: some TableFilterLiteral) -> TableFilter { f.compare(.gt, v) }
    /// `(name ge value)`.
    public static func >= (f: Self, v: some TableFilterLiteral) -> TableFilter { f.compare(.ge, v) }
    /// `(name lt value)`.
    public static func < (f: Self, v: some TableFilterLiteral) -> TableFilter { f.compare(.lt, v) }
    /// `(name le value)`.
    public static func <= (f: Self, v: some TableFilterLiteral) -> TableFilter { f.compare(.le, v) }
}

extension TableFilter {
    /// The expression as OData text, before URL encoding.
    public func odata(_ style: WireStyle, protocol version: TableProtocol) -> String {
        switch self {
        case .comparison(let a, let op, let b):
            return "(" + a.odata(style) + " " + op.rawValue + " " + b.odata(style) + ")"
        case .and(let a, let b):
            return "(" + a.odata(style, protocol: version) + " and " + b.odata(style, protocol: version) + ")"
        case .or(let a, let b):
            return "(" + a.odata(style, protocol: version) + " or " + b.odata(style, protocol: version) + ")"
        case .not(let a):
            return "not(" + a.odata(style, protocol: version) + ")"
        case .startsWith(let field, let text):
            return "startswith(" + field + "," + Literal.string(text).odata(style) + ")"
        case .endsWith(let field, let text):
            return "endswith(" + field + "," + Literal.string(text).odata(style) + ")"
        case .contains(let field, let text):
            if version == .v3 { return "contains(" + field + "," + Literal.string(text).odata(style) + ")" }
            return "substringof(" + Literal.string(text).odata(style) + "," + field + ")"
        case .raw(let text):
            return text
        }
    }
}

extension TableFilter.Operand {
    func odata(_ style: WireStyle) -> String {
        switch self {
        case .field(let name): name
        case .literal(let literal): literal.odata(style)
        }
    }
}

extension TableFilter.Literal {
    /// The literal as OData text.
    public func odata(_ style: WireStyle) -> String {
        switch self {
        case .string(let s): "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
        case .int(let i): String(i)
        case .double(let d): d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)"
        case .bool(let b): b ? "true" : "false"
        case .null: "null"
        case .date(let t):
            switch style.dates {
            case .dotNet: "datetimeoffset'" + t.formatted(style.fullPrecisionDates ? .nanoseconds : .dotNet) + "'"
            case .milliseconds:
                "datetimeoffset'" + t.formatted(style.fullPrecisionDates ? .nanoseconds : .milliseconds) + "'"
            case .cast:
                "cast(" + t.formatted(style.fullPrecisionDates ? .nanoseconds : .milliseconds) + ",Edm.DateTimeOffset)"
            }
        }
    }
}
