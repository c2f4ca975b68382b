extension ImageOperations {
    /// Placeholders and colours of the image, computed on a decode-time thumbnail, and digests of
    /// the source's bytes, that `/info` (thumbor's `/meta/` too) answers beside the image's facts.
    public struct InfoFacts: Sendable, Hashable {
        /// BlurHash components across and down (1…9 each); 0 × 0: none.
        public var blurHashX = 0
        /// See ``blurHashX``.
        public var blurHashY = 0
        /// The ThumbHash, in hex as imgproxy spells it.
        public var thumbHash = false
        /// The average colour.
        public var average = false
        /// The average leaves fully transparent pixels out (imgproxy's default).
        public var averageIgnoresTransparent = true
        /// A palette of at most this many colours (2…256); 0: none.
        public var paletteColors = 0
        /// The 64-bit perceptual hash, in hex.
        public var perceptualHash = false
        /// The six dominant colours (vibrant and muted, light, normal and dark).
        public var dominantColors = false
        /// Dominant colours no swatch fits are made from found ones (imgproxy's `build_missed`).
        public var buildsMissedColors = false
        /// Digests of the source's bytes (imgproxy's `calc_hashsums`), in the order asked.
        public var hashsums: [Hashsum] = []

        /// A digest `calc_hashsums` can ask for.
        public enum Hashsum: String, Sendable, Hashable, CaseIterable {
            /// MD5 (for matching, not for security).
            case md5
            /// SHA-1 (for matching, not for security).
            case sha1
            /// SHA-256.
            case sha256
            /// SHA-512.
            case sha512
        }

        /// Whether a fact needs the picture (every one but the hashsums).
        var needsPixels: Bool {
            var pixels = self
            pixels.hashsums = []
            return !pixels.isEmpty
        }

        /// No fact asked.
        public var isEmpty: Bool { self == InfoFacts() }

        /// Nothing asked.
        public init() {}
    }
}
