import Foundation

/// Where the decoders hand their pixels to colour management.
enum ColorManagement {
    /// The profile in `iccData`, or nil for no data or a profile Little CMS cannot read (an
    /// unreadable profile is ignored, as browsers do, rather than failing the decode).
    static func profile(_ iccData: Data?) -> ColorProfile? {
        guard let iccData, !iccData.isEmpty else { return nil }
        return ColorConversion.cached(for: [UInt8](iccData))?.profile
    }

    /// Converts the frames of a freshly decoded `image` (bitmaps no one else holds yet) from
    /// `iccData`'s profile to sRGB unless the options keep it, and records the profile.
    static func apply(_ iccData: Data?, to image: inout DecodedImage, options: ImageDecodingOptions) {
        guard let iccData, !iccData.isEmpty, let conversion = ColorConversion.cached(for: [UInt8](iccData)) else {
            return
        }
        image.sourceColorProfile = conversion.profile
        // CMYK pixels reach here already converted (the decoder did it while leaving CMYK).
        if options.keepsColorProfile {
            if !conversion.profile.isSRGB && conversion.profile.colorSpace != .cmyk {
                image.colorProfile = conversion.profile
            }
            return
        }
        guard conversion.changesRGBPixels, conversion.profile.colorSpace != .cmyk else { return }
        for frame in image.frames {
            let bitmap = frame.bitmap
            conversion.convert(
                bitmap.baseAddress, width: bitmap.width, height: bitmap.height, bytesPerRow: bitmap.bytesPerRow)
        }
    }

    /// Converts one freshly decoded frame of an image tagged `iccData` to sRGB, as ``apply(_:to:options:)``
    /// converts every frame of an eager decode with the default options (a lazy animation's
    /// frames come one at a time).
    static func convertToSRGB(_ bitmap: Bitmap, from iccData: Data?) {
        guard let iccData, !iccData.isEmpty, let conversion = ColorConversion.cached(for: [UInt8](iccData)),
            conversion.changesRGBPixels, conversion.profile.colorSpace != .cmyk
        else { return }
        conversion.convert(
            bitmap.baseAddress, width: bitmap.width, height: bitmap.height, bytesPerRow: bitmap.bytesPerRow)
    }

    /// The conversion of a CMYK profile (CMYK pixels always come out sRGB); nil for no profile
    /// or one that is not CMYK.
    static func cmykConversion(_ iccData: Data?) -> ColorConversion? {
        guard let iccData, !iccData.isEmpty, let conversion = ColorConversion.cached(for: [UInt8](iccData)),
            conversion.convertsCMYK
        else { return nil }
        return conversion
    }
}
