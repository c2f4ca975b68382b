import Foundation

/// Progressive JPEG state: scans counted incrementally, from where the last count stopped.
struct JPEGProgress {
    /// Where the marker search resumes.
    private var offset = 2
    private var scansStarted = 0
    private var sawEnd = false
    private var previewedScans = 0
    private var previewedBytes = 0
    private var isProgressive = false
    private var madeFirstScansPreview = false
    private var dcPreviewIsFinal = false

    /// Complete scans: a scan is complete once the marker after it (another SOS, a table, EOI)
    /// has arrived.
    private mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Int {
        var completed = max(0, scansStarted - 1)
        while offset + 1 < bytes.count {
            guard bytes[offset] == 0xFF else { offset += 1; continue }
            let marker = bytes[offset + 1]
            switch marker {
            case 0x00, 0xFF, 0x01, 0xD0...0xD7, 0xD8:
                offset += marker == 0xFF ? 1 : 2  // stuffed byte, fill, restart markers: inside a scan
            case 0xD9:
                sawEnd = true
                offset += 2
            case 0xDA:
                scansStarted += 1
                offset += 2
            default:
                // A segment with a length: skip its payload (tables between scans, headers).
                guard offset + 3 < bytes.count else { return max(0, scansStarted - 1) + (sawEnd ? 1 : 0) }
                if marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE { isProgressive = true }
                let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
                guard offset + 2 + length <= bytes.count else { return max(0, scansStarted - 1) + (sawEnd ? 1 : 0) }
                offset += 2 + length
            }
            completed = max(0, scansStarted - 1) + (sawEnd ? 1 : 0)
        }
        return completed
    }

    mutating func preview(_ data: Data, options: ImageDecodingOptions) -> DecodedImage? {
        let completed = data.withUnsafeBytes { scan($0) }
        if isProgressive, !madeFirstScansPreview, scansStarted > 0 {
            // The first preview from the DC scans alone, as soon as they are here (before the
            // marker after them), when they come first (libjpeg's script); otherwise, and for
            // every later scan, TurboJPEG's decode of what has arrived.
            if let image = JPEGCoder.firstScansPreview(data, options: options) {
                madeFirstScansPreview = true
                // A thumbnail of at most 1/8 scale is the final picture already: later scans
                // could only refine the DC's last bits, so no further previews.
                if case .ready = JPEGCoder.firstScans(data, options: options) { dcPreviewIsFinal = true }
                previewedScans = max(previewedScans, completed)
                previewedBytes = data.count
                return image
            }
            if completed == 0 { return nil }
            madeFirstScansPreview = true
        }
        if dcPreviewIsFinal { return nil }
        if isProgressive {
            // Progressive: a new preview per completed scan.
            guard completed > previewedScans else { return nil }
            previewedScans = completed
        } else {
            // Baseline: rows arrive in order; re-decode when a further eighth of the data is here.
            guard scansStarted > 0, data.count - previewedBytes >= max(4096, data.count / 8) else { return nil }
        }
        var previewOptions = options
        previewOptions.allowsPartialImages = true
        guard let image = try? JPEGCoder().decode(data, options: previewOptions) else { return nil }
        previewedBytes = data.count
        return image
    }
}

extension JPEGCoder: ProgressiveImageDecoding {
    /// Previews from each completed scan (the first from the DC scans alone) or band of rows.
    public func makeProgressiveSession(for signature: ImageSignature, options: ImageDecodingOptions) -> (
        any ProgressiveDecodingSession
    )? {
        ProgressiveEngineSession(JPEGProgress(), options: options) { $0.preview($1, options: $2) }
    }
}
