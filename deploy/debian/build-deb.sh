#!/usr/bin/env bash
# make deb: the Debian package of `imagekit`, built with Debian's own tools.
#   deploy/debian/build-deb.sh BINARY VERSION OUTDIR [REVISION]
# BINARY is `make dist`'s (the Swift runtime linked in, so only C libraries remain to depend
# on). Its dependencies are computed by dpkg-shlibdeps from the libraries it links, never typed
# here. File times are the commit's (SOURCE_DATE_EPOCH), so the same commit gives the same bytes.
set -euo pipefail
binary=$1 version=$2 outdir=$3 revision=${4:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/deploy/debian
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}
arch=$(dpkg --print-architecture)
pkg=$work/imagekit

install -D -m 0755 "$binary" "$pkg/usr/bin/imagekit"
strip --strip-unneeded "$pkg/usr/bin/imagekit"
install -D -m 0644 "$here/imagekit.service" "$pkg/lib/systemd/system/imagekit.service"
# Signing keys, salts, the admin key and S3 secrets go here: readable by root alone (systemd
# reads EnvironmentFile= as root before it drops to the dynamic user).
install -D -m 0600 "$here/imagekit.default" "$pkg/etc/default/imagekit"
install -D -m 0644 "$root/README.md" "$pkg/usr/share/doc/imagekit/README.md"
install -D -m 0644 "$root/LICENSE" "$pkg/usr/share/doc/imagekit/copyright"

# The manual page: the tool's own --help texts (ArgumentParser's), under roff headings.
mkdir -p "$pkg/usr/share/man/man1"
{
    printf '.TH IMAGEKIT 1 "%s" "imagekit %s" "User Commands"\n' "$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)" "$version"
    printf '.SH NAME\nimagekit \\- inspect, decode, convert and serve images\n'
    for command in "" serve; do
        printf '.SH %s\n.nf\n' "$( [ -z "$command" ] && echo DESCRIPTION || echo "IMAGEKIT SERVE")"
        "$binary" $command --help 2>&1 | sed -e 's/\\/\\e/g' -e 's/^\./\\\&./'
        printf '.fi\n'
    done
    printf '.SH FILES\n.TP\n/etc/default/imagekit\nIMAGEKIT_SERVE_* options of the imagekit service.\n'
    printf '.TP\n/var/cache/imagekit\nThe service'"'"'s source and result cache.\n'
    printf '.SH SEE ALSO\nsystemctl(1), /usr/share/doc/imagekit/README.md\n'
} | gzip -9n > "$pkg/usr/share/man/man1/imagekit.1.gz"

# systemd's own check of the unit (against the staged binary: the unit names its installed path).
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir -p "$work/verify"
    sed "s|/usr/bin/imagekit|$pkg/usr/bin/imagekit|" "$here/imagekit.service" > "$work/verify/imagekit.service"
    # It exits 0 after a line it could not parse, so anything it says is a failure.
    said=$(systemd-analyze verify --man=no "$work/verify/imagekit.service" 2>&1) && [ -z "$said" ] \
        || { echo "$said" >&2; echo "build-deb: systemd-analyze verify refused imagekit.service" >&2; exit 1; }
else
    echo "build-deb: no systemd-analyze on this machine: the unit is not verified" >&2
fi

mkdir -p "$pkg/DEBIAN" "$work/src/debian"
printf 'Source: imagekit\n\nPackage: imagekit\nArchitecture: any\n' > "$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O -e "$pkg/usr/bin/imagekit" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
installed=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: imagekit
Version: $version-$revision
Architecture: $arch
Maintainer: ImageKit maintainers <maintainers@users.noreply.github.com>
Installed-Size: $installed
Depends: $depends
Pre-Depends: init-system-helpers (>= 1.54~)
Section: graphics
Priority: optional
Description: image loading library's command-line tool and image service
 imagekit decodes, converts and thumbnails JPEG, PNG, GIF, WebP, AVIF, HEIC,
 JPEG XL, TIFF, BMP, ICO and SVG, and serves thumbor and imgproxy image URLs
 over HTTP (imagekit serve), with signed URLs, caching, metrics and a
 systemd unit (imagekit.service).
CONTROL
printf '/etc/default/imagekit\n' > "$pkg/DEBIAN/conffiles"
# The maintainer scripts follow Debian's conventions for a package with a systemd unit (what
# dh_installsystemd would write): deb-systemd-helper records the unit's enablement, so that an
# operator's `systemctl disable` survives upgrades and purge removes only the package's links;
# deb-systemd-invoke acts only where systemd runs and honours policy-rc.d.
for script in postinst prerm postrm; do
    install -m 0755 "$here/maintainer/$script" "$pkg/DEBIAN/$script"
done
find "$pkg" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
mkdir -p "$outdir"
deb="$outdir/imagekit_${version}-${revision}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >&2
echo "$deb"
