/// How a paginated response is wrapped, declared per endpoint: which member holds the page's
/// items, which members say where the page is, and which query parameters of the request do.
///
/// The ingest reads any shape without an envelope; what the envelope adds is the *page*: where
/// the response's items sit in the endpoint's collection (``EntityCollection``), how many
/// items the endpoint has, and the link (or cursor) to the next page, reported in
/// ``IngestResult/page``. Pass it in ``IngestOptions/envelope`` for each request (the HTTP
/// layer's options are per request). Today's shape is ``default``:
///
/// | API | envelope |
/// | --- | --- |
/// | `{"offset":12,"count":2,"total":47,"data":[…]}` | ``default`` |
/// | Azure Mobile Apps v2, `{"results":[…],"count":N}` with `$inlinecount=allpages` | ``results`` |
/// | Azure Datasync v3, `{"items":[…],"count":N,"nextLink":"…"}` | ``datasync`` |
/// | OData, `{"value":[…],"@odata.count":N,"@odata.nextLink":"…"}` | ``odata`` |
/// | a bare array, the next page in a `Link` header | ``bareArray`` and ``IngestOptions/page`` |
/// | `?page=3&per_page=20` | any envelope: ``pageParameter``, ``perPageParameter`` |
/// | `{"data":[…],"next_cursor":"…"}` | ``cursor(items:next:)`` |
///
/// Where a page starts, first found wins: the body's ``offset`` member; the request's
/// ``offsetParameter``; its ``pageParameter`` and ``perPageParameter``, at
/// `(page - firstPage) * perPage`; the caller's ``IngestOptions/PageContext/start`` (a pager
/// that follows next links passes the previous page's ``IngestResult/Page/nextOffset`` there:
/// a page that says nothing of its place comes right after the previous one); else 0.
///
/// Which value is a page: the first object outside entities whose ``items`` member is an array,
/// when it has one of the paging members, or when it is the response's root object and either
/// the envelope is not ``requiresPagingMember`` or the request says where the page is; and a
/// root array, when ``items`` is nil or the request says where the page is. A page's paging
/// members must be non-negative integers (the next link a string, or null): anything else is an
/// ``IngestError`` with code ``IngestError/Code-swift.struct/paging``, and nothing is stored.
public struct Envelope: Sendable, Hashable {
    /// The member holding the page's items (an array); nil when the page is the response's
    /// top-level array.
    public var items: String?
    /// The member giving the position of the page's first item.
    public var offset: String?
    /// The member giving the number of items in this page (checked, not otherwise used).
    public var count: String?
    /// The member giving the number of items the endpoint has in all.
    public var total: String?
    /// The member giving the link (or cursor) to the next page, reported in
    /// ``IngestResult/Page/nextLink``.
    public var nextLink: String?
    /// The query parameter giving the position of the page's first item (`$skip`, `offset`).
    public var offsetParameter: String?
    /// The query parameter giving the page number.
    public var pageParameter: String?
    /// The query parameter giving the number of items per page.
    public var perPageParameter: String?
    /// The number of the first page (1 unless the API counts from 0).
    public var firstPage: Int
    /// Whether an object with the ``items`` member is a page only when it also carries a paging
    /// member (true for ``default``, so that a plain `{"data":[…]}` stays a container).
    public var requiresPagingMember: Bool

    /// An envelope; every member has a default.
    public init(
        items: String? = "data", offset: String? = nil, count: String? = nil, total: String? = nil,
        nextLink: String? = nil, offsetParameter: String? = nil, pageParameter: String? = "page",
        perPageParameter: String? = "per_page", firstPage: Int = 1, requiresPagingMember: Bool = false
    ) {
        self.items = items
        self.offset = offset
        self.count = count
        self.total = total
        self.nextLink = nextLink
        self.offsetParameter = offsetParameter
        self.pageParameter = pageParameter
        self.perPageParameter = perPageParameter
        self.firstPage = firstPage
        self.requiresPagingMember = requiresPagingMember
    }

    /// `{"offset":12,"count":2,"total":47,"data":[…]}`: the shape the ingest has always read.
    public static let `default` = Envelope(
        items: "data", offset: "offset", count: "count", total: "total", requiresPagingMember: true)

    /// Azure Mobile Apps v2: `{"results":[…],"count":N}` (with `$inlinecount=allpages`), the
    /// position in `$skip`.
    public static let results = Envelope(items: "results", total: "count", offsetParameter: "$skip")

    /// Azure Datasync v3: `{"items":[…],"count":N,"nextLink":"…"}`, the position in `$skip`.
    public static let datasync = Envelope(
        items: "items", total: "count", nextLink: "nextLink", offsetParameter: "$skip")

    /// OData: `{"value":[…],"@odata.count":N,"@odata.nextLink":"…"}`, the position in `$skip`.
    public static let odata = Envelope(
        items: "value", total: "@odata.count", nextLink: "@odata.nextLink", offsetParameter: "$skip")

    /// A bare array: the response's top-level array is the page. Its next link, from a `Link`
    /// header, is the caller's to give in ``IngestOptions/PageContext/nextLink``; its position
    /// comes from the request (``offsetParameter``, ``pageParameter``) or the caller.
    public static let bareArray = Envelope(items: nil, offsetParameter: "offset")

    /// Cursor paging: `{"data":[…],"next_cursor":"…"}`. The cursor is reported as the next link.
    public static func cursor(items: String = "data", next: String = "next_cursor") -> Envelope {
        Envelope(items: items, nextLink: next)
    }

    /// The paging member names, in the order of ``PagingMember``.
    var memberNames: [String?] { [offset, count, total, nextLink] }
}

/// Which paging member a key is.
enum PagingMember: UInt8 {
    case offset, count, total, nextLink
}

extension Envelope {
    /// Where the page starts according to the request's query (``offsetParameter``, then
    /// ``pageParameter`` with ``perPageParameter``); nil when it does not say.
    /// - Throws: ``IngestError`` with code ``IngestError/Code-swift.struct/paging`` for a
    ///   parameter that is not a non-negative integer, or a page before ``firstPage``.
    func requestStart(_ query: Endpoint.Query) throws(IngestError) -> Int? {
        func integer(_ name: String?) throws(IngestError) -> Int? {
            guard let name, let text = query.parameter(name) else { return nil }
            guard let value = Int(text), value >= 0 else {
                throw IngestError(
                    code: .paging,
                    message: "the query parameter \(name)=\(text) is not a non-negative integer")
            }
            return value
        }
        if let offset = try integer(offsetParameter) { return offset }
        guard let page = try integer(pageParameter), let perPage = try integer(perPageParameter) else { return nil }
        guard page >= firstPage else {
            throw IngestError(
                code: .paging, message: "page \(page) comes before the first page, \(firstPage)")
        }
        let (offset, overflow) = (page - firstPage).multipliedReportingOverflow(by: perPage)
        guard !overflow else {
            throw IngestError(code: .paging, message: "page \(page) of \(perPage) items is out of range")
        }
        return offset
    }
}
