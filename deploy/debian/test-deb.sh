#!/usr/bin/env bash
# make test-deb: the .deb's life cycle on a bare Debian 12, as an operator meets it.
#   deploy/debian/test-deb.sh DEB UPGRADE_DEB EXPECTED_VERSION_LINE
# UPGRADE_DEB is the same package with a higher version. A minimal Debian 12 root (debootstrap
# --variant=minbase, made once and kept as a tarball in ~/.cache/imagekit) is unpacked afresh
# and given systemd, as a server has it; `apt-get install ./imagekit_*.deb` there brings in only
# the package's declared dependencies, so a library the binary needs and the package does not
# declare makes the binary fail to start and this test fail.
#
# 1. In a chroot (always): install (the secrets file 0600 root:root and a conffile, the unit
#    enabled and passing `systemd-analyze verify` inside the root), serve a thumbnail through the
#    unit's ExecStart, edit the secrets file, upgrade (the edit kept, the file still 0600, also
#    when it had been left world-readable), serve again, remove, purge: nothing of the package
#    is left behind.
# 2. Under a real systemd (`systemd-nspawn --boot` into a second root, where the machine allows
#    it): the first install enables the unit and, without a key, does not start it; given one, the
#    unit starts with its whole sandbox (DynamicUser, SystemCallFilter, MemoryDenyWriteExecute,
#    ...) and serves; an upgrade restarts it; remove stops it; purge removes its cache. A syscall
#    the filter forbids shows up here.
# Both share this machine's loopback: the origin is a PNG served from outside on 127.0.0.1.
# Needs root and Debian's package mirror; touches nothing outside its temporary directory and
# the cache.
set -euo pipefail
deb=$(realpath "$1") upgrade=$(realpath "$2") expected=$3
cache=${IMAGEKIT_DEB_TEST_CACHE:-$HOME/.cache/imagekit}
base=$cache/debootstrap-bookworm-minbase.tar.gz
archives=$cache/debootstrap-apt-archives
[ "$(id -u)" = 0 ] || { echo "test-deb: needs root (debootstrap, chroot, mount, systemd-nspawn)" >&2; exit 2; }
missing=""
command -v debootstrap >/dev/null || missing="$missing debootstrap"
command -v curl >/dev/null || missing="$missing curl"
command -v systemd-nspawn >/dev/null || missing="$missing systemd-container"
command -v ffmpeg >/dev/null || missing="$missing ffmpeg"
[ -z "$missing" ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2; }
mkdir -p "$cache" "$archives/partial"
if [ ! -f "$base" ]; then
    echo "test-deb: making a minimal Debian 12 root (once) into $base" >&2
    fresh=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$fresh" http://deb.debian.org/debian >&2
    tar -C "$fresh" -czf "$base.partial" . && mv "$base.partial" "$base"
    rm -rf "$fresh"
fi

work=$(mktemp -d)
server="" origin="" nspawn=""
passed=0
pass() { passed=$((passed + 1)); echo "test-deb: ok: $*" >&2; }
fail() { echo "test-deb: FAILED: $*" >&2; echo "test-deb: $passed passed, 1 failed"; exit 1; }
unmount_root() {
    for mount in var/cache/apt/archives dev proc; do umount -l "$1/$mount" 2>/dev/null || true; done
}
cleanup() {
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    [ -z "$origin" ] || kill "$origin" 2>/dev/null || true
    [ -z "$nspawn" ] || kill -9 "$nspawn" 2>/dev/null || true
    wait 2>/dev/null || true
    for root in "$work"/root*; do [ -d "$root" ] && unmount_root "$root"; done
    rm -rf "$work"
}
trap cleanup EXIT

# A fresh root with the mirror's current bookworm (updates and security fixes) and systemd.
make_root() {
    local root=$1
    mkdir -p "$root"
    tar -C "$root" -xzf "$base"
    chmod 0755 "$root"  # the tarball's top is debootstrap's mktemp folder, 0700: no other user could reach /
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    mount --bind "$archives" "$root/var/cache/apt/archives"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
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
    for attempt in 1 2 3; do
        chroot "$root" apt-get -o APT::Sandbox::User=root update -qq >&2 && break
        [ $attempt -lt 3 ] || fail "apt-get update"
        sleep 5
    done
    apt_in "$root" install systemd systemd-sysv
    mkdir -p "$root/opt/debs"
    cp "$deb" "$root/opt/debs/imagekit.deb"
    cp "$upgrade" "$root/opt/debs/imagekit-upgrade.deb"
}
apt_in() { # apt_in ROOT apt-get-arguments…
    local root=$1; shift
    chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -o APT::Sandbox::User=root -y -qq --no-install-recommends "$@" >&2
}
package_version() { chroot "$1" dpkg-query -W -f '${Version}' imagekit 2>/dev/null || true; }
config_mode() { stat -c '%a %U:%G' "$1/etc/default/imagekit"; }

# The origin: a 640×480 PNG on loopback, outside the roots.
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
# And a 2-second H.264 MP4 (the package carries the Video trait): its poster through the unit.
ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=25:duration=2 -c:v libx264 \
    -pix_fmt yuv420p "$work/www/clip.mp4" </dev/null
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
origin_port=$(free_port)
python3 -m http.server "$origin_port" --bind 127.0.0.1 --directory "$work/www" >/dev/null 2>&1 &
origin=$!

# thumbnail PORT: the service on PORT makes a 100×75 PNG of the origin's photo.
thumbnail() {
    local status size
    status=$(curl -s -m 10 -o "$work/thumb" -w '%{http_code}' \
        "http://127.0.0.1:$1/unsafe/fit-in/100x100/127.0.0.1:$origin_port/photo.png" || true)
    size=$(python3 - "$work/thumb" <<'PY'
import struct, sys
try:
    data = open(sys.argv[1], "rb").read()
except OSError:
    data = b""
print("png %dx%d" % struct.unpack(">II", data[16:24]) if data[:8] == b"\x89PNG\r\n\x1a\n" else "not a PNG: %r" % data[:16])
PY
)
    [ "$status" = 200 ] && [ "$size" = "png 100x75" ] || { echo "test-deb: the thumbnail answered $status, $size (expected 200, png 100x75)" >&2; return 1; }
}
# poster PORT: the service makes a 160×120 JPEG of the video's frame at 1 s.
poster() {
    local status size
    status=$(curl -s -m 10 -o "$work/poster" -w '%{http_code}' \
        "http://127.0.0.1:$1/unsafe/160x120/filters:still(1)/127.0.0.1:$origin_port/clip.mp4" || true)
    size=$(python3 - "$work/poster" <<'PY'
import os, struct, sys
data = open(sys.argv[1], "rb").read() if os.path.exists(sys.argv[1]) else b""
i = 2
while data[:2] == b"\xff\xd8" and i + 9 < len(data):
    marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
    if marker in (0xC0, 0xC1, 0xC2):
        height, width = struct.unpack(">HH", data[i + 5:i + 9])
        print("jpeg %dx%d" % (width, height))
        break
    i += 2 + length
else:
    print("not a JPEG: %r" % data[:16])
PY
)
    [ "$status" = 200 ] && [ "$size" = "jpeg 160x120" ] || { echo "test-deb: the poster answered $status, $size (expected 200, jpeg 160x120)" >&2; return 1; }
}
wait_healthy() { # wait_healthy PORT SECONDS [PID]
    for _ in $(seq $(($2 * 10))); do
        curl -fs -m 1 "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0
        [ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
# The operator's settings: a port, unsigned URLs and the loopback origin allowed.
configure() { # configure ROOT PORT
    printf 'IMAGEKIT_SERVE_PORT=%s\nIMAGEKIT_SERVE_ALLOW_UNSAFE=true\nIMAGEKIT_SERVE_ALLOW_ADDRESS=127.0.0.1/32\n' "$2" \
        >> "$1/etc/default/imagekit"
}
# Every path below ROOT but the package manager's state, logs and the mounts.
list_files() {
    (cd "$1" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./var/cache/apt -o -path ./var/lib/apt \
        -o -path ./var/lib/dpkg -o -path ./var/log -o -path ./tmp -o -path ./run -o -path ./opt/debs \) -prune \
        -o -print | sort)
}

# ---- 1. chroot ---------------------------------------------------------------------------
root=$work/root1
make_root "$root"
# The dependencies first, so that the snapshot below holds what they add (and their triggers
# make): then whatever differs after purge is the package's own.
apt_in "$root" satisfy "$(dpkg-deb -f "$deb" Depends)"
list_files "$root" > "$work/before-install"
apt_in "$root" install /opt/debs/imagekit.deb
version=$(chroot "$root" /usr/bin/imagekit --version)
[ "$version" = "$expected" ] || fail "--version says '$version', expected '$expected'"
pass "installed with its dependencies; imagekit --version: $version"
[ "$(config_mode "$root")" = "600 root:root" ] || fail "/etc/default/imagekit is $(config_mode "$root"), expected 600 root:root"
chroot "$root" dpkg-query -W -f '${Conffiles}\n' imagekit | grep -q '^ /etc/default/imagekit ' \
    || fail "/etc/default/imagekit is not a conffile"
pass "/etc/default/imagekit: 0600 root:root, a conffile"
[ -L "$root/etc/systemd/system/multi-user.target.wants/imagekit.service" ] || fail "the unit was not enabled on install"
said=$(chroot "$root" systemd-analyze verify --man=no /lib/systemd/system/imagekit.service 2>&1) && [ -z "$said" ] \
    || fail "systemd-analyze verify in the root: $said"
pass "the unit enabled, and verified by the root's own systemd ($(chroot "$root" dpkg-query -W -f '${Version}' systemd))"

port=$(free_port)
configure "$root" "$port"
exec_start=$(sed -n 's/^ExecStart=//p' "$root/lib/systemd/system/imagekit.service")
serve_chroot() { # the service as the unit starts it: its ExecStart, with the installed environment file
    mkdir -p "$root/var/cache/imagekit"
    chroot "$root" /bin/sh -c "set -a; . /etc/default/imagekit; set +a; exec $exec_start" > "$work/serve.log" 2>&1 &
    server=$!
    wait_healthy "$port" 10 "$server" || { cat "$work/serve.log" >&2; fail "imagekit serve did not start"; }
    thumbnail "$port" || { cat "$work/serve.log" >&2; fail "$1"; }
    poster "$port" || { cat "$work/serve.log" >&2; fail "$1: a video's poster"; }
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
}
serve_chroot "a thumbnail after install"
pass "served a 100x75 thumbnail and a video's 160x120 poster through the unit's ExecStart"

# The first package left the file world-readable, and dpkg keeps an edited conffile's mode.
chmod 0644 "$root/etc/default/imagekit"
apt_in "$root" install /opt/debs/imagekit-upgrade.deb
[ "$(package_version "$root")" = "$(dpkg-deb -f "$upgrade" Version)" ] || fail "the upgrade left version $(package_version "$root")"
[ "$(config_mode "$root")" = "600 root:root" ] || fail "after the upgrade /etc/default/imagekit is $(config_mode "$root")"
grep -q "^IMAGEKIT_SERVE_PORT=$port\$" "$root/etc/default/imagekit" || fail "the upgrade lost the operator's settings"
pass "upgraded to $(package_version "$root"): the operator's settings kept, the file 0600 root:root again"
serve_chroot "a thumbnail after the upgrade"
pass "served a thumbnail after the upgrade"

apt_in "$root" remove imagekit
[ ! -e "$root/usr/bin/imagekit" ] || fail "remove left /usr/bin/imagekit"
[ -f "$root/etc/default/imagekit" ] || fail "remove took the conffile (only purge should)"
[ "$(readlink "$root/etc/systemd/system/imagekit.service")" = /dev/null ] || fail "remove did not mask the removed unit"
pass "removed: the binary gone, the settings kept, the unit masked"
apt_in "$root" purge imagekit
list_files "$root" > "$work/after-purge"
# Left after purge: anything that was not there before the package came.
comm -13 "$work/before-install" "$work/after-purge" > "$work/left"
[ ! -s "$work/left" ] || fail "purge left behind: $(tr '\n' ' ' < "$work/left")"
left=$(cd "$root" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./opt/debs -o -path ./var/log \) -prune -o -iname '*imagekit*' -print)
[ -z "$left" ] || fail "purge left behind: $left"
pass "purged: nothing of the package is left"
unmount_root "$root"

# ---- 2. under systemd ----------------------------------------------------------------------
root=$work/root2
make_root "$root"
unmount_root "$root"
systemd-nspawn --boot -D "$root" --register=no --keep-unit --console=passive --bind="$archives:/var/cache/apt/archives" \
    </dev/null > "$work/nspawn.log" 2>&1 &
nspawn=$!
in_root() { nsenter -t "$leader" -m -u -i -p -- "$@"; }
leader="" state=""
for _ in $(seq 100); do
    leader=$(pgrep -P "$nspawn" -x systemd || true)
    [ -z "$leader" ] || state=$(in_root systemctl is-system-running 2>/dev/null || true)
    case $state in running|degraded) break ;; esac
    kill -0 "$nspawn" 2>/dev/null || break
    sleep 0.3
done
[ "$state" != degraded ] || { echo "test-deb: the root booted degraded:" >&2; in_root systemctl --failed --no-pager >&2 || true; }
if [ -z "$leader" ] || { [ "$state" != running ] && [ "$state" != degraded ]; }; then
    cat "$work/nspawn.log" >&2
    echo "test-deb: systemd-nspawn --boot did not come up on this machine: the unit under systemd is not tested" >&2
    echo "test-deb: $passed passed, 0 failed (the chroot life cycle only)"
    exit 0
fi
pass "booted the root under systemd $(in_root systemctl --version | head -1 | cut -d' ' -f2) (systemd-nspawn)"
main_pid() { in_root systemctl show -p MainPID --value imagekit.service; }
unit_state() { in_root systemctl is-active imagekit.service 2>/dev/null || true; }
journal() { in_root journalctl -u imagekit.service --no-pager -n 30 -o cat >&2 || true; }
in_root env DEBIAN_FRONTEND=noninteractive apt-get -o APT::Sandbox::User=root install -y -qq --no-install-recommends \
    /opt/debs/imagekit.deb > "$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "apt-get install under systemd"; }
[ "$(in_root systemctl is-enabled imagekit.service)" = enabled ] || fail "the first install did not enable the unit"
[ "$(unit_state)" = inactive ] && grep -q "enabled, not started" "$work/install.log" \
    || fail "the first install without a key: the unit is $(unit_state), and said: $(cat "$work/install.log")"
pass "installed under systemd: enabled, and not started until it has a key (it says so)"
port=$(free_port)
configure "$root" "$port"
in_root systemctl start imagekit.service || true
wait_healthy "$port" 20 || { journal; fail "the unit did not start (state $(unit_state))"; }
thumbnail "$port" || { journal; fail "a thumbnail from the unit under systemd"; }
poster "$port" || { journal; fail "a video's poster from the unit under systemd (FFmpeg inside the sandbox)"; }
pid=$(main_pid)
uid=$(in_root awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[ "$uid" -ne 0 ] || fail "the service runs as root"
in_root test -d /var/cache/private/imagekit || fail "no cache directory under /var/cache/private"
pass "the unit started with its whole sandbox (dynamic uid $uid) and served a thumbnail and a video's poster"

in_root dpkg -i /opt/debs/imagekit-upgrade.deb >&2
wait_healthy "$port" 20 || { journal; fail "the unit did not come back after the upgrade (state $(unit_state))"; }
[ "$(main_pid)" != "$pid" ] || fail "the upgrade did not restart the service (MainPID $pid still)"
thumbnail "$port" || { journal; fail "a thumbnail after the upgrade under systemd"; }
pass "the upgrade restarted the service (MainPID $pid -> $(main_pid)) and it serves"

in_root dpkg -r imagekit >&2
[ "$(unit_state)" != active ] || fail "remove left the service running"
! curl -fs -m 2 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 || fail "remove left the port answering"
pass "remove stopped the service ($(unit_state))"
in_root dpkg -P imagekit >&2
! in_root test -e /var/cache/private/imagekit || fail "purge left the cache"
[ -z "$(cd "$root" && find . -xdev \( -path ./proc -o -path ./opt/debs -o -path ./var/log \) -prune -o -iname '*imagekit*' -print)" ] \
    || fail "purge left: $(cd "$root" && find . -xdev \( -path ./proc -o -path ./opt/debs -o -path ./var/log \) -prune -o -iname '*imagekit*' -print)"
pass "purge removed the cache and the unit's records"

in_root systemctl poweroff >/dev/null 2>&1 || true
for _ in $(seq 100); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.3; done
kill -9 "$nspawn" 2>/dev/null || true
wait "$nspawn" 2>/dev/null || true
nspawn=""
echo "test-deb: $passed passed, 0 failed"
