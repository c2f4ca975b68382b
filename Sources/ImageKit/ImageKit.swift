internal import CImageCodecs

/// ImageKit's version, sent as `User-Agent: ImageKit/<version>`.
public enum ImageKit {
    /// ImageKit's version.
    public static let version = "0.1.0"

    /// The source revision the binary was built from (`git describe --always --dirty`), as the
    /// build command gave it (`make dist` and `make deb` do); nil for a build without it (a
    /// package that depends on ImageKit, `swift build`).
    public static let buildCommit: String? = {
        let commit = String(cString: ik_build_commit())
        return commit.isEmpty ? nil : commit
    }()

    /// The version and, when known, the commit: `0.1.0 (8d03def)`; what `imagekit --version` prints.
    public static var versionDescription: String {
        buildCommit.map { "\(version) (\($0))" } ?? version
    }
}
