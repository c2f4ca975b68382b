// swift-tools-version:6.0
import PackageDescription

// `make bench-net`: download throughput of ImageKit against the peers a Linux Swift user would
// pick instead. A package of its own, so AsyncHTTPClient never slows `make test`.
let package = Package(
    name: "NetBench",
    platforms: [.macOS(.v15)],
    dependencies: [
        // run.sh links the repository here, so the identity is "ImageKit" whatever the
        // checkout's directory is called.
        .package(path: ".deps/ImageKit"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.20.0"),
    ],
    targets: [
        .executableTarget(
            name: "netbench",
            dependencies: [
                .product(name: "ImageKit", package: "ImageKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
