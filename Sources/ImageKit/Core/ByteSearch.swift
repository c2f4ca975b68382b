import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finding a byte string in a buffer (markers, box types, trailers).
enum ByteSearch {
    /// Whether `needle` occurs in `haystack`.
    static func contains(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Bool {
        guard let base = haystack.baseAddress, !needle.isEmpty, haystack.count >= needle.count else { return false }
        // memchr to each candidate first byte, then memcmp (glibc's memmem is not exported to Swift).
        return needle.withUnsafeBytes { needle in
            let first = Int32(needle[0])
            let last = base + (haystack.count - needle.count)
            var cursor = base
            while cursor <= last {
                guard let found = memchr(cursor, first, last - cursor + 1) else { return false }
                if memcmp(found, needle.baseAddress!, needle.count) == 0 { return true }
                cursor = UnsafeRawPointer(found) + 1
            }
            return false
        }
    }
}
