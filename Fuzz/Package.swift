// swift-tools-version:6.1
import PackageDescription

// `make fuzz`: libFuzzer targets over ImageKit's entry points (run.sh builds them with
// -sanitize=fuzzer,address and runs each). A package of its own: the fuzzer build flags must
// not reach `make test`.
let targets = ["FuzzDecode", "FuzzProgressive", "FuzzJPEGDC", "FuzzExif", "FuzzAPNG", "FuzzPNGFast", "FuzzGIFBlocks",
               "FuzzDiskMetadata", "FuzzCacheKey", "FuzzDataURL", "FuzzHTTPHeaders", "FuzzManager", "FuzzBMPICO", "FuzzTIFF",
               "FuzzModernFormats", "FuzzServiceURL", "FuzzSVG", "FuzzPDF", "FuzzVideo"]

let package = Package(
    name: "ImageKitFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        // run.sh links the repository here, so the identity is "ImageKit" whatever the
        // checkout's directory is called.
        // Without the Serve trait: the fuzzers reach the request layer, not the HTTP server, and
        // Hummingbird need not be built with the fuzzer's instrumentation.
        .package(path: ".deps/ImageKit", traits: ["HEIF", "AVIF", "JXL", "SVG", "PDF", "HEVCAVCodec", "Video"]),
    ],
    targets: [
        .target(name: "CFuzzDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzDriver", .product(name: "ImageKit", package: "ImageKit")]),
    ] + targets.map { name in
        .executableTarget(name: name, dependencies: ["FuzzSupport", .product(name: "ImageKit", package: "ImageKit"),
                                                     .product(name: "ImageKitServer", package: "ImageKit")])
    },
    swiftLanguageModes: [.v6]
)
