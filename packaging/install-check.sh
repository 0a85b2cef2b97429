#!/bin/bash
# Runs inside the Debian chroot (DISTRO_SUITE) of `scripts/deb install`, with the
# packages in /tmp/debs: installs them as a user would (apt-get, no
# recommended packages), checks what they installed, purges them and checks
# that no file is left behind.  Exits non-zero at the first failure.
set -euo pipefail
rel=$1 version=$2
export DEBIAN_FRONTEND=noninteractive
fail() { echo "install-check: FAIL: $*" >&2; exit 1; }
ok() { echo "install-check: ok: $*"; }
# Every path on the root file system but dpkg's, apt's and the logs' own,
# and /run (a tmpfs on a booted system: systemd-analyze below writes there).
files() {
	find / -xdev \( -path /proc -o -path /run -o -path /tmp -o -path /var/lib/dpkg -o -path /var/log \
		-o -path /var/cache -o -path /var/lib/apt \) -prune -o -print | LC_ALL=C sort
}
packages() { dpkg-query -W -f '${Package}\n' | LC_ALL=C sort; }
# snapshot: the files and packages before an install.
snapshot() {
	files >/tmp/before
	packages >/tmp/packages-before
}
# purge_and_compare PACKAGE...: purges them and what apt then removes; no
# file may be left or missing against the snapshot, but for those of a
# package they pulled in that apt keeps because a package of the root
# recommends or suggests it (APT::AutoRemove::SuggestsImportant: on
# Debian 13 libelf1t64, which the headers' programs need and systemd's
# libsystemd-shared suggests): apt's to keep, not ours; it is named.
purge_and_compare() {
	local kept p why=
	dpkg --purge "$@" >/tmp/purge.log 2>&1 || { cat /tmp/purge.log; fail "dpkg --purge $*"; }
	apt-get autoremove --purge -y -q >/tmp/autoremove.log 2>&1 || { cat /tmp/autoremove.log; fail "apt-get autoremove"; }
	kept=$(packages | comm -13 /tmp/packages-before -)
	for p in $kept; do dpkg -L "$p"; done | LC_ALL=C sort -u >/tmp/kept-files
	files | comm -13 /tmp/before - | comm -23 - /tmp/kept-files >/tmp/left
	files | comm -23 /tmp/before - >/tmp/missing
	if [ -s /tmp/left ] || [ -s /tmp/missing ]; then
		sed 's/^/left: /' /tmp/left | head -n 20
		sed 's/^/missing: /' /tmp/missing | head -n 20
		fail "files left or removed after dpkg --purge $* (above)"
	fi
	for p in $kept; do
		why="$why, $p (for $(apt-cache rdepends --installed "$p" 2>/dev/null | sed -n '3,$s/^ *//p' | sort -u | tr '\n' ' ' | sed 's/ $//'))"
	done
	ok "dpkg --purge $*: no file left behind${why:+; apt keeps${why#,}}"
}
cd /tmp/debs
apt-get update -q >/dev/null

# The kernel, the module for it and the tool.
snapshot
apt-get install -y -q --no-install-recommends ./linux-image-"$rel"_*.deb ./allocprof-modules-"$rel"_*.deb \
	./allocinfo_*.deb >/tmp/install.log 2>&1 || { tail -n 20 /tmp/install.log; fail "apt-get install"; }
ok "installed linux-image-$rel, allocprof-modules-$rel, allocinfo"
got=$(modprobe -S "$rel" --show-depends allocprof)
[ "$got" = "insmod /lib/modules/$rel/updates/allocprof.ko " ] || fail "modprobe -S $rel --show-depends allocprof: '$got'"
ok "modprobe finds /lib/modules/$rel/updates/allocprof.ko (depmod ran)"
vm=$(modinfo -F vermagic "/lib/modules/$rel/updates/allocprof.ko")
[ "${vm%% *}" = "$rel" ] || fail "allocprof.ko vermagic '$vm'"
got=$(systemctl is-enabled allocinfo-textfile.timer || true)
[ "$got" = enabled ] || fail "allocinfo-textfile.timer is '$got', not enabled"
ok "allocinfo-textfile.timer enabled"
# systemd's own check of the units (syntax, the ExecStart program exists);
# it fails on a unit it cannot load or run.
systemd-analyze verify /lib/systemd/system/allocinfo-textfile.service \
	/lib/systemd/system/allocinfo-textfile.timer || fail "systemd-analyze verify"
ok "systemd-analyze verify allocinfo-textfile.service allocinfo-textfile.timer"
got=$(allocinfo --version)
[ "$got" = "allocinfo $version" ] || fail "allocinfo --version: '$got', wanted 'allocinfo $version'"
ok "$got runs"
for f in modules-load.d/allocprof.conf modprobe.d/allocprof.conf; do
	[ -f "/usr/share/doc/allocinfo/examples/$f" ] || fail "no example $f"
done
ok "examples modules-load.d/allocprof.conf, modprobe.d/allocprof.conf"
purge_and_compare allocinfo "allocprof-modules-$rel" "linux-image-$rel"

# DKMS: the kernel, its headers (with its Rust build outputs) and the
# source.  (Without the kernel, DKMS's depmod leaves
# /lib/modules/<release>/modules.* behind: only the kernel's postrm removes
# them.)
apt-get install -y -q --no-install-recommends ./linux-image-"$rel"_*.deb ./linux-headers-"$rel"_*.deb \
	./allocprof-dkms_*.deb \
	>/tmp/install.log 2>&1 || { tail -n 30 /tmp/install.log; cat /var/lib/dkms/allocprof/*/build/make.log 2>/dev/null | tail -n 20; fail "apt-get install (DKMS)"; }
got=$(dkms status allocprof)
case "$got" in
"allocprof/"*", $rel, x86_64: installed") ;;
*) fail "dkms status allocprof: '$got'" ;;
esac
vm=$(modinfo -F vermagic "/lib/modules/$rel/updates/dkms/allocprof.ko")
[ "${vm%% *}" = "$rel" ] || fail "DKMS's allocprof.ko vermagic '$vm'"
ok "DKMS built and installed allocprof.ko for $rel: $got"
got=$(modprobe -S "$rel" --show-depends allocprof)
[ "$got" = "insmod /lib/modules/$rel/updates/dkms/allocprof.ko " ] || fail "modprobe -S $rel --show-depends allocprof: '$got'"
ok "modprobe finds /lib/modules/$rel/updates/dkms/allocprof.ko"
purge_and_compare allocprof-dkms "linux-headers-$rel" "linux-image-$rel"
echo "install-check: passed"
