import Foundation

extension Data {
    /// `withUnsafeBytes` for bodies that throw ``ImageError`` (Foundation's version rethrows
    /// untyped errors).
    func withImageBytes<Result>(_ body: (UnsafeRawBufferPointer) throws(ImageError) -> Result) throws(ImageError)
        -> Result
    {
        let outcome: Swift.Result<Result, ImageError> = withUnsafeBytes { bytes in
            Swift.Result { () throws(ImageError) -> Result in try body(bytes) }
        }
        return try outcome.get()
    }
}

extension Array where Element == UInt8 {
    func withImageBytes<Result>(_ body: (UnsafeRawBufferPointer) throws(ImageError) -> Result) throws(ImageError)
        -> Result
    {
        let outcome: Swift.Result<Result, ImageError> = withUnsafeBytes { bytes in
            Swift.Result { () throws(ImageError) -> Result in try body(bytes) }
        }
        return try outcome.get()
    }
}

/// A C string in a fixed buffer, up to its terminator.
func string(fromCBuffer buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
