#!/usr/bin/env bash
# make test-deb: the .deb installs on a bare Debian 12 and serves a thumbnail there.
#   deploy/debian/test-deb.sh DEB EXPECTED_VERSION_LINE
# A minimal Debian 12 root (debootstrap --variant=minbase, made once and kept as a tarball in
# ~/.cache/imagekit) is unpacked afresh; `apt-get install ./imagekit_*.deb` there brings in only
# the package's declared dependencies, so a library the binary needs and the package does not
# declare makes the binary fail to start and this test fail. Inside the root (chroot, sharing
# this machine's loopback), the installed unit's ExecStart runs with the installed
# /etc/default/imagekit plus the test's settings, and a thumbnail is asked of a PNG served from
# outside on 127.0.0.1. Needs root and Debian's package mirror; touches nothing outside its
# temporary directory and the cache.
set -euo pipefail
deb=$(realpath "$1") expected=$2
cache=${IMAGEKIT_DEB_TEST_CACHE:-$HOME/.cache/imagekit}
base=$cache/debootstrap-bookworm-minbase.tar.gz
archives=$cache/debootstrap-apt-archives
[ "$(id -u)" = 0 ] || { echo "test-deb: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
command -v debootstrap >/dev/null && command -v curl >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap curl; }
mkdir -p "$cache" "$archives/partial"
if [ ! -f "$base" ]; then
    echo "test-deb: making a minimal Debian 12 root (once) into $base" >&2
    fresh=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$fresh" http://deb.debian.org/debian >&2
    tar -C "$fresh" -czf "$base.partial" . && mv "$base.partial" "$base"
    rm -rf "$fresh"
fi

work=$(mktemp -d)
root=$work/root
server=""
origin=""
cleanup() {
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    [ -z "$origin" ] || kill "$origin" 2>/dev/null || true
    wait 2>/dev/null || true
    for mount in var/cache/apt/archives dev proc; do umount -l "$root/$mount" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root"
tar -C "$root" -xzf "$base"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind "$archives" "$root/var/cache/apt/archives"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The mirror's current bookworm, its updates and security fixes, as a Debian 12 server has them.
rm -f "$root/etc/apt/sources.list"
cat > "$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
cp "$deb" "$root/tmp/"
for attempt in 1 2 3; do
    chroot "$root" apt-get -o APT::Sandbox::User=root update -qq >&2 && break
    [ $attempt -lt 3 ] || { echo "test-deb: apt-get update failed" >&2; exit 1; }
    sleep 5
done
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -o APT::Sandbox::User=root install -y -qq --no-install-recommends "/tmp/$(basename "$deb")" >&2

version=$(chroot "$root" /usr/bin/imagekit --version)
[ "$version" = "$expected" ] || { echo "test-deb: --version says '$version', expected '$expected'" >&2; exit 1; }
echo "test-deb: installed; imagekit --version: $version" >&2

# The origin: a 640×480 PNG on loopback, outside the root.
mkdir -p "$work/www"
python3 - "$work/www/photo.png" <<'PY'
import struct, sys, zlib
width, height = 640, 480
rows = b"".join(b"\0" + b"".join(bytes((x * 255 // width, y * 255 // height, 128)) for x in range(width))
                for y in range(height))
chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
origin_port=$(free_port)
python3 -m http.server "$origin_port" --bind 127.0.0.1 --directory "$work/www" >/dev/null 2>&1 &
origin=$!

# The service as the unit starts it: its ExecStart, with the installed environment file.
port=$(free_port)
cat >> "$root/etc/default/imagekit" <<SETTINGS
IMAGEKIT_SERVE_PORT=$port
IMAGEKIT_SERVE_ALLOW_UNSAFE=true
IMAGEKIT_SERVE_ALLOW_ADDRESS=127.0.0.1/32
SETTINGS
exec_start=$(sed -n 's/^ExecStart=//p' "$root/lib/systemd/system/imagekit.service")
mkdir -p "$root/var/cache/imagekit"
chroot "$root" /bin/sh -c "set -a; . /etc/default/imagekit; set +a; exec $exec_start" > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; echo "test-deb: imagekit serve exited" >&2; exit 1; }
    sleep 0.1
done
status=$(curl -s -o "$work/thumb" -w '%{http_code}' \
    "http://127.0.0.1:$port/unsafe/fit-in/100x100/127.0.0.1:$origin_port/photo.png")
size=$(python3 - "$work/thumb" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
if data[:8] == b"\x89PNG\r\n\x1a\n":
    print("png %dx%d" % struct.unpack(">II", data[16:24]))
else:
    print("not a PNG: %r" % data[:16])
PY
)
if [ "$status" != 200 ] || [ "$size" != "png 100x75" ]; then
    cat "$work/serve.log" >&2
    echo "test-deb: the thumbnail answered $status, $size (expected 200, png 100x75)" >&2
    exit 1
fi
echo "test-deb: 1 passed, 0 failed (installed on a bare Debian 12, served a 100x75 thumbnail)"
