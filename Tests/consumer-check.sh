#!/usr/bin/env bash
# A package that depends on the ImageKit product alone must not compile the image service or
# Hummingbird: build one in a scratch directory (debug, as a consumer would) and look at what
# was compiled. The same package compiles every complete Swift example of the README and the DocC
# articles that uses ImageKit alone, as pasted, one executable each (Tests/doc-examples.py); the
# examples that import ImageKitServer compile in a second package, with the package's traits off
# (ImageService needs no HTTP layer), so that Hummingbird is not compiled for them.
# Usage: Tests/consumer-check.sh [SCRATCH_DIR]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$repo/.build-consumer}"
rm -rf "$work/Sources" "$work/server/Sources"
mkdir -p "$work/Sources/Consumer" "$work/server"
examples=$(python3 "$repo/Tests/doc-examples.py" "$repo" "$work/examples")
targets="" server_targets=""
while read -r module name place; do
    [ -n "$name" ] || continue
    if [ "$module" = ImageKitServer ]; then
        mkdir -p "$work/server/Sources" && cp -r "$work/examples/Sources/$name" "$work/server/Sources/"
        server_targets+="        .executableTarget(name: \"$name\", dependencies: [.product(name: \"ImageKitServer\", package: \"$(basename "$repo")\")]),  // $place"$'\n'
    else
        cp -r "$work/examples/Sources/$name" "$work/Sources/"
        targets+="        .executableTarget(name: \"$name\", dependencies: [.product(name: \"ImageKit\", package: \"$(basename "$repo")\")]),  // $place"$'\n'
    fi
done <<<"$examples"
rm -rf "$work/examples"
cat > "$work/Package.swift" <<SWIFT
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "Consumer",
    dependencies: [.package(path: "$repo")],
    targets: [
        .executableTarget(name: "Consumer", dependencies: [.product(name: "ImageKit", package: "$(basename "$repo")")]),
$targets    ]
)
SWIFT
cat > "$work/Sources/Consumer/main.swift" <<'SWIFT'
import ImageKit
print("ImageKit \(ImageKit.version)")
SWIFT
# The build's own output only when it fails (a compiler error in an example says which file).
build() { swift build --package-path "$1" --scratch-path "$1/.build" > "$1/build.log" 2>&1 || { cat "$1/build.log" >&2; exit 1; }; }
build "$work"
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
echo "consumer-check: $(grep -c '^ImageKit ' <<<"$examples") examples using ImageKit compiled as pasted"
if [ -n "$server_targets" ]; then
    cat > "$work/server/Package.swift" <<SWIFT
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "ServerExamples",
    dependencies: [.package(path: "$repo", traits: [])],
    targets: [
$server_targets    ]
)
SWIFT
    build "$work/server"
    echo "consumer-check: $(grep -c '^ImageKitServer ' <<<"$examples") examples using ImageKitServer compiled as pasted"
fi
