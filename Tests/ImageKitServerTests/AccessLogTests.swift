#if Serve
import XCTest

@testable import ImageKitServer

/// The access line's duration field: what `String(format: "%.2f")` wrote, without Foundation.
final class AccessLogTests: XCTestCase {
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
