# shellcheck shell=sh
# Sourced by the guest scripts of scripts/distro-check: files, every path
# of the root file system but those the system itself changes from boot to
# boot (logs, caches, systemd's and dpkg's state, the test's own units and
# scripts), sorted.
files() {
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
		-o -path /var/tmp -o -path /var/log -o -path /var/cache -o -path /var/lib/dpkg \
		-o -path /var/lib/apt -o -path /var/lib/systemd -o -path /root \
		-o -path /etc/systemd/system -o -path /usr/local/sbin -o -path /lost+found \) -prune -o -print |
		LC_ALL=C sort
}
