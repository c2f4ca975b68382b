import Foundation

/// The HTTP response headers an entry was downloaded with: what revalidation needs.
public struct HTTPCacheHeaders: Sendable, Hashable {
    /// `ETag`, sent back as `If-None-Match` when the entry is revalidated.
    public var etag: String?
    /// `Last-Modified`, sent back as `If-Modified-Since`.
    public var lastModified: String?
    /// `Cache-Control` as received (``maxAge`` reads it).
    public var cacheControl: String?
    /// `Expires`, used when Cache-Control gives no max-age.
    public var expires: String?
    /// `Date`: the server's clock when it answered (the start of the entry's age).
    public var date: String?
    /// `Content-Type` as received.
    public var contentType: String?

    /// Headers from their raw values (each nil when the response did not carry it).
    public init(
        etag: String? = nil, lastModified: String? = nil, cacheControl: String? = nil,
        expires: String? = nil, date: String? = nil, contentType: String? = nil
    ) {
        self.etag = etag
        self.lastModified = lastModified
        self.cacheControl = cacheControl
        self.expires = expires
        self.date = date
        self.contentType = contentType
    }

    /// `max-age` (or `s-maxage`) from Cache-Control, in seconds.
    public var maxAge: TimeInterval? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.lowercased().split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == "max-age" || parts[0] == "s-maxage", let seconds = TimeInterval(parts[1]) {
                return max(0, seconds)
            }
        }
        return nil
    }

    /// True when Cache-Control forbids using the entry without revalidation (`no-cache`,
    /// `no-store`, `must-revalidate` once stale is handled by the expiry date).
    public var requiresRevalidation: Bool {
        guard let cacheControl = cacheControl?.lowercased() else { return false }
        return cacheControl.utf8Contains("no-cache") || cacheControl.utf8Contains("no-store")
    }

    /// When the response stops being fresh, counted from `received`: `max-age`, else `Expires`.
    public func expiryDate(receivedAt received: Date) -> Date? {
        if requiresRevalidation { return received }
        if let maxAge { return received.addingTimeInterval(maxAge) }
        if let expires, let date = HTTPDate.parse(expires) { return date }
        return nil
    }
}

/// HTTP dates (RFC 9110 IMF-fixdate, plus the obsolete RFC 850 and asctime forms), parsed by
/// hand: Foundation's DateFormatter on Linux leaks an NSCharacterSet on some inputs (found by
/// `make fuzz`), and this runs for every Expires header.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT` or
    /// `Sun Nov  6 08:49:37 1994`; nil for anything else.
    static func parse(_ text: String) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        let tokens = text.split { $0 == " " || $0 == "," || $0 == "-" || $0 == "\t" }.map(String.init)
        var day: Int?, month: Int?, year: Int?, time: (Int, Int, Int)?
        let asctime = tokens.count == 5
        switch tokens.count {
        case 6 where tokens[5] == "GMT":  // IMF-fixdate and RFC 850
            day = Int(tokens[1])
            month = months.firstIndex(of: tokens[2].lowercased())
            year = Int(tokens[3]).map { tokens[3].count == 2 ? ($0 < 70 ? 2000 + $0 : 1900 + $0) : $0 }
            time = clock(tokens[4])
        case 5 where asctime:
            month = months.firstIndex(of: tokens[1].lowercased())
            day = Int(tokens[2])
            time = clock(tokens[3])
            year = tokens[4].count == 4 ? Int(tokens[4]) : nil
        default:
            return nil
        }
        guard let day, let month, let year, let (hour, minute, second) = time, (1...31).contains(day),
            (1...9999).contains(year)
        else { return nil }
        let days = daysFromCivil(year: year, month: month + 1, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    /// `HH:MM:SS`.
    private static func clock(_ token: String) -> (Int, Int, Int)? {
        let parts = token.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 }), let hour = Int(parts[0]),
            let minute = Int(parts[1]),
            let second = Int(parts[2]), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        return (hour, minute, second)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
