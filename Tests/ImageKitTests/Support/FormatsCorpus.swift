import Foundation
import XCTest

@testable import ImageKit

/// The formats corpus: HEIF, AVIF, JPEG XL, TIFF, BMP, ICO and ICC-tagged files, each with
/// reference pixels under `ref/`. The full corpus when it is there (`IMAGEKIT_FORMATS_CORPUS`, or
/// `../shared/formats-corpus` beside the checkout), else the subset in `Tests/Corpus/formats`.
enum FormatsCorpus {
    struct Entry {
        var path: String
        var format: String
        var kind: String
        var isValid: Bool
        var width: Int?
        var height: Int?
        var frames: Int?
        /// `key=value;...` other accepted values (`frames=3` for a multi-page TIFF).
        var also: String
        /// exact, psnr, icc, none or error.
        var compare: String
        var iccEffectDB: Double?
        var referenceSHA256: String
        var alternateSHA256: String
        /// `dec` / `cms` → dB: how close a second decoder or colour engine comes.
        var alternatePSNR: [String: Double]

        var data: Data { get throws { try Data(contentsOf: FormatsCorpus.root.appendingPathComponent(path)) } }
        var referenceURL: URL { FormatsCorpus.root.appendingPathComponent("ref/\(path).png") }
        var rawReferenceURL: URL { FormatsCorpus.root.appendingPathComponent("ref/\(path).raw.png") }
    }

    static let location = Corpus.locate(
        shared: "formats-corpus", subset: "formats", environment: "IMAGEKIT_FORMATS_CORPUS")
    static var root: URL { location.root }
    static var isFull: Bool { location.isFull }

    static let entries: [Entry] = {
        guard let text = try? String(contentsOf: root.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8) else {
            return []
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        guard let header = lines.first else { return [] }
        lines.removeFirst()
        func column(_ name: String) -> Int { header.firstIndex(of: name) ?? Int.max }
        let path = column("path"), format = column("format"), kind = column("kind"), valid = column("valid")
        let width = column("width"), height = column("height"), frames = column("frames"), also = column("also")
        let compare = column("compare"), effect = column("icc_effect_db"), ref = column("ref_sha256"),
            alt = column("alt_sha256")
        let altPSNR = column("alt_psnr")
        return lines.compactMap { fields in
            func field(_ index: Int) -> String { index < fields.count ? fields[index] : "" }
            guard !field(path).isEmpty else { return nil }
            var alternates: [String: Double] = [:]
            let words = field(altPSNR).split(separator: " ")
            for pair in stride(from: 0, to: words.count - 1, by: 2) {
                alternates[String(words[pair])] = Double(words[pair + 1])
            }
            return Entry(
                path: field(path), format: field(format), kind: field(kind), isValid: field(valid) == "yes",
                width: Int(field(width)), height: Int(field(height)), frames: Int(field(frames)), also: field(also),
                compare: field(compare), iccEffectDB: Double(field(effect)), referenceSHA256: field(ref),
                alternateSHA256: field(alt), alternatePSNR: alternates)
        }
    }()

    /// `full` on the full corpus; on the subset, the same share of the subset's files.
    static func minimum(_ full: Int) -> Int {
        isFull ? full : full * entries.count * 9 / (122 * 10)
    }

    /// Fails the calling test (rather than passing vacuously) when the corpus is missing.
    static func requireEntries(file: StaticString = #filePath, line: UInt = #line) throws -> [Entry] {
        guard entries.count >= (isFull ? 100 : 50) else {
            throw Corpus.Missing(message: "formats corpus manifest not found or short at \(root.path)")
        }
        return entries
    }

    /// The manifest row of `path`; a test asking for a file the corpus lacks fails.
    static func entry(_ path: String) throws -> Entry {
        guard let entry = entries.first(where: { $0.path == path }) else {
            throw Corpus.Missing(message: "\(path) is not in the formats corpus at \(root.path)")
        }
        return entry
    }

    /// A reference PNG's pixels (they carry no profile; decoded as stored).
    static func reference(_ url: URL) throws -> Bitmap {
        var options = ImageDecodingOptions()
        options.keepsColorProfile = true
        return try PNGCoder().decode(Data(contentsOf: url), options: options).bitmap
    }
}

/// PSNR over RGBA with fully transparent pixels cleared to 0,0,0,0 in both (the corpus'
/// convention: the colour under alpha 0 is not part of the image). 99 for identical pixels.
func clearedPSNR(_ a: Bitmap, _ b: Bitmap) -> Double {
    guard a.width == b.width, a.height == b.height else { return -1 }
    let x = a.packedRGBA(clearingTransparent: true), y = b.packedRGBA(clearingTransparent: true)
    var sum = 0.0
    for index in x.indices {
        let difference = Double(x[index]) - Double(y[index])
        sum += difference * difference
    }
    let mse = sum / Double(x.count)
    return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
}
