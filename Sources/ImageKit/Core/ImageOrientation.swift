/// EXIF orientation (TIFF tag 274): how the stored pixels must be transformed to stand upright.
public enum ImageOrientation: Int, Sendable, Hashable, CaseIterable {
    case up = 1
    case upMirrored = 2
    case down = 3
    case downMirrored = 4
    case leftMirrored = 5
    case right = 6
    case rightMirrored = 7
    case left = 8

    /// True when applying the orientation swaps width and height (values 5–8).
    public var swapsDimensions: Bool { rawValue >= 5 }
}
