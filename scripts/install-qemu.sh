#!/usr/bin/env bash
# Installs what QEMU guests need on a fresh Debian 12 machine, builds the
# lock-step plugin (target/release/libfsin_qemu_plugin.so), and builds the
# guest image (kernel + busybox initramfs) into a cache directory, reusing it
# when it is already there.
#
#   scripts/install-qemu.sh            install if missing, build the image if missing
#   scripts/install-qemu.sh --print    only print the image directory
#
# Environment:
#   FSIN_GUEST_DIR   image directory (default: ${XDG_CACHE_HOME:-$HOME/.cache}/fsin-guest)
#
# Packages: qemu-system-x86 is installed with apt-get (it brings its
# libraries); the kernel (linux-image-amd64) and busybox-static are only
# downloaded and unpacked into the cache, so the host's /boot and /bin stay
# untouched. The guests never get a host network interface: their only link
# is a socket netdev to nic-bridge on loopback.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${FSIN_GUEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fsin-guest}
if [ "${1:-}" = "--print" ]; then
    echo "$dir"
    exit 0
fi

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v qemu-system-x86_64 >/dev/null; then
    echo "install-qemu: installing qemu-system-x86" >&2
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-system-x86 >&2
fi

# The TCG plugin of lock-step runs, next to the fsin binary (target/release;
# `cargo test` does not build cdylib targets).
cargo build -q --release --manifest-path "$repo/Cargo.toml" -p fsin-qemu-plugin >&2

init="$repo/examples/qemu/guest/init"
stamp="$dir/image.stamp"
bench_src="$repo/guest-bench/src/main.rs"
want="$(sha256sum "$init" "$0" "$bench_src" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$dir/vmlinuz" ] && [ -f "$dir/initramfs.cpio.gz" ]; then
    echo "install-qemu: guest image up to date in $dir" >&2
    echo "$dir"
    exit 0
fi

echo "install-qemu: building the guest image in $dir" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
    as_root apt-get update -q
    kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
fi
[ -n "$kpkg" ] || { echo "install-qemu: no linux-image-amd64 package found" >&2; exit 1; }
# apt-get download writes as user _apt when it can: give it a directory it may write.
chmod 777 "$work"
apt-get download -q "$kpkg" busybox-static >&2
dpkg-deb -x "$kpkg"_*.deb kernel
dpkg-deb -x busybox-static_*.deb busybox

# The guest's network benchmark, a static binary (glibc static-pie).
RUSTFLAGS="-C target-feature=+crt-static -C strip=symbols" CARGO_PROFILE_RELEASE_DEBUG=0 \
    cargo build -q --release --manifest-path "$repo/Cargo.toml" -p fsin-guest-bench \
    --target x86_64-unknown-linux-gnu --target-dir "$repo/target/guest" >&2

root="$work/root"
mkdir -p "$root/bin" "$root/lib/modules" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp busybox/bin/busybox "$root/bin/busybox"
find kernel/lib/modules -name e1000.ko -exec cp {} "$root/lib/modules/e1000.ko" \;
[ -f "$root/lib/modules/e1000.ko" ] || { echo "install-qemu: e1000.ko not in $kpkg" >&2; exit 1; }
cp "$init" "$root/init"
cp "$repo/target/guest/x86_64-unknown-linux-gnu/release/fsin-bench" "$root/bin/fsin-bench"
chmod 755 "$root/init" "$root/bin/busybox"

mkdir -p "$dir"
(cd "$root" && find . | "$root/bin/busybox" cpio -o -H newc 2>/dev/null) | gzip -9 > "$dir/initramfs.cpio.gz"
cp kernel/boot/vmlinuz-* "$dir/vmlinuz"
echo "$kpkg" > "$dir/kernel.version"
echo "$want" > "$stamp"
echo "install-qemu: guest image ready ($kpkg)" >&2
echo "$dir"
