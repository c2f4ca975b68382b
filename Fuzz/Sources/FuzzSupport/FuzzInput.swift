import Foundation

/// Reads fuzzer-chosen parameters off the front of the input, then hands over the rest.
public struct FuzzInput {
    public private(set) var bytes: UnsafeRawBufferPointer

    public init(_ start: UnsafeRawPointer?, _ count: Int) {
        bytes =
            count > 0 && start != nil
            ? UnsafeRawBufferPointer(start: start, count: count) : UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// The next byte (0 once the input is used up).
    public mutating func byte() -> UInt8 {
        guard let first = bytes.first else { return 0 }
        bytes = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        return first
    }

    public mutating func flag() -> Bool { byte() & 1 == 1 }

    /// What is left, as Data.
    public var data: Data { Data(bytes) }

    public var string: String { String(decoding: bytes, as: UTF8.self) }
}
