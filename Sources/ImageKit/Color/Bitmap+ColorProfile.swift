import Foundation

extension Bitmap {
    /// A copy of the bitmap converted from `profile`'s colour space to sRGB: what decoders do by
    /// default, for pixels decoded with ``ImageDecodingOptions/keepsColorProfile``.
    ///
    /// ```swift
    /// var options = ImageDecodingOptions()
    /// options.keepsColorProfile = true
    /// let image = try ImageCodersManager.shared.decode(data, options: options)
    /// let srgb = try image.colorProfile.map { try image.bitmap.convertedToSRGB(from: $0) } ?? image.bitmap
    /// ```
    ///
    /// - Throws: ``ImageError/Code/badImageData`` when the profile cannot be parsed,
    ///   ``ImageError/Code/invalidArgument`` for a CMYK profile (RGBA pixels are not CMYK).
    public func convertedToSRGB(from profile: ColorProfile) throws(ImageError) -> Bitmap {
        guard let conversion = ColorConversion.cached(for: profile.bytes) else {
            throw ImageError(.badImageData, "the ICC profile cannot be parsed")
        }
        guard profile.colorSpace != .cmyk else {
            throw ImageError(.invalidArgument, "a CMYK profile does not describe RGBA pixels")
        }
        var buffer = try PixelBuffer(width: width, height: height)
        buffer.copyPixels(from: self)
        let converted = buffer.freeze(isOpaque: isOpaque)
        conversion.convert(converted.baseAddress, width: width, height: height, bytesPerRow: converted.bytesPerRow)
        return converted
    }
}
