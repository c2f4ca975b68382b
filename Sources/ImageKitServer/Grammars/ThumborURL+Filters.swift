import Foundation

// thumbor's filters: `filters:name(arguments):…`, each read into the operations with its
// arguments checked (a bad one is a 400 before anything is fetched).
extension ThumborURL {
    /// `NAME(ARGS):NAME(ARGS)…`, split at the colons outside parentheses.
    static func splitFilters(_ list: Substring) throws(ImageServiceError) -> [(name: String, arguments: [String])] {
        var filters: [(String, [String])] = []
        var index = list.startIndex
        while index < list.endIndex {
            guard let open = list[index...].firstIndex(of: "(") else { throw .malformed("a filter has no '('") }
            let name = String(list[index..<open])
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0 == "_" }) else {
                throw .malformed("'\(name.prefix(40))' is not a filter name")
            }
            var depth = 0
            var close: Substring.Index?
            var cursor = open
            while cursor < list.endIndex {
                if list[cursor] == "(" { depth += 1 }
                if list[cursor] == ")" {
                    depth -= 1
                    if depth == 0 { close = cursor; break }
                }
                cursor = list.index(after: cursor)
            }
            guard let close else { throw .malformed("filter '\(name)' is not closed") }
            let inside = list[list.index(after: open)..<close]
            filters.append(
                (
                    name,
                    inside.isEmpty
                        ? []
                        : inside.split(separator: ",", omittingEmptySubsequences: false).map {
                            $0.trimmingCharacters(in: .whitespaces)
                        }
                ))
            index = list.index(after: close)
            if index < list.endIndex {
                guard list[index] == ":" else { throw .malformed("filters are separated by ':'") }
                index = list.index(after: index)
            }
        }
        return filters
    }

    static func applyFilters(_ list: Substring, to operations: inout ImageOperations) throws(ImageServiceError) {
        for (name, values) in try splitFilters(list) {
            guard let reader = filterReaders[name] else {
                throw ImageServiceError(.unknownFilter, "unknown filter '\(name)'")
            }
            let arguments = FilterArguments(filter: name, values: values)
            if let counts = reader.counts { try arguments.expect(counts) }
            try reader.read(arguments, &operations)
        }
    }

    /// `curve([(x,y),…],[…],[…],[…])`: the list split on commas comes back as four bracketed
    /// lists of points, x rising within 0…255.
    static func curve(_ arguments: [String]) throws(ImageServiceError) -> ImageOperations.Filter {
        let text = arguments.joined(separator: ",").filter { !$0.isWhitespace }
        var lists: [[Int]] = []
        var current: [Int]?
        var number = ""
        for character in text {
            switch character {
            case "[": current = []
            case "]":
                guard let points = current else { break }
                lists.append(points)
                current = nil
            case "0"..."9": number.append(character)
            case ",", ")":
                if !number.isEmpty, current != nil { current?.append(Int(number) ?? 256) }
                number = ""
            default: break
            }
        }
        let valid =
            lists.count == 4
            && lists.allSatisfy { points in
                !points.isEmpty && points.count % 2 == 0 && points.allSatisfy { (0...255).contains($0) }
                    && stride(from: 2, to: points.count, by: 2).allSatisfy { points[$0] > points[$0 - 2] }
            }
        guard valid else {
            throw ImageServiceError(
                .invalidFilterArgument, "curve: four lists of points [(x,y),…] with x rising in 0…255 were expected")
        }
        return .curve(all: lists[0], red: lists[1], green: lists[2], blue: lists[3])
    }

    /// thumbor-video-engine's still position: `12`, `1.5`, `00:12`, `01:02:03.25`; a negative
    /// one is the start. Nil when it is none of those.
    static func position(_ text: String) -> Double? {
        let negative = text.hasPrefix("-")
        let parts = (negative ? String(text.dropFirst()) : text).split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var seconds = 0.0
        for (index, part) in parts.enumerated() {
            let isLast = index == parts.count - 1
            guard !part.isEmpty, part.allSatisfy({ $0.isASCII && ($0.isNumber || (isLast && $0 == ".")) }),
                let value = Double(part), value.isFinite
            else { return nil }
            if parts.count > 1 && part.split(separator: ".")[0].count != 2 { return nil }
            seconds = seconds * 60 + value
        }
        if negative { return 0 }
        return seconds <= 864_000 ? seconds : nil
    }
}

/// One thumbor filter's reader (a row of ``ThumborURL/filterReaders``; its spelling back is in
/// `ThumborURL+Rendering.swift`).
typealias ThumborFilterReader = OptionReader<FilterArguments>

/// One option's reader in a grammar's table: how many arguments it takes (nil: it checks them
/// itself) and what it sets in the operations.
struct OptionReader<Arguments>: Sendable {
    var counts: ClosedRange<Int>?
    var read: @Sendable (Arguments, inout ImageOperations) throws(ImageServiceError) -> Void

    init(
        _ counts: ClosedRange<Int>?,
        _ read: @escaping @Sendable (Arguments, inout ImageOperations) throws(ImageServiceError) -> Void
    ) {
        self.counts = counts
        self.read = read
    }
}

/// A filter's arguments, read with the filter's name in every error (a 400 before anything is fetched).
struct FilterArguments {
    var filter: String
    var values: [String]

    var count: Int { values.count }
    var isEmpty: Bool { values.isEmpty }
    subscript(index: Int) -> String { values[index] }

    func expect(_ counts: ClosedRange<Int>) throws(ImageServiceError) {
        guard counts.contains(values.count) else {
            let range =
                counts.lowerBound == counts.upperBound
                ? "\(counts.lowerBound)" : "\(counts.lowerBound) to \(counts.upperBound)"
            throw ImageServiceError(.invalidFilterArgument, "\(filter) takes \(range) arguments")
        }
    }

    func int(_ text: String?, in range: ClosedRange<Int>) throws(ImageServiceError) -> Int {
        guard let text, let value = Int(text), range.contains(value) else {
            throw ImageServiceError(
                .invalidFilterArgument, "\(filter): '\(text ?? "")' is not a whole number in \(range)")
        }
        return value
    }

    func int(_ index: Int, in range: ClosedRange<Int>) throws(ImageServiceError) -> Int {
        try int(values[index], in: range)
    }

    func double(_ index: Int, in range: ClosedRange<Double>) throws(ImageServiceError) -> Double {
        guard let value = Double(values[index]), value.isFinite, range.contains(value) else {
            throw ImageServiceError(
                .invalidFilterArgument, "\(filter): '\(values[index])' is not a number in \(range)")
        }
        return value
    }

    /// The argument at `index` when given and not `none`.
    func optionalDouble(_ index: Int, in range: ClosedRange<Double>) throws(ImageServiceError) -> Double? {
        index < values.count && values[index] != "none" ? try double(index, in: range) : nil
    }

    /// `true`/`1` or `false`/`0`; `absent` when the argument is not given.
    func bool(_ index: Int, absent: Bool = false) throws(ImageServiceError) -> Bool {
        guard index < values.count else { return absent }
        switch values[index].lowercased() {
        case "true", "1": return true
        case "false", "0": return false
        default:
            throw ImageServiceError(.invalidFilterArgument, "\(filter): '\(values[index])' is not true or false")
        }
    }

    func color(_ index: Int) throws(ImageServiceError) -> ImageOperations.Color {
        guard let color = ImageOperations.Color(urlText: values[index]) else {
            throw ImageServiceError(.invalidFilterArgument, "\(filter): '\(values[index])' is not a colour")
        }
        return color
    }
}
