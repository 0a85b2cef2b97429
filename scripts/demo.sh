#!/bin/sh
# Runs in the guest (make demo): loads allocprof and shows what it sees.
# The guest boots with alloc_tag.record=1 (the Makefile's demo target), so
# allocprof adopts the kernel's record at load and counts from boot: the
# top of /proc/allocinfo is the whole system's.  allocprof's own lines
# are shown apart.
set -e
echo "== allocprof demo on $(uname -r) =="
if ! modprobe allocprof; then
	echo "allocprof did not load"
	exit 1
fi
echo "== allocprof loaded:"
grep '^allocprof ' /proc/modules
dmesg | grep -i 'allocprof' | tail -n 3
if [ -r /proc/allocinfo ]; then
	echo "== top 15 since boot, allocprof's own lines apart: grep -v ' \[allocprof\] ' /proc/allocinfo | sort -g | tail -n 15 (sizes in IEC units; busybox has no numfmt)"
	grep -v ' \[allocprof\] ' /proc/allocinfo | sort -g | tail -n 15 | awk '
		function iec(b,  u, i) {
			split("B KiB MiB GiB TiB", u, " ")
			for (i = 1; b >= 1024 && i < 5; i++) b /= 1024
			return i == 1 ? sprintf("%d %s", b, u[i]) : sprintf("%.1f %s", b, u[i])
		}
		{ size = $1; $1 = ""; printf "%11s%s\n", iec(size), $0 }'
	echo "== call sites: $(grep -c func: /proc/allocinfo); bytes tracked: $(awk '/func:/ { s += $1 } END { print s }' /proc/allocinfo)"
	echo "== allocprof's own memory, by the Rust lines that allocated it (top 5):"
	grep ' \[allocprof\] ' /proc/allocinfo | sort -g | tail -n 5
fi
if [ -e /proc/sys/vm/mem_profiling ]; then
	echo "== vm.mem_profiling = $(cat /proc/sys/vm/mem_profiling)"
	echo 0 >/proc/sys/vm/mem_profiling
	echo "== after 'echo 0 > /proc/sys/vm/mem_profiling': $(cat /proc/sys/vm/mem_profiling)"
	echo 1 >/proc/sys/vm/mem_profiling
	echo "== after 'echo 1 > /proc/sys/vm/mem_profiling': $(cat /proc/sys/vm/mem_profiling)"
fi
rmmod allocprof
echo "== rmmod allocprof: done"
