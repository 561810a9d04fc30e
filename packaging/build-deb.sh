#!/usr/bin/env bash
# Builds the Debian package of hutch with dpkg-deb: the files of stage.sh,
# the control file with VERSION, the conffiles and maintainer scripts.
# Usage: packaging/build-deb.sh BIN VERSION OUT.deb
set -euo pipefail
bin=$1 version=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(mktemp -d)
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT
"$here/stage.sh" "$bin" "$root"
install -d -m 0755 "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed "s/@VERSION@/$version/" "$here/debian/control.in" >"$root/DEBIAN/control"
echo "Installed-Size: $size" >>"$root/DEBIAN/control"
install -m 0644 "$here/debian/conffiles" "$root/DEBIAN/conffiles"
install -m 0755 "$here/debian/postinst" "$here/debian/prerm" "$here/debian/postrm" "$root/DEBIAN/"
dpkg-deb --root-owner-group -Zgzip --build "$root" "$out"
