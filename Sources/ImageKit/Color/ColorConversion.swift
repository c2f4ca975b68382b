internal import CImageCodecs
internal import CLCMS2
import Foundation

/// The conversion of one ICC profile's pixels to sRGB, built once per profile and shared.
///
/// Three ways, cheapest first:
/// - **identity**: the profile is sRGB (``ColorProfile/isSRGB``);
/// - **matrix/TRC** (Display P3, Adobe RGB, ProPhoto, Rec. 2020 …): three curves to linear light,
///   a 3 × 3 matrix to sRGB's primaries, the sRGB curve: tables in `ik_color.c`, AVX2 gathers;
///   gray profiles become one 256-entry table;
/// - **Little CMS** for everything else (LUT-based RGB profiles, CMYK), relative colorimetric
///   intent, no black-point compensation (what libvips' `icc_transform` and thumbnail do).
///
/// Instances are immutable after `init` and the Little CMS transforms are made with
/// `cmsFLAGS_NOCACHE`, so one conversion runs on many threads at once.
final class ColorConversion: @unchecked Sendable {
    enum Kind {
        case identity
        case matrixTRC(linear: [Float], matrix: [Float], output: [UInt8], output32: [Int32])
        case table([UInt8])
        case lcms(cmsHTRANSFORM)
        /// Not convertible (an unknown colour space, a profile Little CMS refuses to pair with
        /// sRGB): pixels are left as they are.
        case unsupported
    }

    let profile: ColorProfile
    let kind: Kind
    /// CMYK data to RGBA (Adobe-inverted input) for a CMYK profile; nil otherwise.
    private let cmykTransforms: (plain: cmsHTRANSFORM, inverted: cmsHTRANSFORM)?

    private init?(iccData: [UInt8]) {
        let handle = iccData.withUnsafeBytes { bytes in
            cmsOpenProfileFromMem(bytes.baseAddress, cmsUInt32Number(bytes.count))
        }
        guard let handle else { return nil }
        defer { cmsCloseProfile(handle) }
        let space: ColorProfile.ColorSpace
        switch cmsGetColorSpace(handle) {
        case cmsSigRgbData: space = .rgb
        case cmsSigGrayData: space = .gray
        case cmsSigCmykData: space = .cmyk
        default: space = .other
        }
        let description = Self.text(handle, cmsInfoDescription)
        let srgb = ColorConversion.srgbProfile
        var kind = Kind.unsupported
        var cmyk: (cmsHTRANSFORM, cmsHTRANSFORM)?
        switch space {
        case .rgb:
            if let shaper = MatrixShaper(handle) {
                kind = shaper.isSRGB ? .identity : shaper.conversion()
            } else if let transform = cmsCreateTransform(
                handle, IK_TYPE_RGBA_8, srgb, IK_TYPE_RGBA_8,
                cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC),
                cmsUInt32Number(cmsFLAGS_COPY_ALPHA | cmsFLAGS_NOCACHE))
            {
                kind = .lcms(transform)
            }
        case .gray:
            if let transform = cmsCreateTransform(
                handle, IK_TYPE_GRAY_8, srgb, IK_TYPE_RGB_8,
                cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC), cmsUInt32Number(cmsFLAGS_NOCACHE))
            {
                var gray = [UInt8](0...255), rgb = [UInt8](repeating: 0, count: 256 * 3)
                cmsDoTransform(transform, &gray, &rgb, 256)
                cmsDeleteTransform(transform)
                // Gray pixels arrive as R = G = B; each channel maps through the gray curve.
                let table = (0..<256).map { rgb[$0 * 3 + 1] }
                kind = table.elementsEqual(0...255) ? .identity : .table(table + table + table)
            }
        case .cmyk:
            let flags = cmsUInt32Number(cmsFLAGS_NOCACHE), intent = cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC)
            if let plain = cmsCreateTransform(handle, IK_TYPE_CMYK_8, srgb, IK_TYPE_RGBA_8, intent, flags) {
                if let inverted = cmsCreateTransform(handle, IK_TYPE_CMYK_8_REV, srgb, IK_TYPE_RGBA_8, intent, flags) {
                    cmyk = (plain, inverted)
                } else {
                    cmsDeleteTransform(plain)
                }
            }
        case .other:
            break
        }
        self.kind = kind
        self.cmykTransforms = cmyk
        let isSRGB: Bool = if case .identity = kind { true } else { false }
        self.profile = ColorProfile(bytes: iccData, description: description, colorSpace: space, isSRGB: isSRGB)
    }

    deinit {
        if case .lcms(let transform) = kind { cmsDeleteTransform(transform) }
        if let cmykTransforms {
            cmsDeleteTransform(cmykTransforms.plain)
            cmsDeleteTransform(cmykTransforms.inverted)
        }
    }

    /// Whether ``convert(_:width:height:bytesPerRow:)`` changes RGBA pixels.
    var changesRGBPixels: Bool {
        switch kind {
        case .identity, .unsupported: false
        default: true
        }
    }

    /// Whether CMYK pixels can be converted with this profile.
    var convertsCMYK: Bool { cmykTransforms != nil }

    /// Converts RGBA8 rows in place to sRGB (straight alpha is kept as it is).
    func convert(_ pixels: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int) {
        let bytes = pixels.assumingMemoryBound(to: UInt8.self)
        switch kind {
        case .identity, .unsupported:
            return
        case .matrixTRC(let linear, let matrix, let output, let output32):
            ik_color_matrix_trc(bytes, bytesPerRow, Int32(width), Int32(height), linear, matrix, output, output32)
        case .table(let table):
            ik_color_lut_rgb(bytes, bytesPerRow, Int32(width), Int32(height), table)
        case .lcms(let transform):
            cmsDoTransformLineStride(
                transform, pixels, pixels, cmsUInt32Number(width), cmsUInt32Number(height),
                cmsUInt32Number(bytesPerRow), cmsUInt32Number(bytesPerRow), 0, 0)
        }
    }

    /// Converts CMYK8 rows (as stored: Adobe-inverted when `inverted`) in place to opaque sRGB
    /// RGBA8. False when the profile is not a CMYK one.
    func convertCMYK(_ pixels: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int, inverted: Bool)
        -> Bool
    {
        guard let cmykTransforms else { return false }
        let transform = inverted ? cmykTransforms.inverted : cmykTransforms.plain
        let row = UnsafeMutableRawPointer.allocate(byteCount: width * 4, alignment: 16)
        defer { row.deallocate() }
        for y in 0..<height {
            let line = pixels + y * bytesPerRow
            row.copyMemory(from: line, byteCount: width * 4)
            cmsDoTransform(transform, row, line, cmsUInt32Number(width))
            let out = line.assumingMemoryBound(to: UInt8.self)
            for x in 0..<width { out[x * 4 + 3] = 255 }
        }
        return true
    }

    // MARK: - Cache

    private static let cache = Locked<[[UInt8]: ColorConversion]>([:])
    private static let failed = Locked<Set<[UInt8]>>([])
    private static let cacheLimit = 32

    /// The conversion for `iccData`, built on first use; nil when Little CMS cannot parse it.
    static func cached(for iccData: [UInt8]) -> ColorConversion? {
        if let hit = cache.withLock({ $0[iccData] }) { return hit }
        if failed.withLock({ $0.contains(iccData) }) { return nil }
        guard let conversion = ColorConversion(iccData: iccData) else {
            failed.withLock { set in
                if set.count >= cacheLimit { set.removeAll() }
                set.insert(iccData)
            }
            return nil
        }
        return cache.withLock { cache in
            if let raced = cache[iccData] { return raced }
            // Profiles are few (a site's images share a handful); a full cache starts over.
            if cache.count >= cacheLimit { cache.removeAll() }
            cache[iccData] = conversion
            return conversion
        }
    }

    // MARK: - Little CMS helpers

    /// Little CMS's built-in sRGB, shared: profiles are read-only once made.
    nonisolated(unsafe) static let srgbProfile: cmsHPROFILE = {
        cmsSetLogErrorHandler(nil)  // a bad embedded profile is not worth a line on stderr
        return cmsCreate_sRGBProfile()!
    }()

    private static func text(_ handle: cmsHPROFILE, _ info: cmsInfoType) -> String? {
        let size = cmsGetProfileInfoASCII(handle, info, "en", "US", nil, 0)
        guard size > 1, size < 4096 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(size))
        cmsGetProfileInfoASCII(handle, info, "en", "US", &buffer, size)
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }
}

/// The three colorants and tone curves of a matrix/TRC RGB profile.
struct MatrixShaper {
    /// Column-major 3 × 3: the XYZ (D50) of red, green and blue.
    var colorants: [Double]
    /// Each channel's code value 0…255 in linear light.
    var linear: [[Double]]

    init?(_ handle: cmsHPROFILE) {
        guard cmsIsMatrixShaper(handle) != 0, cmsGetColorSpace(handle) == cmsSigRgbData else { return nil }
        var colorants: [Double] = []
        var linear: [[Double]] = []
        for (colorant, curve) in [
            (cmsSigRedColorantTag, cmsSigRedTRCTag), (cmsSigGreenColorantTag, cmsSigGreenTRCTag),
            (cmsSigBlueColorantTag, cmsSigBlueTRCTag),
        ] {
            guard let xyz = cmsReadTag(handle, colorant)?.assumingMemoryBound(to: cmsCIEXYZ.self).pointee,
                let trc = cmsReadTag(handle, curve).map(OpaquePointer.init)
            else { return nil }
            colorants += [xyz.X, xyz.Y, xyz.Z]
            linear.append((0..<256).map { Double(cmsEvalToneCurveFloat(trc, Float($0) / 255)) })
        }
        guard colorants.allSatisfy(\.isFinite), linear.joined().allSatisfy(\.isFinite) else { return nil }
        self.colorants = colorants
        self.linear = linear
    }

    /// sRGB's, from Little CMS's built-in profile.
    static let srgb: MatrixShaper = MatrixShaper(ColorConversion.srgbProfile)!

    /// Within a tenth of a level of sRGB everywhere: primaries within 0.002 in XYZ and curves
    /// within 0.2/255 of linear light at every code value.
    var isSRGB: Bool {
        let reference = MatrixShaper.srgb
        guard zip(colorants, reference.colorants).allSatisfy({ abs($0 - $1) < 0.002 }) else { return false }
        return (0..<3).allSatisfy { channel in
            zip(linear[channel], reference.linear[channel]).allSatisfy { abs($0 - $1) < 0.2 / 255 }
        }
    }

    /// The tables and matrix of `ik_color_matrix_trc`: this profile's RGB to sRGB's.
    func conversion() -> ColorConversion.Kind {
        guard let inverse = Self.inverse(MatrixShaper.srgb.colorants) else { return .unsupported }
        // row-major sRGB-from-source = inverse(sRGB colorants) × source colorants.
        var matrix = [Float](repeating: 0, count: 9)
        for row in 0..<3 {
            for column in 0..<3 {
                var sum = 0.0
                for k in 0..<3 { sum += inverse[k * 3 + row] * colorants[column * 3 + k] }
                matrix[row * 3 + column] = Float(sum)
            }
        }
        let output = (0..<Int(IK_COLOR_OUT_ENTRIES)).map { index -> UInt8 in
            let linear = Double(index) / Double(IK_COLOR_OUT_ENTRIES - 1)
            let encoded = linear <= 0.0031308 ? 12.92 * linear : 1.055 * pow(linear, 1 / 2.4) - 0.055
            return UInt8(max(0, min(255, (encoded * 255).rounded())))
        }
        return .matrixTRC(
            linear: linear.joined().map(Float.init), matrix: matrix, output: output,
            output32: output.map(Int32.init))
    }

    /// The inverse of a column-major 3 × 3 matrix (column-major), nil when singular.
    static func inverse(_ m: [Double]) -> [Double]? {
        func at(_ row: Int, _ column: Int) -> Double { m[column * 3 + row] }
        let det =
            at(0, 0) * (at(1, 1) * at(2, 2) - at(1, 2) * at(2, 1))
            - at(0, 1) * (at(1, 0) * at(2, 2) - at(1, 2) * at(2, 0))
            + at(0, 2) * (at(1, 0) * at(2, 1) - at(1, 1) * at(2, 0))
        guard abs(det) > 1e-12 else { return nil }
        var result = [Double](repeating: 0, count: 9)
        for row in 0..<3 {
            for column in 0..<3 {
                // cofactor of (column, row) / det
                let r1 = (column + 1) % 3, r2 = (column + 2) % 3, c1 = (row + 1) % 3, c2 = (row + 2) % 3
                let cofactor = at(r1, c1) * at(r2, c2) - at(r1, c2) * at(r2, c1)
                result[column * 3 + row] = cofactor / det
            }
        }
        return result
    }
}
