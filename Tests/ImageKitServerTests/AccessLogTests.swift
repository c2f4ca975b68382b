#if Serve
import XCTest

@testable import ImageKitServer

/// The access line's fields: the duration as `String(format: "%.2f")` wrote it, without
/// Foundation, and the path without its signature or query.
final class AccessLogTests: XCTestCase {
    func testPathsLoseTheirSignatureAndQuery() {
        let cases: [(String, String)] = [
            ("/oM2cd-3Hzp7pKj0S_9_RB9DRbQ8=/300x200/example.com/a.jpg", "/-/300x200/example.com/a.jpg"),
            ("/unsafe/300x200/example.com/a.jpg?v=2&token=secret", "/unsafe/300x200/example.com/a.jpg"),
            ("/insecure/rs:fit:32:32/plain/http://h/a.jpg@png", "/insecure/rs:fit:32:32/plain/http://h/a.jpg@png"),
            ("/_/w:10/plain/local:///a.png", "/_/w:10/plain/local:///a.png"),
            ("//x/y", "/-/x/y"),
            ("/healthz", "/healthz"),
            ("/sig/é/ü.jpg?q=é", "/-/é/ü.jpg"),
            ("?only=query", ""),
            ("no-slash/a/b", "no-slash/a/b"),
            ("/", "/"),
            ("", ""),
        ]
        for (path, logged) in cases {
            XCTAssertEqual(ImageService.loggablePath(path), logged, path)
        }
    }

    func testDurationsAreMillisecondsWithTwoDecimals() {
        XCTAssertEqual(Duration.milliseconds(10) + .microseconds(764), Duration.nanoseconds(10_764_000))
        XCTAssertEqual((Duration.milliseconds(10) + .microseconds(764)).accessLogMilliseconds, "10.76")
        XCTAssertEqual(Duration.microseconds(4).accessLogMilliseconds, "0.00")
        XCTAssertEqual(Duration.microseconds(5).accessLogMilliseconds, "0.01")
        XCTAssertEqual(Duration.microseconds(60).accessLogMilliseconds, "0.06")
        XCTAssertEqual(Duration.microseconds(1_234_567).accessLogMilliseconds, "1234.57")
        XCTAssertEqual(Duration.seconds(2).accessLogMilliseconds, "2000.00")
        XCTAssertEqual(Duration.zero.accessLogMilliseconds, "0.00")
        XCTAssertEqual((Duration.zero - .seconds(1)).accessLogMilliseconds, "0.00")
    }
}
#endif
