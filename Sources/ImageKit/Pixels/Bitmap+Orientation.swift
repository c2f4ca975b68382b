extension Bitmap {
    /// The bitmap transformed by `orientation` so it stands upright (a new allocation, or `self`
    /// for ``ImageOrientation/up``).
    public func applying(_ orientation: ImageOrientation) throws(ImageError) -> Bitmap {
        if orientation == .up { return self }
        if orientation == .downMirrored { return try flipped(horizontally: false, vertically: true) }
        return try remapped(orientation)
    }
}

extension DecodedImage {
    /// Applies ``orientation`` to every frame if it has not been applied yet.
    public func applyingOrientation() throws(ImageError) -> DecodedImage {
        guard !isOrientationApplied, orientation != .up else {
            var copy = self
            copy.isOrientationApplied = true
            return copy
        }
        var copy = self
        for index in copy.frames.indices {
            copy.frames[index].bitmap = try copy.frames[index].bitmap.applying(orientation)
        }
        copy.isOrientationApplied = true
        return copy
    }
}
