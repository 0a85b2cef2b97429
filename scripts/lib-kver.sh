# shellcheck shell=bash
# The settings of lib.sh for a kernel version other than 6.12 (issue #43;
# Documentation/linux-7.3.md); sourced by lib.sh, last, when KVER is not 6.12.
#
# 6.12's source is a Debian 12 package, installed by scripts/setup.  7.3's
# is Debian 13's backport, linux-source-7.3 of trixie-backports: not
# installable here (bookworm) and not wanted on every machine, so it is
# fetched lazily, the first time a 7.3 flavour or KVER=7.3 asks for its
# source, through a source list of our own under the cache (the host's
# /etc/apt is not touched); the package is unpacked, not installed.

case "$KVER" in
7.3) ;;
*) die "unknown kernel version KVER=$KVER (6.12 or 7.3)" ;;
esac

KSRC_PKG=linux-source-$KVER
KSRC_SUITE=trixie-backports
KSRC_DIR=$CACHE/src/deb-$KVER
KSRC_TARBALL=$KSRC_DIR/$KSRC_PKG.tar.xz
# 7.3 needs bindgen 0.71.1 or newer (its scripts/min-tool-version.sh); its
# own copy under the cache's tools/, so 6.12's stays as it is.
BINDGEN_VERSION=0.71.1
BINDGEN_BIN=$CACHE/tools/bindgen-$BINDGEN_VERSION/bin/bindgen

# The flavours there are on this kernel version, read by
# scripts/build-kernel: base (the patch series of patches/KVER/, allocprof
# the back end), the built-in profiler, no profiler at all, debug (base
# with clang, KASAN and lockdep) and distro (base for a Debian system: make
# deb, make distro-check).
# shellcheck disable=SC2034
KVER_FLAVOURS="base-$KVER upstream-$KVER noprof-$KVER debug-$KVER distro-$KVER"
# The version's patch series (patches/7.3/, Documentation/linux-7.3-series.md).
# shellcheck disable=SC2034
KVER_PATCHES=$ROOT/patches/$KVER

# ksrc_apt apt-get|apt-cache ARGS...: with our own source list, lists and
# cache, under KSRC_DIR/apt.
ksrc_apt() {
	local a=$KSRC_DIR/apt prog=$1
	shift
	"$prog" -q -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" \
		-o APT::Sandbox::User=root "$@"
}

# ksrc_fetch: downloads linux-source-KVER from Debian's package registry
# (its signed index checks the download), checks that it is KVER's source,
# and keeps its tarball and version in KSRC_DIR.  Once: a later call
# finds them there.
ksrc_fetch() {
	[ ! -f "$KSRC_DIR/version" ] || [ ! -f "$KSRC_TARBALL" ] || return 0
	local a=$KSRC_DIR/apt t0 deb ver pkg
	t0=$(date +%s)
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $KSRC_SUITE main" \
		>"$a/sources.list"
	say "fetching $KSRC_PKG from Debian's $KSRC_SUITE (once; into $KSRC_DIR)"
	say "  apt-get update ($KSRC_SUITE only, our own lists)"
	ksrc_apt apt-get update >"$KSRC_DIR/fetch.log" 2>&1 ||
		{ tail -n 20 "$KSRC_DIR/fetch.log" >&2; die "apt-get update of $KSRC_SUITE failed (is Debian's package registry reachable? full log: $KSRC_DIR/fetch.log)"; }
	ver=$(ksrc_apt apt-cache policy "$KSRC_PKG" 2>/dev/null | sed -n 's/^ *Candidate: //p')
	if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
		die "Debian's $KSRC_SUITE has no $KSRC_PKG (full log: $KSRC_DIR/fetch.log)"
	fi
	say "  downloading $KSRC_PKG $ver ($(ksrc_apt apt-cache show "$KSRC_PKG=$ver" 2>/dev/null | sed -n 's/^Size: //p' | head -n1 | awk '{printf "%d MB", $1 / 1e6}'))"
	rm -rf "$KSRC_DIR/dl" && mkdir -p "$KSRC_DIR/dl"
	(cd "$KSRC_DIR/dl" && ksrc_apt apt-get download "$KSRC_PKG=$ver") >>"$KSRC_DIR/fetch.log" 2>&1 ||
		{ tail -n 20 "$KSRC_DIR/fetch.log" >&2; die "apt-get download $KSRC_PKG=$ver failed (full log: $KSRC_DIR/fetch.log)"; }
	deb=
	for deb in "$KSRC_DIR"/dl/"${KSRC_PKG}"_*.deb; do break; done
	[ -e "$deb" ] || die "apt-get download left no $KSRC_PKG package in $KSRC_DIR/dl"
	pkg=$(dpkg-deb -f "$deb" Package) ver=$(dpkg-deb -f "$deb" Version)
	[ "$pkg" = "$KSRC_PKG" ] || die "$deb is $pkg, not $KSRC_PKG"
	case "$ver" in
	"$KVER".[0-9]*-*) ;;
	*) die "$deb is version $ver, not Linux $KVER.x" ;;
	esac
	say "  taking /usr/src/$KSRC_PKG.tar.xz out of the package"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$KSRC_PKG.tar.xz" >"$KSRC_TARBALL.tmp" ||
		die "no /usr/src/$KSRC_PKG.tar.xz in $deb"
	mv "$KSRC_TARBALL.tmp" "$KSRC_TARBALL"
	rm -rf "$KSRC_DIR/dl"
	echo "$ver" >"$KSRC_DIR/version"
	say "  $KSRC_PKG $ver fetched in $(($(date +%s) - t0))s"
}

# ksrc_check_tree DIR: the unpacked tree is Linux KVER (its Makefile's
# VERSION.PATCHLEVEL), as the package's version said.
ksrc_check_tree() {
	local mk
	mk=$(sed -n -e 's/^VERSION = //p' -e 's/^PATCHLEVEL = //p' "$1/Makefile" | head -n2 | paste -sd.)
	[ "$mk" = "$KVER" ] || die "$1 is Linux '$mk', not $KVER (from $KSRC_TARBALL)"
}

# Version of the kernel source package, e.g. 7.3.4-1~bpo13+1: fetched first
# if it is not here yet.
ksrc_version() {
	ksrc_fetch
	cat "$KSRC_DIR/version"
}

# bindgen_install: KVER's bindgen, installed with cargo into the cache's
# tools/ (a few minutes, once), as scripts/setup installs 6.12's.
bindgen_install() {
	"$BINDGEN_BIN" --version 2>/dev/null | grep -q " $BINDGEN_VERSION\$" && return 0
	command -v cargo >/dev/null || die "cargo is needed to install bindgen-cli $BINDGEN_VERSION"
	say "installing bindgen-cli $BINDGEN_VERSION for Linux $KVER with cargo (a few minutes, once)"
	cargo install --locked --quiet --root "$(dirname "$(dirname "$BINDGEN_BIN")")" \
		"bindgen-cli@$BINDGEN_VERSION" || die "cargo install bindgen-cli@$BINDGEN_VERSION failed"
}

# upstream and noprof build the pristine source, base the patched one.
flavour_src() {
	case "${KFLAVOUR%-"$KVER"}" in
	upstream | noprof) echo "$CACHE/src/pristine-$(ksrc_tag)" ;;
	*) echo "$CACHE/src/patched-$(ksrc_tag)" ;;
	esac
}
# Built in the cache's build/NAME-KVER, beside 6.12's flavours.
flavour_obj() { echo "$CACHE/build/${KFLAVOUR%-"$KVER"}-$KVER"; }
