# shellcheck shell=bash
# Common settings for the allocprof scripts; sourced, not run.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${ALLOCPROF_CACHE:-$HOME/.cache/allocprof}
# What is built from this checkout's files and run by its guests (the module
# and test modules, the selftests, the host tool, the initramfs) and the
# test logs scripts/check counts: in a directory of the cache that names
# the checkout (its directory's name and a hash of its real path), so that
# two checkouts never run, or count, each other's builds (issue #40).  The
# kernels stay shared: their cache key holds the patches and configs.  The
# Makefile computes the same path (CHECKOUT_CACHE; make print-checkout-cache).
checkout_cache() {
	local real
	real=$(realpath "$1")
	printf '%s/checkout/%s-%s\n' "$CACHE" "$(basename "$real")" "$(printf '%s' "$real" | sha256sum | cut -c1-12)"
}
CHECKOUT_CACHE=$(checkout_cache "$ROOT")
# Notes this checkout's path in its directory, and removes the directories
# of checkouts that are gone (a CI run's clone, a deleted worktree), so
# that the cache does not grow by a few hundred MB a clone.
checkout_cache_tidy() {
	local d path
	mkdir -p "$CHECKOUT_CACHE"
	realpath "$ROOT" >"$CHECKOUT_CACHE/.checkout"
	for d in "$CACHE"/checkout/*/; do
		path=$(cat "$d/.checkout" 2>/dev/null) || continue
		[ -e "$path/Makefile" ] || { say "removing the cache of the checkout $path, which is gone: $d"; rm -rf "$d"; }
	done
}
KFLAVOUR=${KFLAVOUR:-base}
KSRC_PKG=linux-source-6.12
# shellcheck disable=SC2034 # used by the scripts that source lib.sh
KSRC_TARBALL=/usr/src/linux-source-6.12.tar.xz
RUSTC_BIN=/usr/bin/rustc
# shellcheck disable=SC2034 # used by the scripts that source lib.sh
BINDGEN_VERSION=0.69.5
BINDGEN_BIN=${BINDGEN_BIN:-$HOME/.cargo/bin/bindgen}
# promtool, for the allocinfo crate's test of its Prometheus output: taken
# out of Debian's prometheus package by scripts/setup, not installed (that
# would start a Prometheus server on this machine).
# shellcheck disable=SC2034 # used by the scripts that source lib.sh
PROMTOOL_BIN=$CACHE/tools/promtool
# The Prometheus server of make distro-check, from the same package.
# shellcheck disable=SC2034 # used by the scripts that source lib.sh
PROMETHEUS_BIN=$CACHE/tools/prometheus
LLVM_SUFFIX=-19

# Packages installed by scripts/setup, by name only: everything the
# Makefile and scripts call that a minimal Debian 12 root (mmdebstrap
# --variant=minbase, scripts/fresh-check) lacks.  cargo-web and rustfmt-web
# are the cargo and rustfmt of rustc-web (the host crates, bindgen-cli);
# ca-certificates lets cargo reach the registry; openssl makes each kernel's
# module-signing key (CONFIG_MODULE_SIG, qemu/kconfig-base.fragment).
# shellcheck disable=SC2034 # used by the scripts that source lib.sh
APT_PACKAGES=(
	"$KSRC_PKG" rustc-web rust-web-src rust-web-clippy cargo-web rustfmt-web
	libclang-dev gcc make clang-19 lld-19 llvm-19 qemu-system-x86 busybox-static
	flex bison bc cpio kmod libelf-dev libssl-dev xz-utils python3 perl rsync
	patch ca-certificates openssl shellcheck
)

# The guest machine (qemu/run, bench/trace): two NUMA nodes with one vCPU
# and 1 GiB each, as a small two-socket server (page migration between
# nodes, per-node slabs and page lists).
# shellcheck disable=SC2034,SC2054 # used by qemu/run and bench/trace; qemu's commas
GUEST_MACHINE=(-smp 2,sockets=2,cores=1,threads=1 -m 2G
	-object memory-backend-ram,id=mem0,size=1G -numa node,nodeid=0,cpus=0,memdev=mem0
	-object memory-backend-ram,id=mem1,size=1G -numa node,nodeid=1,cpus=1,memdev=mem1)

_t0=$(date +%s)
die() { printf 'allocprof: error: %s\n' "$*" >&2; exit 1; }
say() { printf '[%4ss] %s\n' "$(($(date +%s) - _t0))" "$*" >&2; }

case "$KFLAVOUR" in
base | debug | upstream | noprof | distro) ;;
# >>> kver
base-7.3 | upstream-7.3 | noprof-7.3 | debug-7.3 | distro-7.3) ;;
# <<< kver
*) die "unknown KFLAVOUR '$KFLAVOUR' (base, debug, upstream, noprof or distro)" ;;
esac

# Version of the kernel source package, e.g. 6.12.117-1~deb12u1.
ksrc_version() {
	dpkg-query -W -f '${Version}' "$KSRC_PKG" 2>/dev/null ||
		die "$KSRC_PKG is not installed: run scripts/setup"
}

# The same, usable in a path (make does not like '~').
ksrc_tag() { ksrc_version | tr -c 'A-Za-z0-9.+\n-' '_'; }

# series_patches DIR: the patches of the series in DIR (patches/), one path
# a line, in order: the *.patch files that hold a diff.  The cover letter
# that git format-patch --cover-letter writes, 0000-cover-letter.patch, has
# none and is never applied (patch(1) stops on it: "Only garbage was found
# in the patch input"), nor part of a kernel's cache key.
series_patches() {
	local p
	for p in "$1"/*.patch; do
		[ -e "$p" ] || continue
		if grep -q '^+++ ' "$p"; then printf '%s\n' "$p"; fi
	done
}

# apt_install_missing LOG PACKAGE...: installs (as root, without
# recommends) those of the Debian packages that are not installed, apt's
# output in LOG; without root it fails naming them.  Updates the package
# lists first unless APT_NO_UPDATE=1.
apt_install_missing() {
	local log=$1 p missing=()
	shift
	for p in "$@"; do
		dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	[ "$(id -u)" -eq 0 ] || die "missing Debian packages: ${missing[*]}; run this as root (apt-get install)"
	say "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if [ "${APT_NO_UPDATE:-0}" != 1 ]; then
		apt-get update -q >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "apt-get update failed"; }
	fi
	apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
		{ tail -n 20 "$log" >&2; die "apt-get install failed"; }
}

# tool_from_deb PACKAGE PATH DEST: the program PATH (e.g. usr/bin/promtool)
# out of Debian's PACKAGE, downloaded (not installed), to DEST.
tool_from_deb() {
	local pkg=$1 path=$2 dest=$3 d
	[ ! -x "$dest" ] || return 0
	say "taking /$path out of Debian's $pkg package"
	d=$(mktemp -d)
	if ! (cd "$d" && apt-get download -q "$pkg" >/dev/null 2>&1); then
		[ "$(id -u)" -eq 0 ] && apt-get update -q >/dev/null
		(cd "$d" && apt-get download -q "$pkg" >/dev/null) || die "apt-get download $pkg failed"
	fi
	# shellcheck disable=SC2012,SC2015 # a .deb's name has no blank; die if either step fails
	dpkg-deb -x "$d/$(cd "$d" && ls "${pkg}"_*.deb | head -n1)" "$d/x" &&
		install -D -m 755 "$d/x/$path" "$dest" || die "no /$path in Debian's $pkg package"
	rm -rf "$d"
}

# Where the flavour's kernel source and build tree live.
flavour_src() {
	local v
	v=$(ksrc_tag)
	if [ "$KFLAVOUR" = upstream ] || [ "$KFLAVOUR" = noprof ]; then
		echo "$CACHE/src/pristine-$v"
	else
		echo "$CACHE/src/patched-$v"
	fi
}
flavour_obj() { echo "$CACHE/build/$KFLAVOUR"; }

# Make variables for building the kernel and modules of the flavour, one a
# line: mapfile -t ARRAY < <(kmake_vars).
kmake_vars() {
	printf '%s\n' ARCH=x86_64 "RUSTC=$RUSTC_BIN" "BINDGEN=$BINDGEN_BIN"
	if [ "$KFLAVOUR" = debug ]; then
		echo "LLVM=$LLVM_SUFFIX"
	fi
}

# Run a long command with its output in a log; a heartbeat line every
# minute; the log's tail on failure.
run_logged() {
	local log=$1 what=$2
	shift 2
	local start pid rc
	start=$(date +%s)
	"$@" >"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		for _ in $(seq 60); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 1
		done
		if kill -0 "$pid" 2>/dev/null; then
			say "  $what: $(($(date +%s) - start))s, $(wc -l <"$log") log lines, last: $(tail -n1 "$log" | cut -c1-60)"
		fi
	done
	# (`|| rc=$?`: under set -e a plain failing wait would end the
	# caller before the log's tail is printed.)
	rc=0
	wait "$pid" || rc=$?
	if [ "$rc" -ne 0 ]; then
		printf '\n--- last 40 lines of %s ---\n' "$log" >&2
		tail -n 40 "$log" >&2
		die "$what failed (exit $rc); full log: $log"
	fi
	say "  $what: done in $(($(date +%s) - start))s"
}

# warn_read_whole RC OUT: whether a qemu/run of the gate's deliberate
# WARN() (its output in OUT, its exit code RC) exited 120 and the kernel
# log it read has the whole warning, to its last record ("end trace"),
# though the WARN() was the command's last act (qemu/kmsg.c reads on after
# the command).  Sets klog (that kernel log's path) and kfig (qemu/run's
# "kernel log:" figures) for the caller's message.  scripts/check's gate
# and scripts/gate-soak's capture runs.
warn_read_whole() {
	klog=$(tr -d '\r' <"$2" | sed -n 's/^qemu\/run: kernel reports: [0-9]* (kernel log: \(.*\))$/\1/p' | tail -n1)
	# shellcheck disable=SC2034 # for the caller's message
	kfig=$(tr -d '\r' <"$2" | sed -n 's/^qemu\/run: kernel log: //p' | tail -n1)
	[ "$1" = 120 ] && [ -n "$klog" ] && grep -q 'allocprof_test: deliberate warning' "$klog" &&
		grep -q -- '---\[ end trace' "$klog"
}
# >>> kver

# The kernel version (issue #43): a flavour NAME-V is NAME's configuration
# on Linux V (upstream-7.3); without a version in its name, KVER's (6.12
# unless set: KVER=7.3 scripts/kernel-source pristine).  For a version
# other than 6.12, scripts/lib-kver.sh sets KSRC_*, BINDGEN_* and the
# flavour's paths.  Lines between these ">>> kver" and "<<< kver" marks
# (here, in scripts/build-kernel and scripts/kernel-source) are not part of
# a 6.12 kernel's cache key (build-kernel): they change nothing for 6.12,
# and adding a kernel version must rebuild none of its kernels.
case "$KFLAVOUR" in
*-7.3)
	[ -z "${KVER:-}" ] || [ "$KVER" = 7.3 ] || die "KFLAVOUR=$KFLAVOUR is a 7.3 flavour, but KVER=$KVER"
	KVER=7.3
	;;
esac
KVER=${KVER:-6.12}
[ "$KVER" = 6.12 ] || . "$ROOT/scripts/lib-kver.sh"
# Another version's debug flavour (debug-7.3) builds with clang as debug
# does: its modules too (kmake_vars above knows debug by its whole name).
case "$KFLAVOUR" in
debug-*) kmake_vars() { printf '%s\n' ARCH=x86_64 "RUSTC=$RUSTC_BIN" "BINDGEN=$BINDGEN_BIN" "LLVM=$LLVM_SUFFIX"; } ;;
esac
# <<< kver
