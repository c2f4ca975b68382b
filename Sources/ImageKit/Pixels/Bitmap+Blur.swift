internal import CImageCodecs

extension Bitmap {
    /// The largest standard deviation ``blurred(sigma:)`` honours; a larger one is clamped.
    /// (Box sums of 255 × (2r + 1) must fit 16 bits; at this size any photo is a smear anyway.)
    public static let maximumBlurSigma = 100.0

    /// The bitmap blurred with a Gaussian of standard deviation `sigma` pixels, approximated —
    /// like Pillow's `GaussianBlur` and vImage's tent/box blurs — by three box blurs in each
    /// direction, in premultiplied alpha. Edges repeat their outermost pixels.
    ///
    /// The box sums are 16-bit integers in blocks of 64 independent lanes (rows blurred 16 at a
    /// time, columns in strips of 16 pixels), in C (`ik_box_blur_rgba`): every step of a running
    /// sum is one loop over 64 lanes, vectorised with SSE2 or, where the processor has it, AVX2.
    public func blurred(sigma: Double) throws(ImageError) -> Bitmap {
        guard sigma.isFinite, sigma >= 0 else {
            throw ImageError(.invalidArgument, "blur sigma \(sigma) must be finite and ≥ 0")
        }
        let radii = BoxBlur.radii(sigma: min(sigma, Self.maximumBlurSigma)).map { CInt($0) }
        guard radii.contains(where: { $0 > 0 }) else { return self }
        let output = try PixelBuffer(width: width, height: height)
        let status = radii.withUnsafeBufferPointer { radii in
            ik_box_blur_rgba(
                baseAddress.assumingMemoryBound(to: UInt8.self), bytesPerRow,
                output.baseAddress.assumingMemoryBound(to: UInt8.self), output.bytesPerRow,
                CInt(width), CInt(height), radii.baseAddress!, CInt(radii.count), isOpaque ? 0 : 1)
        }
        guard status == IK_OK else { throw ImageError(.internalError, "out of memory for the blur's line buffers") }
        return output.freeze(isOpaque: isOpaque)
    }
}

enum BoxBlur {
    /// Radii of three boxes whose cascade has about the variance of a Gaussian of `sigma`
    /// (Kovesi, "Fast almost-Gaussian filtering": widths wl and wl + 2, wl the largest odd
    /// width below the ideal one, as many of each as brings the variance closest).
    static func radii(sigma: Double, passes: Int = 3) -> [Int] {
        guard sigma > 0 else { return Array(repeating: 0, count: passes) }
        let n = Double(passes)
        let ideal = (12 * sigma * sigma / n + 1).squareRoot()
        var lower = Int(ideal)
        if lower % 2 == 0 { lower -= 1 }
        lower = max(lower, 1)
        let wl = Double(lower)
        let m = Int(((12 * sigma * sigma - n * wl * wl - 4 * n * wl - 3 * n) / (-4 * wl - 4)).rounded())
        return (0..<passes).map { ($0 < m ? lower : lower + 2) / 2 }
    }
}
