import Foundation

/// How many bytes an XML document's internal entities add when expanded, counted from its DTD
/// before any parser sees it.
///
/// libxml2 2.9 refuses the exponential "billion laughs" but not the quadratic blow-up: one entity
/// of 100 KB referenced 10 000 times is a gigabyte of text, which librsvg 2.54 then holds. This
/// reads the internal subset (`<!DOCTYPE svg [ … ]>`), computes each general entity's expanded
/// length (references inside entity values included; a cycle is refused), counts the references
/// in the rest of the document, and refuses the document when the expansion would add more
/// than the limit. Parameter entities (`<!ENTITY % …>`) and entity references in attribute
/// defaults (expanded once per element) are refused outright; external entities add nothing
/// (nothing external is loaded).
enum SVGEntityBudget {
    /// Throws `decompressionBomb` when the internal entities would add more than `limit` bytes,
    /// `unsupportedFormat` for the constructs refused outright.
    static func check(_ bytes: UnsafeRawBufferPointer, limit: Int) throws(ImageError) {
        guard let subset = internalSubset(bytes) else { return }
        let declarations = try entityDeclarations(bytes, subset: subset)
        guard !declarations.isEmpty else { return }
        var expanded: [String: Int] = [:]
        var visiting: Set<String> = []
        // Lengths saturate far above any limit (and far below overflow).
        let ceiling = Int.max / 4
        func length(of name: String) throws(ImageError) -> Int {
            if let known = expanded[name] { return known }
            guard let value = declarations[name] else { return 0 }  // undeclared or external
            guard visiting.insert(name).inserted else {
                throw ImageError(.badImageData, "SVG: the entity '\(name)' refers to itself")
            }
            var total = value.count
            for reference in references(in: value) {
                total = min(ceiling, total + max(0, try length(of: reference) - (reference.utf8.count + 2)))
            }
            visiting.remove(name)
            expanded[name] = total
            return total
        }
        var added = 0
        let body = UnsafeRawBufferPointer(rebasing: bytes[subset.upperBound...])
        for reference in references(in: body) {
            added = min(ceiling, added + max(0, try length(of: reference) - (reference.utf8.count + 2)))
        }
        guard added <= limit else {
            throw ImageError(
                .decompressionBomb, "SVG: its entities would expand the document by more than \(limit) bytes")
        }
    }

    /// The document with its internal entities expanded in place and its DOCTYPE removed, or nil
    /// when it declares none (the bytes are used as they are). libxml2 then never sees an entity
    /// declaration: librsvg 2.54 leaks every entity value it parses (found by `make fuzz`), and
    /// the budget ``check(_:limit:)`` applied is exact. References in comments and CDATA
    /// sections stay as written; undeclared ones (an external DTD's) stay, for the parser to
    /// refuse as before.
    static func expandedDocument(_ bytes: UnsafeRawBufferPointer, limit: Int) throws(ImageError) -> [UInt8]? {
        try check(bytes, limit: limit)
        // A declaration anywhere else (a second DOCTYPE, one the prolog scan did not reach) would
        // still reach libxml2: refused, as nothing but a malformed document has one.
        func refuseStrayDeclarations<Bytes: Collection<UInt8>>(_ text: Bytes) throws(ImageError)
        where Bytes.Index == Int {
            if find(Array("<!ENTITY".utf8), in: text, from: text.startIndex) != nil {
                throw ImageError(.badImageData, "SVG: an entity declaration outside the document's DTD")
            }
        }
        guard let (start, subset) = doctype(bytes) else {
            try refuseStrayDeclarations(bytes)
            return nil
        }
        let declarations = try entityDeclarations(bytes, subset: subset)
        guard !declarations.isEmpty else {
            try refuseStrayDeclarations(UnsafeRawBufferPointer(rebasing: bytes[subset.upperBound...]))
            return nil
        }
        var end = subset.upperBound + 1
        while end < bytes.count, isSpace(bytes[end]) { end += 1 }
        guard subset.upperBound < bytes.count, end < bytes.count, bytes[end] == UInt8(ascii: ">") else {
            throw ImageError(.badImageData, "SVG: the DOCTYPE does not end")
        }
        var expansions: [String: [UInt8]] = [:]
        func expansion(of name: String) -> [UInt8]? {
            if let known = expansions[name] { return known }
            guard let value = declarations[name] else { return nil }
            let expanded = substitute(value, skipsMarkup: false)  // no cycles: `check` refused them
            expansions[name] = expanded
            return expanded
        }
        func substitute<Bytes: Collection<UInt8>>(_ text: Bytes, skipsMarkup: Bool) -> [UInt8]
        where Bytes.Index == Int {
            var out: [UInt8] = []
            out.reserveCapacity(text.count)
            var index = text.startIndex
            while index < text.endIndex {
                let byte = text[index]
                if skipsMarkup, byte == UInt8(ascii: "<"),
                    let (open, close) = [("<!--", "-->"), ("<![CDATA[", "]]>")].first(where: {
                        text[index...].starts(with: $0.0.utf8)
                    })
                {
                    let closing = Array(close.utf8)
                    var stop = index + open.utf8.count
                    while stop < text.endIndex, !text[stop...].starts(with: closing) { stop += 1 }
                    stop = min(text.endIndex, stop + closing.count)
                    out.append(contentsOf: text[index..<stop])
                    index = stop
                    continue
                }
                if byte == UInt8(ascii: "&"),
                    let semicolon = text[index...].prefix(258).firstIndex(of: UInt8(ascii: ";")),
                    let replacement = expansion(of: String(decoding: text[(index + 1)..<semicolon], as: UTF8.self))
                {
                    out.append(contentsOf: replacement)
                    index = semicolon + 1
                    continue
                }
                out.append(byte)
                index += 1
            }
            return out
        }
        let expanded =
            Array(bytes[..<start])
            + substitute(UnsafeRawBufferPointer(rebasing: bytes[(end + 1)...]), skipsMarkup: true)
        try refuseStrayDeclarations(expanded)
        return expanded
    }

    /// The byte range of the internal subset (between `[` and `]`), when the document has one.
    /// Only the prolog is read (a byte-order mark, white space, the XML declaration, comments and
    /// processing instructions): a `<!DOCTYPE` anywhere else is no DTD.
    private static func internalSubset(_ bytes: UnsafeRawBufferPointer) -> Range<Int>? {
        doctype(bytes)?.subset
    }

    /// Where the DOCTYPE starts, and its internal subset.
    private static func doctype(_ bytes: UnsafeRawBufferPointer) -> (start: Int, subset: Range<Int>)? {
        var index = matches([0xEF, 0xBB, 0xBF], bytes, at: 0) ? 3 : 0
        while true {
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "<") else { return nil }
            if matches(Array("<!DOCTYPE".utf8), bytes, at: index) { break }
            guard matches(Array("<?".utf8), bytes, at: index) || matches(Array("<!--".utf8), bytes, at: index),
                let next = markupEnd(bytes, from: index)
            else { return nil }  // the root element: no DTD
            index = next
        }
        let start = index
        // A DOCTYPE without an internal subset ends at its `>`.
        guard
            let open = firstUnquoted(
                bytes, from: start + 9, where: { $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: "[") }),
            bytes[open] == UInt8(ascii: "[")
        else { return nil }
        let first = open + 1
        guard let end = subsetEnd(bytes, from: first) else { return (start, first..<bytes.count) }
        return (start, first..<end)
    }

    /// The first byte from `start` on, outside single or double quotes, that `stops` accepts.
    private static func firstUnquoted(
        _ bytes: UnsafeRawBufferPointer, from start: Int, where stops: (UInt8) -> Bool
    ) -> Int? {
        var quote: UInt8?
        for index in start..<max(start, bytes.count) {
            let byte = bytes[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if stops(byte) {
                return index
            }
        }
        return nil
    }

    /// Where the internal subset's closing `]` is: declarations are skipped whole (quoted
    /// values may hold `]` and `>`), as are comments and processing instructions.
    private static func subsetEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "]"):
                return index
            case UInt8(ascii: "<"):
                guard let next = markupEnd(bytes, from: index) else { return nil }
                index = next
            default:
                index += 1
            }
        }
        return nil
    }

    /// The index after the markup declaration, comment or processing instruction at `start`.
    private static func markupEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        if matches(Array("<!--".utf8), bytes, at: start) {
            return find(Array("-->".utf8), in: bytes, from: start + 4).map { $0 + 3 }
        }
        if matches(Array("<?".utf8), bytes, at: start) {
            return find(Array("?>".utf8), in: bytes, from: start + 2).map { $0 + 2 }
        }
        return firstUnquoted(bytes, from: start + 1, where: { $0 == UInt8(ascii: ">") }).map { $0 + 1 }
    }

    /// The internal general entities and their literal values; external ones are left out.
    private static func entityDeclarations(_ bytes: UnsafeRawBufferPointer, subset: Range<Int>) throws(ImageError)
        -> [String: [UInt8]]
    {
        var declarations: [String: [UInt8]] = [:]
        var index = subset.lowerBound
        while index < subset.upperBound {
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            let end = min(subset.upperBound, markupEnd(bytes, from: index) ?? subset.upperBound)
            let declaration = Array(bytes[index..<end])
            index = end
            if declaration.starts(with: Array("<!ATTLIST".utf8)), references(in: declaration).first != nil {
                throw ImageError(.unsupportedFormat, "SVG: entity references in attribute defaults are not supported")
            }
            guard declaration.starts(with: Array("<!ENTITY".utf8)) else { continue }
            var fields = ArraySlice(declaration.dropFirst(8))
            skipSpaces(&fields)
            if fields.first == UInt8(ascii: "%") {
                throw ImageError(.unsupportedFormat, "SVG: parameter entities are not supported")
            }
            let name = String(decoding: fields.prefix { !isSpace($0) && $0 != UInt8(ascii: ">") }, as: UTF8.self)
            fields = fields.drop { !isSpace($0) && $0 != UInt8(ascii: ">") }
            skipSpaces(&fields)
            guard let open = fields.first, open == UInt8(ascii: "\"") || open == UInt8(ascii: "'") else {
                continue  // SYSTEM or PUBLIC: external, never loaded
            }
            let value = fields.dropFirst().prefix { $0 != open }
            if declarations[name] == nil { declarations[name] = Array(value) }  // the first declaration wins
        }
        return declarations
    }

    /// The names of the general entity references (`&name;`) in `text`; character references
    /// (`&#…;`) are not entities.
    private static func references<Bytes: Collection<UInt8>>(in text: Bytes) -> [String] where Bytes.Index == Int {
        var names: [String] = []
        var index = text.startIndex
        while index < text.endIndex {
            guard text[index] == UInt8(ascii: "&") else {
                index += 1
                continue
            }
            var end = index + 1
            while end < text.endIndex, end - index <= 256, text[end] != UInt8(ascii: ";"), !isSpace(text[end]),
                text[end] != UInt8(ascii: "&"), text[end] != UInt8(ascii: "<")
            {
                end += 1
            }
            if end < text.endIndex, text[end] == UInt8(ascii: ";"), end > index + 1,
                text[index + 1] != UInt8(ascii: "#")
            {
                names.append(String(decoding: text[(index + 1)..<end], as: UTF8.self))
            }
            index = end
        }
        return names
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func skipSpaces(_ slice: inout ArraySlice<UInt8>) {
        while let first = slice.first, isSpace(first) { slice = slice.dropFirst() }
    }

    private static func matches(_ pattern: [UInt8], _ bytes: UnsafeRawBufferPointer, at index: Int) -> Bool {
        guard index + pattern.count <= bytes.count else { return false }
        for (offset, byte) in pattern.enumerated() where bytes[index + offset] != byte { return false }
        return true
    }

    private static func find<Bytes: Collection<UInt8>>(_ pattern: [UInt8], in bytes: Bytes, from start: Int) -> Int?
    where Bytes.Index == Int {
        var index = start
        while index + pattern.count <= bytes.endIndex {
            if bytes[index] == pattern[0], bytes[index..<(index + pattern.count)].elementsEqual(pattern) {
                return index
            }
            index += 1
        }
        return nil
    }
}
