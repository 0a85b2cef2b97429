#!/bin/sh
# Runs once in the Debian guest of scripts/distro-check, at its first boot,
# as allocprof-distro-install.service (Type=exec): installs the packages of
# make deb from /root/debs with dpkg as a user would (the kernel, the
# module for it, the host tool), copies the tool's modules-load.d example
# into /etc, switches the next boot to the reporting unit and powers off.
# "DISTRO-INSTALL key value" lines on the second serial port.
exec >/dev/ttyS1 2>&1
say() { echo "DISTRO-INSTALL $*"; }
systemctl is-system-running --wait >/dev/null
# The files before, for the purge of the third boot.
# shellcheck source=files.sh # installed there by scripts/distro-check
. /usr/local/sbin/allocprof-distro-files
files >/root/files-before
cd /root/debs || exit 1
if dpkg -i linux-image-*.deb allocprof-modules-*.deb allocinfo_*.deb >/root/dpkg.log 2>&1; then
	say "dpkg ok"
else
	say "dpkg failed"
	tail -n 20 /root/dpkg.log
fi
cp /usr/share/doc/allocinfo/examples/modules-load.d/allocprof.conf /etc/modules-load.d/
# shellcheck disable=SC2012 # a listing for the log, not parsed
ls /boot | sed 's/^/DISTRO-INSTALL boot /'
dpkg-query -W -f '${Package} ${Version} ${Installed-Size}\n' 'linux-image-*' 'allocprof-*' allocinfo |
	awk 'NF == 3 { print "DISTRO-INSTALL package " $0 }'
systemctl disable allocprof-distro-install.service 2>/dev/null
systemctl enable allocprof-distro-check.service 2>/dev/null
say "done"
sync
systemctl poweroff
