internal import CImageCodecs
import Foundation
import Synchronization

/// The transfer function of a high-dynamic-range source, which ImageKit tone-maps to SDR sRGB
/// when it decodes one (``DecodedImage/hdrTransfer``).
public enum HDRTransfer: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// SMPTE ST 2084 perceptual quantizer (CICP transfer 16): absolute light up to 10 000 cd/m².
    case pq
    /// ARIB STD-B67 hybrid log-gamma (CICP transfer 18): scene light, shown on a 1000 cd/m²
    /// reference display.
    case hlg

    /// The transfer that CICP's `transfer_characteristics` code names, nil for an SDR one.
    public init?(cicpTransfer code: Int) {
        switch code {
        case 16: self = .pq
        case 18: self = .hlg
        default: return nil
        }
    }

    /// "PQ" or "HLG".
    public var description: String { rawValue.uppercased() }
}

/// The colour primaries of an HDR source (CICP `colour_primaries`), as xy chromaticities.
struct ColorPrimaries: Hashable, Sendable {
    var red: (x: Double, y: Double)
    var green: (x: Double, y: Double)
    var blue: (x: Double, y: Double)
    var white: (x: Double, y: Double)

    static let bt709 = ColorPrimaries(
        red: (0.640, 0.330), green: (0.300, 0.600), blue: (0.150, 0.060), white: (0.3127, 0.3290))
    static let bt2020 = ColorPrimaries(
        red: (0.708, 0.292), green: (0.170, 0.797), blue: (0.131, 0.046), white: (0.3127, 0.3290))
    /// Display P3 (SMPTE EG 432-1: P3 primaries, D65 white).
    static let displayP3 = ColorPrimaries(
        red: (0.680, 0.320), green: (0.265, 0.690), blue: (0.150, 0.060), white: (0.3127, 0.3290))

    /// The primaries a CICP code names; an HDR source with unspecified (2) or other primaries is
    /// taken as BT.2020, HDR10's.
    init(cicp code: Int) {
        switch code {
        case 1: self = .bt709
        case 11, 12: self = .displayP3
        default: self = .bt2020
        }
    }

    init(red: (Double, Double), green: (Double, Double), blue: (Double, Double), white: (Double, Double)) {
        self.red = red
        self.green = green
        self.blue = blue
        self.white = white
    }

    static func == (a: ColorPrimaries, b: ColorPrimaries) -> Bool {
        a.red == b.red && a.green == b.green && a.blue == b.blue && a.white == b.white
    }

    func hash(into hasher: inout Hasher) {
        for value in [red.x, red.y, green.x, green.y, blue.x, blue.y, white.x, white.y] { hasher.combine(value) }
    }

    /// Linear RGB in these primaries to CIE XYZ (rows X, Y, Z).
    var toXYZ: [Double] {
        func column(_ p: (x: Double, y: Double)) -> [Double] { [p.x / p.y, 1, (1 - p.x - p.y) / p.y] }
        let r = column(red), g = column(green), b = column(blue), w = column(white)
        let m = [r[0], g[0], b[0], r[1], g[1], b[1], r[2], g[2], b[2]]
        let s = Self.solve(m, w)
        return [
            m[0] * s[0], m[1] * s[1], m[2] * s[2], m[3] * s[0], m[4] * s[1], m[5] * s[2], m[6] * s[0], m[7] * s[1],
            m[8] * s[2],
        ]
    }

    /// Linear RGB in these primaries to linear RGB in `other` (same white).
    func matrix(to other: ColorPrimaries) -> [Double] {
        Self.multiply(Self.inverse(other.toXYZ), toXYZ)
    }

    private static func solve(_ m: [Double], _ v: [Double]) -> [Double] {
        let inv = inverse(m)
        return (0..<3).map { row in inv[row * 3] * v[0] + inv[row * 3 + 1] * v[1] + inv[row * 3 + 2] * v[2] }
    }

    private static func inverse(_ m: [Double]) -> [Double] {
        let det =
            m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6])
        return [
            (m[4] * m[8] - m[5] * m[7]) / det, (m[2] * m[7] - m[1] * m[8]) / det, (m[1] * m[5] - m[2] * m[4]) / det,
            (m[5] * m[6] - m[3] * m[8]) / det, (m[0] * m[8] - m[2] * m[6]) / det, (m[2] * m[3] - m[0] * m[5]) / det,
            (m[3] * m[7] - m[4] * m[6]) / det, (m[1] * m[6] - m[0] * m[7]) / det, (m[0] * m[4] - m[1] * m[3]) / det,
        ]
    }

    private static func multiply(_ a: [Double], _ b: [Double]) -> [Double] {
        (0..<9).map { index in
            let row = index / 3, column = index % 3
            return a[row * 3] * b[column] + a[row * 3 + 1] * b[3 + column] + a[row * 3 + 2] * b[6 + column]
        }
    }
}

/// HDR to SDR: what an HDR source's decoder hands its 16-bit samples to.
///
/// The pipeline, per pixel: the transfer's EOTF to linear light in units of SDR white
/// (203 cd/m², ITU-R BT.2408), for HLG the BT.2100 OOTF of a 1000 cd/m² display (system gamma
/// 1.2); then ITU-R BT.2390's EETF (its Hermite-spline knee, in the PQ domain) from the source's
/// peak down to SDR white, applied to max(R, G, B) and the three channels scaled by the same
/// ratio so hue and saturation are kept (libjxl's Rec2408 tone mapper does the same on
/// luminance; max(R, G, B) never pushes a channel past white); then the source primaries to
/// BT.709 in linear light, negative values and values above white clipped, and the sRGB curve.
/// A thumbnail is first reduced by whole factors in 16 bits, so the mapping runs on about the
/// pixels it keeps (the rest of the scaling is ImageKit's 8-bit resampler).
///
/// The source's peak is its stated one (`clli` MaxCLL, a JPEG XL intensity target below
/// 10 000), else 1000 cd/m², the usual mastering peak BT.2408 takes; brighter pixels reach
/// white. The curves are tables made once per (transfer, primaries, code range, peak).
final class HDRToneMapper: Sendable {
    /// What the tables depend on.
    struct Key: Hashable {
        var transfer: HDRTransfer
        var primaries: ColorPrimaries
        var maxCode: Int
        var peakNits: Double
    }

    static let sdrWhiteNits = 203.0
    static let defaultPeakNits = 1000.0
    static let hlgDisplayPeakNits = 1000.0

    let key: Key
    private let linear: [Float]
    private let hlgGain: [Float]
    private let toneGain: [Float]
    /// PQ only: the tone curve's gain by max(R, G, B)'s code value, exact (no interpolation).
    private let codeGain: [Float]
    private let srgb: [UInt8]
    private let matrix: [Float]
    private let luma: [Float]
    /// The largest max(R, G, B), in units of SDR white, the tone curve maps below white.
    let toneMax: Double

    private static let cache = Mutex<[Key: HDRToneMapper]>([:])

    /// The mapper for a source: `maxCode` is the largest sample value (1023 for 10 bits,
    /// 65535 for 16); `peakNits` the source's stated peak, nil or 0 when it states none.
    static func mapper(transfer: HDRTransfer, primaries: ColorPrimaries, maxCode: Int, peakNits: Double?)
        -> HDRToneMapper
    {
        let peak: Double
        switch transfer {
        case .hlg: peak = hlgDisplayPeakNits
        case .pq:
            if let peakNits, peakNits > 0 {
                peak = min(10_000, max(sdrWhiteNits, peakNits))
            } else {
                peak = defaultPeakNits
            }
        }
        let key = Key(transfer: transfer, primaries: primaries, maxCode: max(1, min(65535, maxCode)), peakNits: peak)
        if let hit = cache.withLock({ $0[key] }) { return hit }
        let made = HDRToneMapper(key)
        return cache.withLock { cache in
            if let raced = cache[key] { return raced }
            if cache.count >= 16 { cache.removeAll() }
            cache[key] = made
            return made
        }
    }

    private init(_ key: Key) {
        self.key = key
        let white = Self.sdrWhiteNits
        let maxCode = Double(key.maxCode)
        switch key.transfer {
        case .pq:
            linear = (0...key.maxCode).map { Float(Self.pqToNits(Double($0) / maxCode) / white) }
        case .hlg:
            linear = (0...key.maxCode).map { Float(Self.hlgToScene(Double($0) / maxCode)) }
        }
        let steps = Int(IK_TONEMAP_STEPS)
        let toXYZ = key.primaries.toXYZ
        luma = [Float(toXYZ[3]), Float(toXYZ[4]), Float(toXYZ[5])]
        // HLG's OOTF: display light = peak × Ys^(γ − 1) × scene light, γ = 1.2 at 1000 cd/m².
        hlgGain =
            key.transfer == .pq
            ? [1]
            : (0...steps).map { index in
                let ys = Double(index) / Double(steps)
                return Float(Self.hlgDisplayPeakNits / white * pow(ys, 0.2))
            }
        let peakNits = key.peakNits
        toneMax = peakNits / white
        // PQ uses the exact table by code value below; HLG's light comes out of its OOTF, not from
        // one code, so its curve is sampled over max(R, G, B).
        toneGain =
            key.transfer == .pq
            ? [1]
            : (0...steps).map { index in
                let u = Double(index) / Double(steps)
                let relative = u * u * (peakNits / white)
                guard relative > 0 else { return 1 }
                let mapped = Self.eetf(nits: relative * white, sourcePeak: peakNits, targetPeak: white) / white
                return Float(mapped / relative)
            }
        if key.transfer == .pq {
            codeGain = (0...key.maxCode).map { code in
                let relative = Self.pqToNits(Double(code) / maxCode) / white
                guard relative > 0 else { return 1 }
                guard relative < peakNits / white else { return Float(1 / relative) }
                return Float(
                    Self.eetf(nits: relative * white, sourcePeak: peakNits, targetPeak: white) / white / relative)
            }
        } else {
            codeGain = []
        }
        matrix = key.primaries.matrix(to: .bt709).map { Float($0) }
        let entries = Int(IK_TONEMAP_SRGB_ENTRIES)
        srgb = (0..<entries).map { index in
            let value = Double(index) / Double(entries - 1)
            return UInt8((Self.srgbEncode(value) * 255).rounded())
        }
    }

    /// Tone-maps `height` rows of `width` pixels of `channels` (3 or 4) 16-bit samples, rows
    /// `stride` samples apart, into a new RGBA8 bitmap.
    ///
    /// `factor` > 1 first averages blocks of factor × factor samples (the output is then
    /// ceil(width / factor) × ceil(height / factor)): a thumbnail maps the pixels it keeps.
    func map(
        _ samples: UnsafePointer<UInt16>, stride: Int, channels: Int, width: Int, height: Int, isOpaque: Bool,
        reducingBy factor: Int = 1
    ) throws(ImageError) -> Bitmap {
        try map(
            width: width, height: height, channels: channels, isOpaque: isOpaque, reducingBy: factor,
            bandRows: height
        ) { y, _ throws(ImageError) in (samples + y * stride, stride) }
    }

    /// Tone-maps an image whose 16-bit samples arrive a band of rows at a time, so that a
    /// decoder converting to them (libavif) never holds the whole frame at 16 bits: a 12 MP
    /// frame's 72 MB of samples, and their page faults, become one band's.
    ///
    /// `band(y, rows)` returns rows `y ..< y + rows` (`rows` ≤ `bandRows`) and their stride in
    /// samples, valid until the next call; `y` is a multiple of `bandRows`. `bandRows` is rounded
    /// up to a multiple of `factor`, so that every factor × factor block lies in one band and the
    /// result is the same as mapping the whole frame at once.
    func map(
        width: Int, height: Int, channels: Int, isOpaque: Bool, reducingBy factor: Int = 1, bandRows: Int,
        band: (_ y: Int, _ rows: Int) throws(ImageError) -> (samples: UnsafePointer<UInt16>, stride: Int)
    ) throws(ImageError) -> Bitmap {
        precondition(channels == 3 || channels == 4)
        let factor = max(1, factor)
        let bandRows = max(1, (max(1, bandRows) + factor - 1) / factor) * factor
        let buffer = try PixelBuffer(width: (width + factor - 1) / factor, height: (height + factor - 1) / factor)
        try withTables { map throws(ImageError) in
            var y = 0
            while y < height {
                let rows = min(bandRows, height - y)
                let (samples, stride) = try band(y, rows)
                ik_tonemap_rows_reduced(
                    map, samples, stride, Int32(channels), Int32(width), Int32(rows), Int32(factor),
                    buffer.row(y / factor), buffer.bytesPerRow)
                y += rows
            }
        }
        return buffer.freeze(isOpaque: isOpaque || channels == 3)
    }

    /// Runs `body` with the C mapper's view of this mapper's tables.
    private func withTables(_ body: (UnsafePointer<ik_tonemap>) throws(ImageError) -> Void) throws(ImageError) {
        let result: Result<Void, ImageError> = linear.withUnsafeBufferPointer { linear in
            hlgGain.withUnsafeBufferPointer { hlgGain in
                toneGain.withUnsafeBufferPointer { toneGain in
                    srgb.withUnsafeBufferPointer { srgb in
                        codeGain.withUnsafeBufferPointer { codeGain in
                            var map = ik_tonemap()
                            map.linear = linear.baseAddress
                            map.max_code = UInt32(key.maxCode)
                            map.hlg = key.transfer == .hlg ? 1 : 0
                            map.luma = (luma[0], luma[1], luma[2])
                            map.hlg_gain = hlgGain.baseAddress
                            map.tone_gain = toneGain.baseAddress
                            map.tone_max = Float(toneMax)
                            map.matrix = (
                                matrix[0], matrix[1], matrix[2], matrix[3], matrix[4], matrix[5], matrix[6], matrix[7],
                                matrix[8]
                            )
                            map.srgb = srgb.baseAddress
                            map.code_gain = codeGain.isEmpty ? nil : codeGain.baseAddress
                            return Result { () throws(ImageError) in try body(&map) }
                        }
                    }
                }
            }
        }
        try result.get()
    }

    /// The largest whole factor that shrinks `size` without going below `target` in either
    /// dimension (1: no reduction), for ``map(_:stride:channels:width:height:isOpaque:reducingBy:)``.
    static func reductionFactor(from size: PixelSize, to target: PixelSize) -> Int {
        guard target.width > 0, target.height > 0 else { return 1 }
        return max(1, min(size.width / target.width, size.height / target.height))
    }

    // MARK: - The curves (double precision; the tables above sample them)

    /// SMPTE ST 2084 EOTF: a PQ signal in [0, 1] to cd/m².
    static func pqToNits(_ signal: Double) -> Double {
        let m1 = 2610.0 / 16384, m2 = 2523.0 / 4096 * 128
        let c1 = 3424.0 / 4096, c2 = 2413.0 / 4096 * 32, c3 = 2392.0 / 4096 * 32
        let p = pow(max(0, signal), 1 / m2)
        return 10_000 * pow(max(0, p - c1) / (c2 - c3 * p), 1 / m1)
    }

    /// The inverse of ``pqToNits(_:)``.
    static func nitsToPQ(_ nits: Double) -> Double {
        let m1 = 2610.0 / 16384, m2 = 2523.0 / 4096 * 128
        let c1 = 3424.0 / 4096, c2 = 2413.0 / 4096 * 32, c3 = 2392.0 / 4096 * 32
        let y = pow(max(0, nits) / 10_000, m1)
        return pow((c1 + c2 * y) / (1 + c3 * y), m2)
    }

    /// ARIB STD-B67 inverse OETF: an HLG signal in [0, 1] to scene light in [0, 1].
    static func hlgToScene(_ signal: Double) -> Double {
        let a = 0.17883277, b = 1 - 4 * a, c = 0.5 - a * log(4 * a)
        let e = max(0, signal)
        return e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12
    }

    /// ITU-R BT.2390's EETF (black levels 0): cd/m² of a source mastered to `sourcePeak` to
    /// cd/m² of a display reaching `targetPeak`.
    static func eetf(nits: Double, sourcePeak: Double, targetPeak: Double) -> Double {
        guard sourcePeak > targetPeak else { return min(nits, targetPeak) }
        let sourceMax = nitsToPQ(sourcePeak)
        let e1 = min(1, nitsToPQ(nits) / sourceMax)
        let maxLum = nitsToPQ(targetPeak) / sourceMax
        let knee = max(0, 1.5 * maxLum - 0.5)
        var e2 = e1
        if e1 >= knee {
            let t = (e1 - knee) / (1 - knee)
            let t2 = t * t, t3 = t2 * t
            e2 = (2 * t3 - 3 * t2 + 1) * knee + (t3 - 2 * t2 + t) * (1 - knee) + (-2 * t3 + 3 * t2) * maxLum
        }
        return pqToNits(e2 * sourceMax)
    }

    /// The sRGB encoding of linear light in [0, 1].
    static func srgbEncode(_ linear: Double) -> Double {
        linear <= 0.0031308 ? 12.92 * linear : 1.055 * pow(linear, 1 / 2.4) - 0.055
    }
}
