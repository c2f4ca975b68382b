/// EXIF orientation (TIFF tag 274): how the stored pixels must be transformed to stand upright.
public enum ImageOrientation: Int, Sendable, Hashable, CaseIterable {
    /// EXIF 1: stored upright.
    case up = 1
    /// EXIF 2: mirrored left to right.
    case upMirrored = 2
    /// EXIF 3: rotated 180°.
    case down = 3
    /// EXIF 4: mirrored top to bottom.
    case downMirrored = 4
    /// EXIF 5: mirrored along the top-left to bottom-right diagonal.
    case leftMirrored = 5
    /// EXIF 6: the stored pixels turn 90° clockwise to stand upright.
    case right = 6
    /// EXIF 7: mirrored along the top-right to bottom-left diagonal.
    case rightMirrored = 7
    /// EXIF 8: the stored pixels turn 90° counter-clockwise to stand upright.
    case left = 8

    /// True when applying the orientation swaps width and height (values 5–8).
    public var swapsDimensions: Bool { rawValue >= 5 }
}
