/// ImageKit's version, sent as `User-Agent: ImageKit/<version>`.
public enum ImageKit {
    public static let version = "0.1.0"
}
