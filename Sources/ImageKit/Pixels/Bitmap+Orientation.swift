extension Bitmap {
    /// The bitmap transformed by `orientation` so it stands upright (a new allocation, or `self`
    /// for ``ImageOrientation/up``).
    public func applying(_ orientation: ImageOrientation) throws(ImageError) -> Bitmap {
        if orientation == .up { return self }
        if orientation == .downMirrored { return try flipped(horizontally: false, vertically: true) }
        return try remapped(orientation)
    }
}
