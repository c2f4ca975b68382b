// swift-tools-version:6.0
import PackageDescription

/// A system library target under `Sources/CImageCodecs/System/<name>`, found with pkg-config and
/// installed on Debian by the `-dev` package named in `apt`.
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(
        name: name,
        path: "Sources/CImageCodecs/System/\(name)",
        pkgConfig: pkgConfig,
        providers: [.apt([apt])]
    )
}

let package = Package(
    name: "ImageKit",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ImageKit", targets: ["ImageKit"]),
        .executable(name: "imagekit", targets: ["imagekit"]),
        .executable(name: "bench", targets: ["bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
    ],
    targets: [
        systemLibrary("CCurl", pkgConfig: "libcurl", apt: "libcurl4-openssl-dev"),
        systemLibrary("CTurboJPEG", pkgConfig: "libturbojpeg", apt: "libturbojpeg0-dev"),
        systemLibrary("CPNG", pkgConfig: "libpng", apt: "libpng-dev"),
        systemLibrary("CGIF", pkgConfig: "libgif", apt: "libgif-dev"),
        systemLibrary("CWebP", pkgConfig: "libwebpdemux", apt: "libwebp-dev"),
        systemLibrary("CDeflate", pkgConfig: "libdeflate", apt: "libdeflate-dev"),
        // The one C target: small shims where Swift cannot call a library safely (libpng's
        // setjmp/longjmp, curl's variadic setters) and the byte loops Swift would not vectorise
        // (the PNG fast path's unfiltering, the blur, resize and quarter-turn loops). Every
        // symbol is prefixed `ik_`.
        .target(
            name: "CImageCodecs",
            dependencies: ["CCurl", "CPNG", "CDeflate"],
            path: "Sources/CImageCodecs/Shims"
        ),
        .target(
            name: "ImageKit",
            dependencies: [
                "CImageCodecs", "CTurboJPEG", "CPNG", "CGIF", "CWebP", "CCurl",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .executableTarget(
            name: "imagekit",
            dependencies: [
                "ImageKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Straight C decoders used by the benchmark as the "raw library" baseline.
        .target(
            name: "CRawCodecs",
            dependencies: ["CTurboJPEG", "CPNG", "CGIF", "CWebP"],
            path: "Benchmarks/CRawCodecs"
        ),
        .executableTarget(
            name: "bench",
            dependencies: ["ImageKit", "CRawCodecs"],
            path: "Benchmarks/bench"
        ),
        .testTarget(
            name: "ImageKitTests",
            dependencies: ["ImageKit"]
        ),
        // Real curl against an HTTP server started inside the test process on 127.0.0.1.
        .testTarget(
            name: "ImageKitIntegrationTests",
            dependencies: [
                "ImageKit",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
