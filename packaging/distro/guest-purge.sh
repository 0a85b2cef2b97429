#!/bin/sh
# Runs once in the Debian guest of scripts/distro-check, at its third boot
# (on the distro flavour's kernel), as allocprof-distro-purge.service:
# checks the mode of control='s parameter file and lockdown (control=
# refused once the kernel is locked down), then purges the packages the
# first boot installed, removes the modules-load.d file that boot copied, and compares the root's files with the list the
# first boot took before installing.  "DISTRO-PURGE key value" lines on the
# second serial port, then it powers off.
exec >/dev/ttyS1 2>&1
say() { echo "DISTRO-PURGE $*"; }
systemctl is-system-running --wait >/dev/null
# shellcheck source=files.sh # installed there by scripts/distro-check
. /usr/local/sbin/allocprof-distro-files
# control='s parameter is root's only (0400).
say "control-mode $(stat -c %a /sys/module/allocprof/parameters/control 2>/dev/null || echo none)"
# Lockdown, raised here at run time (integrity): allocprof.ko is signed
# with the kernel's key (scripts/deb), so it still loads, but not with
# control=, which does what the locked control file may no longer do.
cmd='func alloc_task_struct_node +p'
modprobe -r allocprof
if modprobe allocprof control="$cmd"; then say "before-lockdown loaded"; else say "before-lockdown refused"; fi
modprobe -r allocprof
say "signer $(modinfo -F signer allocprof 2>/dev/null | head -n 1)"
echo integrity >/sys/kernel/security/lockdown
say "lockdown $(cat /sys/kernel/security/lockdown 2>/dev/null || echo none)"
if modprobe allocprof control="$cmd" 2>/dev/null; then say "locked-control loaded"; else say "locked-control refused"; fi
say "refused-lines $(dmesg | grep -c 'allocprof: control= refused: the kernel is locked down')"
if modprobe allocprof; then say "locked-plain loaded"; else say "locked-plain refused"; fi
say "locked-write $(echo '+p' 2>/dev/null >/sys/kernel/debug/allocprof/control && echo taken || echo refused)"
pkgs=$(dpkg-query -W -f '${Package}\n' 'linux-image-*-allocprof' 'allocprof-modules-*' allocinfo 2>/dev/null | grep -v '^$' | tr '\n' ' ')
say "packages $pkgs"
# shellcheck disable=SC2086 # the package names, a word each
if dpkg --purge $pkgs >/root/purge.log 2>&1; then say "purge ok"; else say "purge failed"; tail -n 20 /root/purge.log; fi
rm -f /etc/modules-load.d/allocprof.conf
files >/root/files-after
say "left $(diff /root/files-before /root/files-after | grep -c '^[<>]')"
diff /root/files-before /root/files-after | grep '^[<>]' | head -n 20 | sed 's/^/DISTRO-PURGE diff /'
systemctl disable allocprof-distro-purge.service 2>/dev/null
say "done"
sync
systemctl poweroff
