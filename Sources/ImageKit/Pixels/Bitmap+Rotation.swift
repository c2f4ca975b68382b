#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Bitmap {
    /// The bitmap turned counter-clockwise by `radians` about its centre, bilinearly sampled.
    ///
    /// With `fitSize` the canvas grows to hold the whole turned image (the size Pillow's
    /// `rotate(…, expand=True)` gives); without it, the canvas keeps its size and the corners
    /// that turn out of it are cut off. Uncovered pixels are transparent, and the image's own
    /// edge is anti-aliased: samples outside it count as transparent, in premultiplied alpha.
    /// Multiples of 90° with `fitSize` (and 180° without) move whole pixels instead.
    public func rotated(byRadians radians: Double, fitSize: Bool) throws(ImageError) -> Bitmap {
        guard radians.isFinite else { throw ImageError(.invalidArgument, "cannot rotate by \(radians) radians") }
        let quarter = (radians / (.pi / 2)).rounded()
        if abs(radians - quarter * .pi / 2) < 1e-9 {
            let turns = ((Int(quarter.truncatingRemainder(dividingBy: 4)) % 4) + 4) % 4
            if turns == 0 { return self }
            if fitSize || turns == 2 || width == height { return try rotated(quarterTurns: turns) }
        }
        let cosine = cos(radians), sine = sin(radians)
        let w = Double(width), h = Double(height)
        var outWidth = width, outHeight = height
        if fitSize {
            // Pillow's expand: the turned corners' extent around the centre, rounded outward.
            let extentX = abs(w / 2 * cosine) + abs(h / 2 * sine)
            let extentY = abs(w / 2 * sine) + abs(h / 2 * cosine)
            outWidth = Int((w / 2 + extentX - 1e-9).rounded(.up) - (w / 2 - extentX + 1e-9).rounded(.down))
            outHeight = Int((h / 2 + extentY - 1e-9).rounded(.up) - (h / 2 - extentY + 1e-9).rounded(.down))
        }
        let output = try PixelBuffer(width: outWidth, height: outHeight)
        // Source position of output pixel centre (x + ½, y + ½), in source index space
        // (minus ½): s = R(−θ)·(o − outCentre) + inCentre − ½, with y pointing down.
        let originX = cosine * (0.5 - Double(outWidth) / 2) - sine * (0.5 - Double(outHeight) / 2) + w / 2 - 0.5
        let originY = sine * (0.5 - Double(outWidth) / 2) + cosine * (0.5 - Double(outHeight) / 2) + h / 2 - 0.5
        let sampler = BilinearSampler(bitmap: self)
        for y in 0..<outHeight {
            let startX = originX - sine * Double(y)
            let startY = originY + cosine * Double(y)
            sampler.sampleRow(into: output.row(y), count: outWidth, x: startX, y: startY, stepX: cosine, stepY: sine)
        }
        return output.freeze(isOpaque: false)
    }
}

/// Samples a bitmap bilinearly along straight lines of output pixels.
///
/// Opaque sources take an integer path in the interior: 32.32 fixed-point positions, 8-bit
/// weights, two channels per 32-bit multiply. Pixels whose 2×2 neighbourhood crosses the
/// image's edge, and every pixel of a translucent source, take a float path in premultiplied
/// alpha where neighbours outside the image are transparent.
struct BilinearSampler {
    let bitmap: Bitmap
    private let base: UnsafeRawPointer
    private let rowBytes: Int
    private let width: Int, height: Int

    init(bitmap: Bitmap) {
        self.bitmap = bitmap
        base = UnsafeRawPointer(bitmap.baseAddress)
        rowBytes = bitmap.bytesPerRow
        width = bitmap.width
        height = bitmap.height
    }

    func sampleRow(
        into destination: UnsafeMutablePointer<UInt8>, count: Int, x: Double, y: Double, stepX: Double, stepY: Double
    ) {
        let out = UnsafeMutableRawPointer(destination).assumingMemoryBound(to: UInt32.self)
        let one = Double(1 << 32)
        // 32.32 fixed point: over a 20 000-pixel row the rounded step drifts by < 10⁻⁵ pixel.
        var fx = Int((x * one).rounded()), fy = Int((y * one).rounded())
        let dx = Int((stepX * one).rounded()), dy = Int((stepY * one).rounded())
        let opaque = bitmap.isOpaque
        let innerWidth = UInt(width - 1), innerHeight = UInt(height - 1)
        for index in 0..<count {
            let xi = fx >> 32, yi = fy >> 32
            if opaque && UInt(bitPattern: xi) < innerWidth && UInt(bitPattern: yi) < innerHeight {
                let tx = UInt32(truncatingIfNeeded: (fx >> 24) & 0xFF),
                    ty = UInt32(truncatingIfNeeded: (fy >> 24) & 0xFF)
                let p = base + yi * rowBytes + xi * 4
                let top = Self.lerp(
                    p.loadUnaligned(as: UInt32.self), p.loadUnaligned(fromByteOffset: 4, as: UInt32.self), tx)
                let bottom = Self.lerp(
                    p.loadUnaligned(fromByteOffset: rowBytes, as: UInt32.self),
                    p.loadUnaligned(fromByteOffset: rowBytes + 4, as: UInt32.self), tx)
                out[index] = Self.lerp(top, bottom, ty)
            } else if xi >= -1 && xi < width && yi >= -1 && yi < height {
                out[index] = edgeSample(fx: fx, fy: fy)
            } else {
                out[index] = 0
            }
            fx += dx
            fy += dy
        }
    }

    /// `a + (b − a)·t/256` on each byte of two RGBA8 pixels, two channels per multiply.
    @inline(__always)
    static func lerp(_ a: UInt32, _ b: UInt32, _ t: UInt32) -> UInt32 {
        let s = 256 - t
        let redBlue = ((a & 0x00FF_00FF) &* s &+ (b & 0x00FF_00FF) &* t &+ 0x0080_0080) >> 8 & 0x00FF_00FF
        let greenAlpha = (((a >> 8) & 0x00FF_00FF) &* s &+ ((b >> 8) & 0x00FF_00FF) &* t &+ 0x0080_0080) & 0xFF00_FF00
        return redBlue | greenAlpha
    }

    /// Pixel (x, y) premultiplied, or clear when it is outside the image.
    @inline(__always)
    private func premultiplied(_ x: Int, _ y: Int) -> SIMD4<Float> {
        guard x >= 0, x < width, y >= 0, y < height else { return .zero }
        let p = (base + y * rowBytes + x * 4).assumingMemoryBound(to: UInt8.self)
        let alpha = Float(p[3])
        let scale = alpha / 255
        return SIMD4<Float>(Float(p[0]) * scale, Float(p[1]) * scale, Float(p[2]) * scale, alpha)
    }

    /// The premultiplied bilinear sample at 32.32 position (fx, fy); outside pixels are clear.
    private func edgeSample(fx: Int, fy: Int) -> UInt32 {
        let xi = fx >> 32, yi = fy >> 32
        let tx = Float(fx & 0xFFFF_FFFF) / 4_294_967_296, ty = Float(fy & 0xFFFF_FFFF) / 4_294_967_296
        var sum = premultiplied(xi, yi) * ((1 - tx) * (1 - ty))
        sum += premultiplied(xi + 1, yi) * (tx * (1 - ty))
        sum += premultiplied(xi, yi + 1) * ((1 - tx) * ty)
        sum += premultiplied(xi + 1, yi + 1) * (tx * ty)
        return PremultipliedPixel.pack(sum)
    }
}

/// Converting premultiplied float pixels back to straight RGBA8.
enum PremultipliedPixel {
    /// `sum` is premultiplied (colour already scaled by alpha/255), channels in 0…255.
    @inline(__always)
    static func pack(_ sum: SIMD4<Float>) -> UInt32 {
        let alpha = min(max(sum.w, 0), 255)
        guard alpha >= 0.5 else { return 0 }
        let scale = 255 / alpha
        let r = UInt32(min(max(sum.x * scale, 0), 255) + 0.5)
        let g = UInt32(min(max(sum.y * scale, 0), 255) + 0.5)
        let b = UInt32(min(max(sum.z * scale, 0), 255) + 0.5)
        let a = UInt32(alpha + 0.5)
        return r | g << 8 | b << 16 | a << 24
    }
}
