#!/usr/bin/env bash
# A package that depends on the ImageKit product alone must not compile the image service or
# Hummingbird: build one in a scratch directory (debug, as a consumer would) and look at what
# was compiled. Usage: Tests/consumer-check.sh [SCRATCH_DIR]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$repo/.build-consumer}"
mkdir -p "$work/Sources/Consumer"
cat > "$work/Package.swift" <<SWIFT
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "Consumer",
    dependencies: [.package(path: "$repo")],
    targets: [.executableTarget(name: "Consumer", dependencies: [.product(name: "ImageKit", package: "$(basename "$repo")")])]
)
SWIFT
cat > "$work/Sources/Consumer/main.swift" <<'SWIFT'
import ImageKit
print("ImageKit \(ImageKit.version)")
SWIFT
swift build --package-path "$work" --scratch-path "$work/.build" >/dev/null
"$work/.build/debug/Consumer"
# `debug` is a symbolic link into the triple's folder: -L follows it.
modules=$(find -L "$work/.build/debug" -maxdepth 2 -name "*.swiftmodule" -exec basename {} \; | sort -u)
for forbidden in ImageKitServer Hummingbird HummingbirdCore ServiceLifecycle Prometheus NIOCore; do
    # SwiftPM makes a folder for every target of the graph; a compiled one holds object files.
    if grep -qx "$forbidden.swiftmodule" <<<"$modules" \
        || [ -n "$(find -L "$work/.build/debug/$forbidden.build" -name "*.o" 2>/dev/null | head -1)" ]; then
        echo "consumer-check: a package using only ImageKit compiled $forbidden" >&2
        exit 1
    fi
done
grep -qx "ImageKit.swiftmodule" <<<"$modules" || { echo "consumer-check: ImageKit was not built" >&2; exit 1; }
echo "consumer-check: ImageKit alone compiles none of ImageKitServer, Hummingbird, ServiceLifecycle, Prometheus or NIO"
