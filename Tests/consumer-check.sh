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
modules=$(find "$work/.build/debug" -name "*.swiftmodule" -maxdepth 2 | xargs -n1 basename | sort -u)
for forbidden in ImageKitServer Hummingbird HummingbirdCore ServiceLifecycle Prometheus NIOCore; do
    if grep -qx "$forbidden.swiftmodule" <<<"$modules"; then
        echo "consumer-check: a package using only ImageKit compiled $forbidden" >&2
        exit 1
    fi
done
grep -qx "ImageKit.swiftmodule" <<<"$modules" || { echo "consumer-check: ImageKit was not built" >&2; exit 1; }
echo "consumer-check: ImageKit alone compiles none of ImageKitServer, Hummingbird, ServiceLifecycle, Prometheus or NIO"
