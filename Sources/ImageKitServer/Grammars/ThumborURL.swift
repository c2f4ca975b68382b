import Foundation
import ImageKit

/// thumbor 7's URL grammar:
/// `/(unsafe|SIG)/[meta/][trim[:top-left|:bottom-right][:N]/][AxB:CxD/][adaptive-][full-]fit-in/[[-]Wx[-]H/][left|center|right/][top|middle|bottom/][smart/][filters:NAME(ARGS):…/]IMAGE`.
///
/// Each part is optional and taken in that order; what follows the last part is the image URL
/// (percent-encoded or plain; a bare host gets `http://`). One difference from thumbor: an
/// unknown filter is a 400 naming it, where thumbor ignores it (a silently different image is
/// worse for a cache).
///
/// ```swift
/// let request = try ThumborURL.parse("/unsafe/fit-in/256x256/filters:quality(70)/example.com/cat.jpg")
/// request.operations.width   // 256
/// ```
public enum ThumborURL {
    /// Parses a thumbor path (signature segment included); throws 400s for malformed parts or unknown filters.
    public static func parse(_ path: String) throws(ImageServiceError) -> ImageRequest {
        guard path.hasPrefix("/") else { throw .malformed("the path must start with '/'") }
        var rest = Substring(path.dropFirst())
        guard let slash = rest.firstIndex(of: "/") else { throw .malformed("the path has no image") }
        let first = String(rest[..<slash])
        let decodedFirst = first.percentDecoded ?? first
        let signature: String? = decodedFirst == "unsafe" ? nil : decodedFirst
        rest = rest[rest.index(after: slash)...]
        let signedPath = String(rest)
        var operations = ImageOperations()
        operations.resizeMode = .fill

        if take("meta/", from: &rest) { operations.metadataOnly = true }
        if let segment = segment(of: rest), segment.hasPrefix("trim"), let trim = parseTrim(segment) {
            operations.trim = trim
            rest = rest.dropFirst(segment.count + 1)
        }
        if let segment = segment(of: rest), let crop = parseCrop(segment) {
            operations.crop = crop
            rest = rest.dropFirst(segment.count + 1)
        }
        let (fitIn, full) = takeFitIn(from: &rest, into: &operations)
        let hasSize = takeSize(from: &rest, into: &operations)
        takeAlignment(from: &rest, into: &operations)
        if fitIn {
            operations.resizeMode = full ? .cover : .fit
            operations.enlarge = full  // thumbor: fit-in never upscales; full-fit-in does
        } else {
            operations.adaptive = false
            operations.enlarge = true  // thumbor: a plain WxH upscales
        }
        if !hasSize && !fitIn { operations.resizeMode = .fill }

        if rest.hasPrefix("filters:") {
            // The filter list ends at the first ")/" (thumbor's own rule), since arguments
            // (a watermark's URL) may hold slashes.
            guard let end = rest.utf8Range(of: ")/") else { throw .malformed("the filters are not closed by ')/'") }
            let list = rest[rest.index(rest.startIndex, offsetBy: "filters:".count)..<rest.index(after: end.lowerBound)]
            try applyFilters(list, to: &operations)
            rest = rest[end.upperBound...]
        }
        guard !rest.isEmpty else { throw .malformed("the path has no image") }
        var source = try ImageRequest.sourceURL(String(rest), addsScheme: true)
        if operations.extractsFocal {
            operations.extractsFocal = false
            if let (inner, crop) = innerCrop(of: source) {
                source = inner
                operations.gravity = .focalRegion(
                    left: crop.left, top: crop.top, right: crop.right, bottom: crop.bottom)
            }
        }
        return ImageRequest(
            grammar: .thumbor, signature: signature, signedPath: signedPath, operations: operations, source: source)
    }

    // MARK: Parts

    /// `[adaptive-][full-]fit-in/`: whether it is there and `full-`; a segment that only ends in
    /// `fit-in` is left for the parts after it.
    private static func takeFitIn(from rest: inout Substring, into operations: inout ImageOperations)
        -> (fitIn: Bool, full: Bool)
    {
        guard let segment = segment(of: rest), segment.hasSuffix("fit-in") else { return (false, false) }
        var name = Substring(segment)
        let adaptive = name.hasPrefix("adaptive-")
        if adaptive { name = name.dropFirst("adaptive-".count) }
        let full = name.hasPrefix("full-")
        if full { name = name.dropFirst("full-".count) }
        guard name == "fit-in" else { return (false, false) }
        operations.adaptive = adaptive
        rest = rest.dropFirst(segment.count + 1)
        return (true, full)
    }

    /// `[-]Wx[-]H/` (`orig` for a side, `-` to flip it): whether it is there.
    private static func takeSize(from rest: inout Substring, into operations: inout ImageOperations) -> Bool {
        guard let segment = segment(of: rest), let size = parseSize(segment) else { return false }
        (operations.width, operations.widthIsOriginal, operations.flipHorizontal) = size.width
        (operations.height, operations.heightIsOriginal, operations.flipVertical) = size.height
        rest = rest.dropFirst(segment.count + 1)
        return true
    }

    /// `[left|center|right/][top|middle|bottom/][smart/]`: the gravity.
    private static func takeAlignment(from rest: inout Substring, into operations: inout ImageOperations) {
        var horizontal = "center", vertical = "middle"
        if let segment = segment(of: rest), ["left", "right", "center"].contains(segment) {
            horizontal = segment
            rest = rest.dropFirst(segment.count + 1)
        }
        if let segment = segment(of: rest), ["top", "bottom", "middle"].contains(segment) {
            vertical = segment
            rest = rest.dropFirst(segment.count + 1)
        }
        operations.gravity = gravity(horizontal: horizontal, vertical: vertical)
        if take("smart/", from: &rest) { operations.gravity = .smart }
    }

    private static func segment(of rest: Substring) -> String? {
        // Bytes, not Characters: "/" is ASCII, and the search runs several times a request.
        guard let slash = rest.utf8.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        return String(rest[..<slash])
    }

    private static func take(_ prefix: String, from rest: inout Substring) -> Bool {
        guard rest.hasPrefix(prefix) else { return false }
        rest = rest.dropFirst(prefix.count)
        return true
    }

    /// `trim`, `trim:top-left`, `trim:bottom-right`, each with an optional `:TOLERANCE`. As in
    /// thumbor, the second part is the corner and only a third part is the tolerance: `trim:50`
    /// names a corner that is not `top-left`, so thumbor trims from the bottom-right corner with
    /// tolerance 0, and so does this.
    /// thumbor's `extract_focal()`: when the source is itself a thumbor URL (at any depth, ten at
    /// most) with a manual crop, the image it names is loaded instead and the crop becomes the
    /// focal region; otherwise nothing changes.
    static func innerCrop(of source: URL) -> (URL, (left: Int, top: Int, right: Int, bottom: Int))? {
        var url = source.absoluteString
        for _ in 0..<10 {
            // Drop the scheme and host: what follows is a thumbor path, or not.
            if let scheme = url.utf8Range(of: "://") { url = String(url[scheme.upperBound...]) }
            guard let slash = url.firstIndex(of: "/") else { return nil }
            guard let inner = try? parse(String(url[slash...])) else { return nil }
            if case .region(let left, let top, let right, let bottom)? = inner.operations.crop {
                return (inner.source, (left, top, right, bottom))
            }
            url = inner.source.absoluteString
        }
        return nil
    }

    static func parseTrim(_ segment: String) -> ImageOperations.Trim? {
        let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.first == "trim", parts.count <= 3 else { return nil }
        var trim = ImageOperations.Trim()
        if parts.count > 1 {
            if let reference = ImageOperations.Trim.Reference(rawValue: parts[1]) {
                trim.reference = reference
            } else if parts.count == 2, let number = Int(parts[1]), number >= 0 {
                trim.reference = .bottomRight
            } else {
                return nil
            }
        }
        if parts.count > 2 {
            guard let tolerance = Int(parts[2]), tolerance >= 0, tolerance <= 442 else { return nil }
            trim.tolerance = Double(tolerance)
        }
        return trim
    }

    /// `AxB:CxD` (left, top, right, bottom).
    static func parseCrop(_ segment: String) -> ImageOperations.Crop? {
        let corners = segment.split(separator: ":", omittingEmptySubsequences: false)
        guard corners.count == 2 else { return nil }
        let numbers = corners.flatMap { $0.split(separator: "x", omittingEmptySubsequences: false) }.map { Int($0) }
        guard numbers.count == 4, numbers.allSatisfy({ $0 != nil && $0! >= 0 }) else { return nil }
        let values = numbers.map { $0! }
        return .region(left: values[0], top: values[1], right: values[2], bottom: values[3])
    }

    /// `[-]Wx[-]H`, each side a number, `orig` or empty.
    static func parseSize(_ segment: String) -> (width: (Int, Bool, Bool), height: (Int, Bool, Bool))? {
        let sides = segment.split(separator: "x", omittingEmptySubsequences: false)
        guard sides.count == 2 else { return nil }
        func side(_ text: Substring) -> (Int, Bool, Bool)? {
            var text = text
            let flip = text.hasPrefix("-")
            if flip { text = text.dropFirst() }
            if text.isEmpty { return (0, false, flip) }
            if text == "orig" { return (0, true, flip) }
            guard text.allSatisfy(\.isASCII), let value = Int(text), value >= 0, value <= 100_000 else { return nil }
            return (value, false, flip)
        }
        guard let width = side(sides[0]), let height = side(sides[1]) else { return nil }
        return (width, height)
    }

    static func gravity(horizontal: String, vertical: String) -> ImageOperations.Gravity {
        switch (horizontal, vertical) {
        case ("left", "top"): return .northWest
        case ("center", "top"): return .north
        case ("right", "top"): return .northEast
        case ("left", "middle"): return .west
        case ("right", "middle"): return .east
        case ("left", "bottom"): return .southWest
        case ("center", "bottom"): return .south
        case ("right", "bottom"): return .southEast
        default: return .center
        }
    }

    // MARK: Filters
}
