// swift-tools-version:6.1
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
        // The image service's request layer (grammars, signing, canonical operations). A package
        // that depends on the ImageKit product alone compiles none of it.
        .library(name: "ImageKitServer", targets: ["ImageKitServer"]),
        .executable(name: "imagekit", targets: ["imagekit"]),
        .executable(name: "bench", targets: ["bench"]),
    ],
    // The modern photo formats need libheif, libavif and libjxl, and SVG needs librsvg (with
    // cairo and glib), which a server that handles only web formats may not want to install:
    // each is a trait, all enabled by default. Depend on ImageKit with `traits: []` (or a subset)
    // to build without them; their formats then answer `unsupportedFormat`. TIFF (libtiff) and
    // colour management (Little CMS) are always built.
    traits: [
        .trait(name: "HEIF", description: "HEIC/HEIF decoding with libheif"),
        .trait(name: "AVIF", description: "AVIF still and animated decoding and AVIF encoding with libavif"),
        .trait(name: "JXL", description: "JPEG XL decoding and encoding with libjxl"),
        .trait(name: "SVG", description: "SVG rendering with librsvg (and cairo)"),
        // Off by default: poppler is GPL-2.0-or-later, so a binary built with it is GPL too.
        .trait(name: "PDF", description: "PDF first-page rendering with poppler-glib (GPL: see the README)"),
        // The image service's HTTP layer (Hummingbird 2, swift-service-lifecycle, swift-prometheus)
        // and `imagekit serve`. Without it ImageKitServer keeps its framework-free core
        // (`ImageService.handle`), which is how the sanitizer builds skip compiling Hummingbird twice.
        .trait(name: "Serve", description: "The HTTP layer of ImageKitServer and the `imagekit serve` command"),
        // Off by default: HEVC (HEIC) decoding through FFmpeg's libavcodec instead of libde265, a
        // libheif decoder plugin. Faster (see Benchmarks/README), but Debian's libavcodec59 brings
        // some thirty codec libraries into a binary's dependencies (the .deb's among them).
        .trait(name: "HEVCAVCodec", description: "HEIC's HEVC decoded by libavcodec (FFmpeg) instead of libde265"),
        // Off by default for the same reason: video sources (MP4/MOV, WebM/MKV) through FFmpeg's
        // libavformat, libavcodec and libswscale.
        .trait(name: "Video", description: "Frames of MP4, MOV, WebM and MKV videos with FFmpeg's libraries"),
        // OpenTelemetry trace export in `imagekit serve` (swift-otel, OTLP/HTTP). A trait of its own
        // because swift-otel 1.6 does not compile under ThreadSanitizer with Swift 6.3
        // (`make test-tsan` builds without it), and it adds minutes to a first build.
        .trait(name: "OTel", description: "OpenTelemetry trace export in `imagekit serve` (swift-otel)", enabledTraits: ["Serve"]),
        .default(enabledTraits: ["HEIF", "AVIF", "JXL", "SVG", "Serve", "OTel"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        // Hummingbird's own default traits pull swift-configuration, which the service does not use.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: []),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.20.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.3.0"),
        // Spans in the library and the service (no exporter: the app bootstraps its tracer).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.2.0"),
        // The `imagekit` executable's OTLP/HTTP exporter (gRPC's exporter and its dependencies off).
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        // `make docs`: the DocC catalogs, built with `swift package generate-documentation`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        systemLibrary("CCurl", pkgConfig: "libcurl", apt: "libcurl4-openssl-dev"),
        systemLibrary("CTurboJPEG", pkgConfig: "libturbojpeg", apt: "libturbojpeg0-dev"),
        systemLibrary("CPNG", pkgConfig: "libpng", apt: "libpng-dev"),
        systemLibrary("CGIF", pkgConfig: "libgif", apt: "libgif-dev"),
        systemLibrary("CWebP", pkgConfig: "libwebpdemux", apt: "libwebp-dev"),
        systemLibrary("CDeflate", pkgConfig: "libdeflate", apt: "libdeflate-dev"),
        systemLibrary("CTIFF", pkgConfig: "libtiff-4", apt: "libtiff-dev"),
        systemLibrary("CLCMS2", pkgConfig: "lcms2", apt: "liblcms2-dev"),
        systemLibrary("CHeif", pkgConfig: "libheif", apt: "libheif-dev"),
        systemLibrary("CAVIF", pkgConfig: "libavif", apt: "libavif-dev"),
        systemLibrary("CJXL", pkgConfig: "libjxl", apt: "libjxl-dev"),
        systemLibrary("CRSVG", pkgConfig: "librsvg-2.0", apt: "librsvg2-dev"),
        systemLibrary("CPoppler", pkgConfig: "poppler-glib", apt: "libpoppler-glib-dev"),
        systemLibrary("CAVCodec", pkgConfig: "libavcodec", apt: "libavcodec-dev"),
        systemLibrary("CAVFormat", pkgConfig: "libavformat", apt: "libavformat-dev"),
        // The one C target: small shims where Swift cannot call a library safely (libpng's
        // setjmp/longjmp, curl's variadic setters) and the byte loops Swift would not vectorise
        // (the PNG fast path's unfiltering, the blur, resize and quarter-turn loops). Every
        // symbol is prefixed `ik_`.
        .target(
            name: "CImageCodecs",
            dependencies: [
                "CCurl", "CPNG", "CDeflate",
                .target(name: "CHeif", condition: .when(traits: ["HEVCAVCodec"])),
                .target(name: "CAVCodec", condition: .when(traits: ["HEVCAVCodec"])),
                .target(name: "CAVFormat", condition: .when(traits: ["Video"])),
            ],
            path: "Sources/CImageCodecs/Shims",
            cSettings: [
                .define("IK_HEVC_AVCODEC", .when(traits: ["HEVCAVCodec"])),
                .define("IK_VIDEO", .when(traits: ["Video"])),
            ],
            linkerSettings: [
                .linkedLibrary("avformat", .when(traits: ["Video"])),
                .linkedLibrary("swscale", .when(traits: ["Video"])),
                .linkedLibrary("avcodec", .when(traits: ["HEVCAVCodec", "Video"])),
                .linkedLibrary("avutil", .when(traits: ["HEVCAVCodec", "Video"])),
            ]
        ),
        .target(
            name: "ImageKit",
            dependencies: [
                "CImageCodecs", "CTurboJPEG", "CPNG", "CGIF", "CWebP", "CCurl", "CDeflate", "CTIFF", "CLCMS2",
                .target(name: "CHeif", condition: .when(traits: ["HEIF"])),
                .target(name: "CAVIF", condition: .when(traits: ["AVIF"])),
                .target(name: "CJXL", condition: .when(traits: ["JXL"])),
                .target(name: "CRSVG", condition: .when(traits: ["SVG"])),
                .target(name: "CPoppler", condition: .when(traits: ["PDF"])),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "ImageKitServer",
            dependencies: [
                "ImageKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Serve"])),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["Serve"])),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: .when(traits: ["Serve"])),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras", condition: .when(traits: ["Serve"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Serve"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Serve"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Serve"])),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Serve"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Serve"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "ImageKitServerTests",
            dependencies: ["ImageKitServer"]
        ),
        .executableTarget(
            name: "imagekit",
            dependencies: [
                "ImageKit", "ImageKitServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Serve"])),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTel"])),
            ]
        ),
        // Straight C decoders used by the benchmark as the "raw library" baseline.
        .target(
            name: "CRawCodecs",
            dependencies: [
                "CTurboJPEG", "CPNG", "CGIF", "CWebP", "CTIFF", "CLCMS2",
                .target(name: "CHeif", condition: .when(traits: ["HEIF"])),
                .target(name: "CAVIF", condition: .when(traits: ["AVIF"])),
                .target(name: "CJXL", condition: .when(traits: ["JXL"])),
                .target(name: "CRSVG", condition: .when(traits: ["SVG"])),
            ],
            path: "Benchmarks/CRawCodecs",
            cSettings: [
                .define("IK_BENCH_HEIF", .when(traits: ["HEIF"])),
                .define("IK_BENCH_AVIF", .when(traits: ["AVIF"])),
                .define("IK_BENCH_JXL", .when(traits: ["JXL"])),
                .define("IK_BENCH_SVG", .when(traits: ["SVG"])),
            ]
        ),
        .executableTarget(
            name: "bench",
            dependencies: ["ImageKit", "ImageKitServer", "CRawCodecs"],
            path: "Benchmarks/bench"
        ),
        .testTarget(
            name: "ImageKitTests",
            // CLCMS2: the colour tests compare the fast path with Little CMS's own transform;
            // CHeif writes HEIC files with thumbnail items; CAVIF, CHeif and CJXL write HDR test files.
            dependencies: ["ImageKit", "CLCMS2", .target(name: "CHeif", condition: .when(traits: ["HEIF"])),
                           .target(name: "CAVIF", condition: .when(traits: ["AVIF"])),
                           .target(name: "CJXL", condition: .when(traits: ["JXL"])),
                           .product(name: "MetricsTestKit", package: "swift-metrics"), .product(name: "Logging", package: "swift-log")],
            // Read by the tests from their paths: fuzz findings, SVG files and their renderings.
            exclude: ["Coding/FuzzRegressions", "Fixtures"]
        ),
        // Real curl against an HTTP server started inside the test process on 127.0.0.1.
        .testTarget(
            name: "ImageKitIntegrationTests",
            dependencies: [
                "ImageKit", "ImageKitServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio", condition: .when(traits: ["Serve"])),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: .when(traits: ["Serve"])),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Serve"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
