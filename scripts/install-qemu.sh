#!/usr/bin/env bash
# Installs what QEMU guests need on a fresh Debian 12 machine, builds the
# lock-step plugin (target/release/libfsin_qemu_plugin.so, copied into DIR
# for an installed fsin), and builds the
# two guest images into a cache directory, reusing each one while the files
# it is made from are unchanged (a content hash in its image.stamp):
#
#   DIR       busybox image: Debian kernel + busybox initramfs (pings, the
#             guests' network benchmark)
#   DIR/mpi   MPI image: Debian kernel + a Debian 12 userland with Open MPI
#             (openmpi-bin), HPC Challenge (hpcc), NetPIPE (netpipe-openmpi,
#             NPopenmpi), iperf3, our MPI kernels fsin-is, fsin-cg and
#             fsin-calls (examples/qemu/mpi) and the MPI tracing library
#             libfsin-mpitrace.so (mpi-trace), built with the host's mpicc
#             from libopenmpi-dev, its region-of-interest header
#             fsin_roi.h and command fsin-roi-mark (mpi-trace), as a
#             read-only EROFS file system
#             (root.erofs) that every guest maps from the one host file, and
#             a small initramfs that mounts it; what `fsin qemu --run` and
#             `--app` boot
#
#   DIR/mpi-HASH  with --packages: the MPI image with more Debian packages,
#             one directory per package list (HASH is the list's)
#
#   scripts/install-qemu.sh               install if missing, build what is missing
#   scripts/install-qemu.sh --print       only print DIR
#   scripts/install-qemu.sh --no-mpi      skip the MPI image
#   scripts/install-qemu.sh --packages PKG[,PKG...]
#                                         build the MPI image with these Debian
#                                         packages added; prints its directory
#                                         last, for `fsin qemu --image`
#
# Environment:
#   FSIN_GUEST_DIR   DIR (default: ${XDG_CACHE_HOME:-$HOME/.cache}/fsin-guest)
#
# Everything comes from Debian's package archive, through this machine's
# apt sources (plus bookworm-backports for QEMU 10.0 on Debian 12):
# qemu-system-x86, cpio and mmdebstrap are installed with apt-get;
# erofs-utils makes the MPI image's root file system;
# the kernel (linux-image-amd64) and busybox-static are only downloaded and
# unpacked into the cache, so the host's /boot and /bin stay untouched; the
# MPI userland is made by mmdebstrap (root needed, as in CI) with
# SOURCE_DATE_EPOCH fixed, and packed with fixed times, a fixed file order
# and inode numbers (GNU cpio --reproducible) or a fixed UUID (mkfs.erofs),
# so the same package versions give the same image bytes. The
# package versions are listed in DIR/mpi/packages.txt. The guests never get
# a host network interface: their only link is a socket netdev to
# nic-bridge on loopback.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${FSIN_GUEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fsin-guest}
mpi=1
extra=""
usage="usage: $0 [--print | --no-mpi | --packages PKG[,PKG...]]"
case "${1:-}" in
    --print) echo "$dir"; exit 0 ;;
    --no-mpi) mpi=0 ;;
    --packages)
        [ -n "${2:-}" ] || { echo "$usage" >&2; exit 2; }
        for p in $(echo "$2" | tr , ' '); do
            [[ $p =~ ^[a-z0-9][a-z0-9+.-]+$ ]] || {
                echo "install-qemu: --packages: '$p' is not a Debian package name" >&2
                exit 2
            }
        done
        # Sorted and without repeats: the same set, the same image.
        extra=$(echo "$2" | tr , '\n' | LC_ALL=C sort -u | paste -sd, -)
        ;;
    "") ;;
    *) echo "$usage" >&2; exit 2 ;;
esac
export SOURCE_DATE_EPOCH=1700000000

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}
apt_install() {
    as_root apt-get update -q >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
}

# Lock-step needs QEMU 10.0: the plugin drives QEMU's virtual clock through
# internals whose layouts are 10.0's (qemu-plugin/src/api.rs). Debian 12
# ships 7.2, so QEMU comes from bookworm-backports (same archive, same
# keyring), pinned to the 10.0 series for the QEMU packages only; every
# other package keeps coming from the machine's own suites.
qemu_version() {
    qemu-system-x86_64 --version 2>/dev/null | sed -n 's/^QEMU emulator version \([0-9]*\.[0-9]*\).*/\1/p'
}
if [ "$(qemu_version)" != 10.0 ]; then
    if [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = bookworm ]; then
        as_root tee /etc/apt/sources.list.d/fsin-bookworm-backports.sources >/dev/null <<'EOF2'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF2
        as_root tee /etc/apt/preferences.d/fsin-qemu >/dev/null <<'EOF2'
# fsin-rs (scripts/install-qemu.sh): QEMU 10.0 from bookworm-backports.
Package: qemu-system-x86 qemu-system-common qemu-system-data qemu-utils qemu-block-extra
Pin: version 1:10.0.*
Pin-Priority: 990

Package: seabios ipxe-qemu
Pin: release n=bookworm-backports
Pin-Priority: 990
EOF2
    fi
    apt_install qemu-system-x86
    if [ "$(qemu_version)" != 10.0 ]; then
        echo "install-qemu: QEMU 10.0 is needed for lock-step, found '$(qemu_version)'" >&2
        exit 1
    fi
fi
# GNU cpio: --reproducible numbers inodes from 1 and zeroes device numbers.
command -v cpio >/dev/null || apt_install cpio
command -v mkfs.erofs >/dev/null || apt_install erofs-utils
command -v xz >/dev/null || apt_install xz-utils

# The TCG plugin of lock-step runs, next to the fsin binary (target/release;
# `cargo test` does not build cdylib targets).
cargo build -q --release --manifest-path "$repo/Cargo.toml" -p fsin-qemu-plugin >&2
# ... and a copy beside the images, where an installed `fsin` (cargo
# install --path sim-server) looks for it. Copied only when it changed: a
# checkpoint's identity holds the plugin's size and time, so running this
# script again with the same plugin keeps every checkpoint made with it.
mkdir -p "$dir"
if ! cmp -s "$repo/target/release/libfsin_qemu_plugin.so" "$dir/libfsin_qemu_plugin.so"; then
    install -m 644 "$repo/target/release/libfsin_qemu_plugin.so" "$dir/libfsin_qemu_plugin.so"
fi

init="$repo/examples/qemu/guest/init"
# What each image is made from: this script, the guest's /init, the
# guest-side binary's sources, the MPI kernels' and the MPI tracing
# library's and its header's (in C collation order).
# sim-server/build.rs computes the same stamp, for `fsin doctor`.
base_hash="$(LC_ALL=C; cat "$0" "$init" "$repo"/guest-bench/Cargo.toml "$repo"/guest-bench/src/*.rs "$repo"/examples/qemu/mpi/*.c "$repo"/mpi-trace/*.c "$repo"/mpi-trace/*.h | sha256sum | cut -c1-16)"
# The MPI image to build: the default one, or one with more packages
# (its stamp covers the package list too).
mpi_dir="$dir/mpi"
mpi_stamp=$base_hash
if [ -n "$extra" ]; then
    mpi_dir="$dir/mpi-$(echo "$extra" | sha256sum | cut -c1-12)"
    mpi_stamp=$(echo "$base_hash $extra" | sha256sum | cut -c1-16)
fi
# What the last line prints: the image directory asked for.
result=$dir
[ -z "$extra" ] || result=$mpi_dir
fresh() { # DIR STAMP [FILE...]: the image in DIR is built from the current sources
    local d=$1 stamp=$2 f
    [ -f "$d/image.stamp" ] && [ "$(cat "$d/image.stamp")" = "$stamp" ] || return 1
    shift 2
    for f in vmlinuz vmlinux initramfs.cpio.gz "$@"; do [ -f "$d/$f" ] || return 1; done
}
if fresh "$dir" "$base_hash" && { [ $mpi = 0 ] || fresh "$mpi_dir" "$mpi_stamp" root.erofs; }; then
    echo "install-qemu: guest images up to date in $dir" >&2
    echo "$result"
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
    as_root apt-get update -q >&2
    kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
fi
[ -n "$kpkg" ] || { echo "install-qemu: no linux-image-amd64 package found" >&2; exit 1; }
# apt-get download writes as user _apt when it can: give it a directory it may write.
chmod 777 "$work"
apt-get download -q "$kpkg" busybox-static >&2
dpkg-deb -x "$kpkg"_*.deb kernel
dpkg-deb -x busybox-static_*.deb busybox
# The kernel uncompressed: QEMU boots an ELF vmlinux with a PVH entry
# directly, where a bzImage would first decompress itself (XZ) under TCG,
# about 4.5 billion guest instructions per boot.
xz_at=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' kernel/boot/vmlinuz-* | head -1 | cut -d: -f1)
[ -n "$xz_at" ] || { echo "install-qemu: no XZ payload in $kpkg's vmlinuz" >&2; exit 1; }
tail -c +$((xz_at + 1)) kernel/boot/vmlinuz-* > vmlinux.xz
xz -dc --single-stream vmlinux.xz > vmlinux

# The guest side (benchmark, remote shell, application runner), a static
# binary (glibc static-pie).
RUSTFLAGS="-C target-feature=+crt-static -C strip=symbols" CARGO_PROFILE_RELEASE_DEBUG=0 \
    cargo build -q --release --manifest-path "$repo/Cargo.toml" -p fsin-guest-bench \
    --target x86_64-unknown-linux-gnu --target-dir "$repo/target/guest" >&2

# The kernel modules each image's /init loads, in dependency order: the NIC
# and fw_cfg (the --run command), and for the shared root virtio-pmem,
# EROFS and overlayfs.
guest_modules="e1000 qemu_fw_cfg"
shared_root_modules="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
    libnvdimm nd_virtio virtio_pmem nd_btt nd_pmem crc32c_generic libcrc32c erofs overlay"
add_modules() { # ROOT MODULE...
    local root=$1 m
    shift
    mkdir -p "$root/lib/modules"
    for m in "$@"; do
        find kernel/lib/modules -name "$m.ko" -exec cp {} "$root/lib/modules/$m.ko" \;
        [ -f "$root/lib/modules/$m.ko" ] || { echo "install-qemu: $m.ko not in $kpkg" >&2; exit 1; }
        echo "$m" >> "$root/lib/modules/fsin.modules"
    done
}
# The pieces of ours in both images: /init, the modules, fsin-bench (and
# fsin-rsh, the same binary).
add_fsin() { # ROOT
    local root=$1
    mkdir -p "$root/usr/bin"
    # shellcheck disable=SC2086
    add_modules "$root" $guest_modules
    cp "$init" "$root/init"
    cp "$repo/target/guest/x86_64-unknown-linux-gnu/release/fsin-bench" "$root/usr/bin/fsin-bench"
    ln -sf fsin-bench "$root/usr/bin/fsin-rsh"
    chmod 755 "$root/init" "$root/usr/bin/fsin-bench"
}
# Puts busybox in ROOT as /bin/busybox and /bin/sh (the init's interpreter,
# and the shell of fsin-bench's runner and remote shell; the MPI image's
# own /bin/sh is dash).
add_busybox() { # ROOT
    mkdir -p "$1/bin"
    cp busybox/bin/busybox "$1/bin/busybox"
    chmod 755 "$1/bin/busybox"
    ln -s busybox "$1/bin/sh"
}
# Packs ROOT as DEST/initramfs.cpio.gz (sorted names, fixed times) with the
# kernel, stamped STAMP.
pack() { # ROOT DEST STAMP
    local root=$1 dest=$2 stamp=$3
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    mkdir -p "$dest"
    (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --reproducible --quiet) |
        gzip -n -6 > "$dest/initramfs.cpio.gz"
    cp kernel/boot/vmlinuz-* "$dest/vmlinuz"
    cp vmlinux "$dest/vmlinux"
    echo "$kpkg" > "$dest/kernel.version"
    echo "$stamp" > "$dest/image.stamp"
}

if ! fresh "$dir" "$base_hash"; then
    echo "install-qemu: building the busybox guest image in $dir" >&2
    root="$work/root"
    mkdir -p "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
    add_busybox "$root"
    add_fsin "$root"
    pack "$root" "$dir" "$base_hash"
    echo "install-qemu: busybox guest image ready ($kpkg)" >&2
fi

# Makes ROOT DEST/root.erofs (uncompressed, so that guests read it in place
# through DAX; padded to 2 MiB, the granule of QEMU's memory devices), and
# DEST/initramfs.cpio.gz the stage that mounts it: busybox, the modules,
# /init.
pack_shared() { # ROOT DEST STAMP
    local root=$1 dest=$2 stamp=$3 stage1="$work/stage1"
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    mkdir -p "$dest" "$stage1/fsin-stage1"
    rm -f "$dest/root.erofs"
    mkfs.erofs --quiet -T"$SOURCE_DATE_EPOCH" -U 9d3e0c52-7a51-4c4e-8f0e-5f51a0000031 \
        "$dest/root.erofs" "$root" >&2
    truncate -s "$(( ($(stat -c %s "$dest/root.erofs") + 2097151) / 2097152 * 2097152 ))" "$dest/root.erofs"
    add_busybox "$stage1"
    # shellcheck disable=SC2086
    add_modules "$stage1" $shared_root_modules $guest_modules
    install -m 755 "$init" "$stage1/init"
    pack "$stage1" "$dest" "$stamp"
}

if [ $mpi = 1 ] && ! fresh "$mpi_dir" "$mpi_stamp" root.erofs; then
    echo "install-qemu: building the MPI guest image in $mpi_dir (Debian userland${extra:+ + $extra}, a few minutes)" >&2
    command -v mmdebstrap >/dev/null || apt_install mmdebstrap
    . /etc/os-release
    sources=()
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -s "$f" ] && grep -qv '^\s*\(#\|$\)' "$f" && sources+=("$f")
    done
    [ ${#sources[@]} -gt 0 ] || { echo "install-qemu: no apt sources on this machine" >&2; exit 1; }
    root="$work/mpiroot"
    # Open MPI, HPCC (with the reference BLAS), NetPIPE, iperf3; busybox
    # for the init's tools (ip, ping, insmod, ...). No recommends, no docs.
    as_root mmdebstrap --quiet --variant=essential \
        --aptopt='APT::Install-Recommends "false"' \
        --include=openmpi-bin,hpcc,libblas3,netpipe-openmpi,iperf3,busybox-static${extra:+,$extra} \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
        "$VERSION_CODENAME" "$root" "${sources[@]}" >&2
    dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Package} ${Version}\n' > "$work/packages.txt"
    # What nothing in the guest runs: perl's modules (perl-base stays),
    # hwloc's plugins (X11, ICU) and the package caches.
    rm -rf "$root/usr/share/perl" "$root/usr/lib/x86_64-linux-gnu/perl" \
        "$root/usr/lib/x86_64-linux-gnu/hwloc" "$root"/usr/lib/x86_64-linux-gnu/libicu* \
        "$root"/var/cache/* "$root"/var/lib/apt/lists/*
    # Open MPI on the simulated cluster: daemons start through fsin-rsh, in
    # a tree of 8 children per daemon (mpirun alone starting 63 remote
    # shells took 1.9 guest s of guest 0's kernel time; docs/qemu.md),
    # ranks talk TCP over eth0 (the simulated network) or shared memory.
    cat >> "$root/etc/openmpi/openmpi-mca-params.conf" <<'EOF'
# fsin-rs guest image (scripts/install-qemu.sh)
plm_rsh_agent = fsin-rsh
routed_radix = 8
pml = ob1
btl = self,vader,tcp
osc = ^ucx
btl_tcp_if_include = eth0
oob_tcp_if_include = eth0
rmaps_base_oversubscribe = 1
hwloc_base_binding_policy = none
EOF
    add_fsin "$root"
    # Our MPI kernels (examples/qemu/mpi, `fsin qemu --app is|cg`; calls,
    # the MPI tracing test's program), and the MPI tracing library
    # (mpi-trace, `fsin qemu --trace-level mpi`), built with this Debian 12
    # host's Open MPI, the guests' own.
    command -v mpicc >/dev/null || apt_install libopenmpi-dev
    for k in is cg calls pingpong; do
        mpicc -O2 -o "$root/usr/local/bin/fsin-$k" "$repo/examples/qemu/mpi/$k.c" -lm >&2
    done
    mpicc -O2 -shared -fPIC -o "$root/usr/local/lib/libfsin-mpitrace.so" \
        "$repo/mpi-trace/fsin-mpitrace.c" "$repo/mpi-trace/fsin-mpitrace-collectives.c" >&2
    # The region-of-interest marks of `--roi marker` for programs of any
    # kind: the header, and a command for shell scripts.
    mkdir -p "$root/usr/local/include"
    install -m 644 "$repo/mpi-trace/fsin_roi.h" "$root/usr/local/include/fsin_roi.h"
    "$(mpicc --showme:command)" -O2 -o "$root/usr/local/bin/fsin-roi-mark" \
        "$repo/mpi-trace/fsin-roi-mark.c" >&2
    # ... and the launchers that load it into the ranks only, with what
    # it is to do there (FSIN_MPI: trace, roi=mpi, roi=marker; `fsin qemu
    # --trace-level mpi` and `--roi` put them first on the command's PATH).
    mkdir -p "$root/usr/local/libexec/fsin-mpitrace"
    for l in mpirun mpiexec; do
        printf '#!/bin/sh\n# fsin-rs: %s with the MPI tracing library in the ranks\nexec /usr/bin/%s -x LD_PRELOAD=/usr/local/lib/libfsin-mpitrace.so -x "FSIN_MPI=${FSIN_MPI:-trace}" "$@"\n' \
            "$l" "$l" > "$root/usr/local/libexec/fsin-mpitrace/$l"
        chmod 755 "$root/usr/local/libexec/fsin-mpitrace/$l"
    done
    pack_shared "$root" "$mpi_dir" "$mpi_stamp"
    cp "$work/packages.txt" "$mpi_dir/packages.txt"
    [ -z "$extra" ] || echo "$extra" | tr , '\n' > "$mpi_dir/packages.requested"
    echo "install-qemu: MPI guest image ready ($(du -h "$mpi_dir/root.erofs" | cut -f1) shared root, $(wc -l < "$mpi_dir/packages.txt") packages)" >&2
fi
echo "$result"
