/// ImageKit's version, sent as `User-Agent: ImageKit/<version>`.
public enum ImageKit {
    /// ImageKit's version.
    public static let version = "0.1.0"
}
