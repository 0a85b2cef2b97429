#!/bin/sh
# Runs once in the Debian guest of scripts/distro-check, as the unit
# allocprof-distro-check.service (Type=exec, so that the boot it waits for
# can finish): once the boot has finished, one "DISTRO-CHECK key value"
# line per fact on the second serial port, which the host reads; then
# "DISTRO-CHECK done", then samples of /proc/allocinfo.  The host scrapes
# node_exporter then and stops the guest.
exec >/dev/ttyS1 2>&1
# The next boot purges the packages (the host stops this one).
systemctl disable allocprof-distro-check.service 2>/dev/null
systemctl enable allocprof-distro-purge.service 2>/dev/null
sync
say() { echo "DISTRO-CHECK $*"; }
state=$(systemctl is-system-running --wait)
say "system-state $state"
say "modules-load $(systemctl is-active systemd-modules-load.service)"
say "modules-load-result $(systemctl show -P Result systemd-modules-load.service)"
if grep -q '^allocprof ' /proc/modules; then say "allocprof-loaded yes"; else say "allocprof-loaded no"; fi
say "cmdline $(cat /proc/cmdline)"
say "release $(uname -r)"
say "allocprof-file $(modinfo -n allocprof 2>/dev/null)"
journalctl -k -b -o cat | grep -m1 'allocprof: counting since' | sed 's/^/DISTRO-CHECK journal /'
say "allocinfo-lines $(wc -l </proc/allocinfo)"
sort -g /proc/allocinfo | tail -n 3 | sed 's/^/DISTRO-CHECK top /'
# The packaged tool on the running kernel (-v: how it read it).
allocinfo top --live -v -n 3 >/tmp/live-top 2>/tmp/live-top.err
say "live-top-rc $?"
sed 's/^/DISTRO-CHECK live-top /' /tmp/live-top
sed 's/^/DISTRO-CHECK live-top-how /' /tmp/live-top.err
# The timer's first run is 15 s after boot (allocinfo-textfile.timer).
prom=/var/lib/prometheus/node-exporter/allocinfo.prom
i=0
while [ ! -s "$prom" ] && [ $i -lt 60 ]; do sleep 2; i=$((i + 1)); done
say "textfile-series $(grep -c '^allocinfo_bytes{' "$prom" 2>/dev/null || echo 0)"
say "node-exporter $(systemctl is-active prometheus-node-exporter.service)"
say "failed-units $(systemctl list-units --failed --plain --no-legend | awk '{print $1}' | tr '\n' ' ')"
say "done"
# Then, until the host stops the guest, /proc/allocinfo's three largest call
# sites every 2 s with the time (seconds since the epoch), for the host's
# comparison with what its Prometheus server scraped.
while :; do
	t=$(date +%s)
	sort -g /proc/allocinfo | tail -n 3 | sed "s/^/DISTRO-CHECK sample $t /"
	sleep 2
done
