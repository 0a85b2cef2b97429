#!/bin/sh
# Runs in the guest (bench/run): the benchmark of one boot.
#   sh guest.sh BOOT RUNS MODULE_PARAMS EXTRAS WATCH [OTHER_FLAGS [SITE_FLAGS]]
# BOOT: noprof | upstream | upstream-off | upstream-compressed (7.3's
# built-in booted sysctl.vm.mem_profiling=1,compressed) | base |
# base-compressed (base-7.3 booted the same way: base-compressed, then
# allocprof-on-compressed) | record | base-many | record-many | cover-* |
# first-compressed (7.3).  The same script for 6.12's and 7.3's
# kernels (bench/run; the flavour is chosen there).  The
# base boot measures three configurations in turn: base (allocprof not
# loaded, before any load), then allocprof-on and allocprof-off alternately
# (vm.mem_profiling switched between runs); with WATCH 1 (the -icount
# rounds), each allocprof-on run is followed by four runs with call sites
# watched through allocprof's control file, profiling on:
#   watch-other  another call site (not the benchmark's) with +sanf
#                (f with probability=0 verbose=0: the allocators ask, none fails;
#                OTHER_FLAGS, san on 7.3, replaces sanf: f needs
#                CONFIG_FAILSLAB there, which base-7.3 has not)
#   watch-s      the benchmark's own six call sites with +s (stacks)
#   watch-a      the same with +a (ages)
#   watch-sa     the same with +sa
# then, for each letter L of SITE_FLAGS (control-file flags measured the
# same way: "c" and "m" today), two more:
#   watch-other-L  another call site (watch-other's) with +L, run as
#                  allocprof-on is (the target: the loops unchanged)
#   watch-L      the benchmark's own six call sites with +L, through the
#                run file as watch-s is, but with the full iterations (a
#                flag that only adds to the cold path costs too little
#                to need a tenth)
# With c, the churn file's lines of the flagged call sites are recorded
# after the run, before the flag is cleared (fig=churn: bench/report.py
# checks them against the loops' calls); with m, the memcgs file must have
# none of their lines left (every allocation was freed).
# watch-other is loaded and run as allocprof-on is; the benchmark's own call
# sites only exist once its module is loaded, so for watch-s/-a/-sa it is
# loaded with runs=0, flagged, and run through its debugfs run file, with a
# tenth of the iterations (with s an iteration costs 2.6 to 17 times
# allocprof-on's: the full counts would add about 45 billion instructions,
# some 10 minutes, to make bench).  The
# flags are checked in the control file before and after every write (a
# command that matches no call site succeeds silently), and the stacks
# report's statistics line is recorded after every watched run (also in
# /root/out/watch_stats.txt as it reads).  The record boot (booted with
# alloc_tag.record=1) measures the recording kernel, then times allocprof's
# adoption of the record.  The *-many boots load the small modules of
# bench/many.c (/root/many_*.ko) first, then measure the patched kernel
# without allocprof (base-many) and allocprof on (allocprof-on-many), or
# the recording kernel (record-many).  A cover-* boot measures the coverage right
# after boot; cover-late (allocprof loaded from a shell) then runs the
# loops and the workload once and reads Slab (allocprof-first), and so
# does first-compressed, booted ,compressed, with nothing before.  RUNS:
# module loads per configuration.
# MODULE_PARAMS: the iteration counts for allocprof_bench.ko.  EXTRAS: 1 to
# also take the memory figures, the /proc/allocinfo read cost, the
# fork/exec loop and the whole-system load (hackbench).
# Writes /root/out/results.txt, one "key=value ..." line per figure.
set -e
boot=$1 runs=$2 params=$3 extras=${4:-0} watch=${5:-0} other_flags=${6:-sanf} site_flags=${7:-}
out=/root/out/results.txt
mkdir -p /root/out
: >"$out"
ko=/root/allocprof_bench.ko
rust_ko=/root/allocprof_rust_bench.ko
clock=/sys/kernel/debug/allocprof_bench/now
control=/sys/kernel/debug/allocprof/control
stacks=/sys/kernel/debug/allocprof/stacks
churn=/sys/kernel/debug/allocprof/churn
memcgs=/sys/kernel/debug/allocprof/memcgs
# The benchmark's call sites in the control file ("file:line [module]function =flags").
bench_sites='^[^ ]+:[0-9]+ \[allocprof_bench\]loop_(kmalloc|kmalloc64_each|kmalloc64_one_tag|page|vmalloc|percpu)'
# watch-other's call site: one that nothing reaches during the benchmark
# (the xattrs of in-memory file systems), so that only the unflagged call
# sites' paths are timed.
other_file=fs/xattr.c other_func=simple_xattr_alloc
other_site='^fs/xattr\.c:[0-9]+ \[vmlinux\]simple_xattr_alloc'
# MODULE_PARAMS with a tenth of every loop's iterations, for watch-s/-a/-sa.
watch_params=$(for w in $params; do
	case $w in
	cal_iters=*) echo "$w" ;;
	*_iters=*) echo "${w%%=*}=$((${w#*=} / 10))" ;;
	*) echo "$w" ;;
	esac
done | tr '\n' ' ')

# RUNS loads of the benchmark module for configuration $1.
bench_runs() {
	k=1
	while [ $k -le "$runs" ]; do
		bench "$1" $k
		k=$((k + 1))
	done
}

# One load of the benchmark module: its result lines, tagged; then one of
# the Rust one (allocprof_rust_bench: KBox::new + drop, from Rust), whose
# result line is tagged here.
bench() {
	cfg=$1 rep=$2
	dmesg -c >/dev/null
	# shellcheck disable=SC2086 # the module parameters, a word each
	insmod "$ko" tag="$cfg" runs=1 $params
	rmmod allocprof_bench
	results "$cfg" "$rep"
	dmesg -c >/dev/null
	insmod "$rust_ko"
	rmmod allocprof_rust_bench
	dmesg | sed -n 's/.*allocprof_rust_bench: result \(.*\)/cfg='"$cfg"' rep='"$rep"' \1/p' >>"$out"
	grep -q "^cfg=$cfg rep=$rep loop=kbox " "$out" ||
		{ echo "bench: no result line of allocprof_rust_bench for $cfg"; dmesg | tail -n 20; exit 1; }
}

# The result lines of the kernel log since the last dmesg -c, tagged.
results() {
	dmesg | sed -n 's/.*allocprof_bench: result tag=\([^ ]*\) run=[0-9]* \(.*\)/cfg=\1 rep='"$2"' \2/p' >>"$out"
	n=$(grep -c "^cfg=$1 rep=$2 " "$out" || true)
	[ "$n" -ge 1 ] || { echo "bench: no result lines for $1"; dmesg | tail -n 20; exit 1; }
}

# expect_flags CFG REGEX N FLAGS: exactly N call sites of the control file
# match REGEX, and all have exactly FLAGS; else the boot fails.
expect_flags() {
	all=$(grep -cE "$2 =" $control || true)
	got=$(grep -cE "$2 =$4\$" $control || true)
	if [ "$all" -ne "$3" ] || [ "$got" -ne "$3" ]; then
		echo "bench: $1: expected $3 call sites matching '$2' with =$4 in $control, found $all, $got of them with =$4:"
		grep -E "$2 =" $control || true
		exit 1
	fi
}

# The figures of the stacks report's statistics line ("# tracked: N
# allocations in N chains; ... not tracked: N (table full), N (nested)"):
# live entries, live chains, table full, nested; into $ws.
watch_stats() {
	ws=$(sed -n 's/^# tracked: \([0-9]*\) allocations in \([0-9]*\) chains;.*not tracked: \([0-9]*\) (table full), \([0-9]*\) (nested).*/\1 \2 \3 \4/p' $stacks)
	[ -n "$ws" ] || { echo "bench: no statistics line in $stacks:"; head -n 3 $stacks; exit 1; }
}

# record_stats CFG REP FULL0 NESTED0: the statistics line after a watched
# run, with what the run added to the table-full and nested counts (which
# count from allocprof's load).
record_stats() {
	watch_stats
	# shellcheck disable=SC2086 # the statistics' four numbers, a word each
	set -- "$1" "$2" "$3" "$4" $ws
	echo "cfg=$1 rep=$2 fig=watch_stats tracked=$5 chains=$6 full=$7 nested=$8 full_run=$(($7 - $3)) nested_run=$(($8 - $4))" >>"$out"
	echo "cfg=$1 rep=$2 $(grep '^# tracked:' $stacks)" >>/root/out/watch_stats.txt
}

# churn_figures CFG REP REGEX N: the churn file's lines of the call sites
# matching REGEX, exactly N of them (else the boot fails: the flag was not
# taken), each as a fig=churn line with the call site's function.
churn_figures() {
	n=$(grep -cE "$3" $churn || true)
	if [ "$n" -ne "$4" ]; then
		echo "bench: $1: expected $4 lines matching '$3' in $churn, found $n:"
		cat $churn
		exit 1
	fi
	grep -E "$3" $churn |
		sed -n 's/^allocs:\([-0-9]*\) frees:\([-0-9]*\) alloc_bytes:\([-0-9]*\) free_bytes:\([-0-9]*\) seconds:[0-9.]* .*func:\([A-Za-z0-9_]*\) *$/cfg='"$1"' rep='"$2"' fig=churn func=\5 allocs=\1 frees=\2 alloc_bytes=\3 free_bytes=\4/p' >>"$out"
	n=$(grep -c "^cfg=$1 rep=$2 fig=churn " "$out" || true)
	[ "$n" -eq "$4" ] || { echo "bench: $1: $n of the $4 churn lines parsed:"; cat $churn; exit 1; }
}

# memcg_figures CFG REGEX: the memcgs file has no line of the call sites
# matching REGEX after the run (every allocation of theirs was freed: a
# line left would be one the m flag kept wrong), else the boot fails.
memcg_figures() {
	# A memcgs line goes on after the function: " memcg:PATH".
	re="$(printf '%s' "$2" | sed 's/ \*\$$//')[A-Za-z0-9_]* memcg:"
	n=$(grep -cE "$re" $memcgs || true)
	if [ "$n" -ne 0 ]; then
		echo "bench: $1: $n lines matching '$re' in $memcgs after every allocation was freed:"
		cat $memcgs
		exit 1
	fi
}

# flag_figures CFG REP FLAGS REGEX N: what the flags' own files say of the
# N flagged call sites (REGEX) after the run, before the flags are cleared.
flag_figures() {
	case $3 in
	*c*) churn_figures "$1" "$2" "$4" "$5" ;;
	esac
	case $3 in
	*m*) memcg_figures "$1" "$4" ;;
	esac
}

# watch-other, watch-other-L: another call site watched with FLAGS while
# the benchmark module is loaded and run as for allocprof-on (with f
# somewhere, every allocation tests its own call site's word before it
# allocates: patch 0014's static key is on; probability=0, so none fails).
bench_other() {
	cfg=$1 rep=$2 oflags=$3
	expect_flags "$cfg" "$other_site" 1 p
	case $oflags in
	*f*) echo "file $other_file func $other_func +$oflags probability=0 verbose=0" >$control ;;
	*) echo "file $other_file func $other_func +$oflags" >$control ;;
	esac
	expect_flags "$cfg" "$other_site" 1 "p$oflags"
	watch_stats
	# shellcheck disable=SC2086 # the statistics' four numbers, a word each
	set -- "$cfg" "$rep" "$oflags" $ws
	bench "$1" "$2"
	record_stats "$1" "$2" "$6" "$7"
	flag_figures "$1" "$2" "$3" "func:$other_func *\$" 1
	echo "file $other_file func $other_func =p" >$control
	expect_flags "$1" "$other_site" 1 p
}

# watch-s, watch-a, watch-sa, watch-L: the benchmark's own call sites
# watched with FLAGS: loaded with runs=0 and PARAMS (watch-s/-a/-sa: a
# tenth of the iterations), flagged, one round through the run file,
# flags reset, unloaded.
bench_watched() {
	cfg=$1 rep=$2 flags=$3 wparams=${4:-$watch_params}
	dmesg -c >/dev/null
	# shellcheck disable=SC2086 # the module parameters, a word each
	insmod "$ko" runs=0 $wparams
	expect_flags "$cfg" "$bench_sites" 6 p
	echo "module allocprof_bench func loop_* +$flags" >$control
	expect_flags "$cfg" "$bench_sites" 6 "p$flags"
	watch_stats
	# shellcheck disable=SC2086 # the statistics' four numbers, a word each
	set -- "$cfg" "$rep" "$flags" $ws
	echo "$cfg" >/sys/kernel/debug/allocprof_bench/run
	record_stats "$1" "$2" "$6" "$7"
	flag_figures "$1" "$2" "$3" "\[allocprof_bench\] func:loop_" 6
	echo "module allocprof_bench =p" >$control
	expect_flags "$1" "$bench_sites" 6 p
	rmmod allocprof_bench
	results "$1" "$2"
}

# Guest nanoseconds (= instructions under -icount shift=0) of CMD repeated N times.
timed() {
	n=$1
	shift
	t0=$(cat $clock)
	i=0
	while [ $i -lt "$n" ]; do
		"$@"
		i=$((i + 1))
	done
	t1=$(cat $clock)
	echo $((t1 - t0))
}
cat_allocinfo() { cat /proc/allocinfo >/dev/null; }
cat_version() { cat /proc/version >/dev/null; }

# Issue #25's target 5, after the workload: the bytes of the slab objects'
# extension vectors (their call site in /proc/allocinfo, counted from
# boot), the objects in slabs (/proc/slabinfo's num_objs) and the sizes of
# a vector entry and of its profiling part (the benchmark module's
# parameters; it is loaded).
slab_vectors() {
	awk -v cfg="$1" '$NF == "func:alloc_slab_obj_exts" || $(NF-1) == "func:alloc_slab_obj_exts" { b += $1; c += $2 }
		END { printf "cfg=%s fig=slab_vectors bytes=%d calls=%d", cfg, b, c }' /proc/allocinfo >>"$out"
	awk 'NR > 2 { n += $3 } END { printf " objects=%d", n }' /proc/slabinfo >>"$out"
	p=/sys/module/allocprof_bench/parameters
	echo " ext=$(cat $p/slabobj_ext_bytes) ref=$(cat $p/profiling_bytes)" >>"$out"
}

# The figures that need no repetition: memory, /proc/allocinfo, fork/exec.
extras() {
	cfg=$1
	[ "$extras" = 1 ] || return 0
	insmod "$ko" runs=0
	{
		echo "cfg=$cfg fig=forkexec iters=50 ns=$(timed 50 /bin/true)"
		# 4 groups of 4 senders and 4 receivers, 100 messages from every sender
		# to every receiver, ten times: one run varies by up to 4 % with how
		# the processes happen to be scheduled.
		echo "cfg=$cfg fig=hackbench iters=10 groups=4 loops=100 ns=$(timed 10 /root/hackbench 4 100)"
		awk '/^Slab:/ { print "cfg='"$cfg"' fig=Slab kib=" $2 }' /proc/meminfo
	} >>"$out"
	# upstream counts the vectors from boot; allocprof, loaded late, does
	# not: its figure is the record boot's, after the adoption (below).
	[ "$cfg" = upstream ] && slab_vectors "$cfg"
	if [ -r /proc/allocinfo ]; then
		{
			echo "cfg=$cfg fig=allocinfo_sites n=$(grep -c 'func:' /proc/allocinfo)"
			echo "cfg=$cfg fig=allocinfo_bytes n=$(wc -c </proc/allocinfo)"
			echo "cfg=$cfg fig=allocinfo_read iters=100 ns=$(timed 100 cat_allocinfo)"
			echo "cfg=$cfg fig=cat_version iters=100 ns=$(timed 100 cat_version)"
		} >>"$out"
		# One filtered query, 20 times in one process: the records of one
		# file, and those of at least 1 MiB, by the text file and (where
		# there is one) by the ioctl interface.
		for how in text ioctl; do
			for q in "file mm/memory.c" "minsize 1048576"; do
				# shellcheck disable=SC2086 # the query is two words
				r=$(/root/allocinfo_query $clock $how $q 20 2>/dev/null) || continue
				echo "cfg=$cfg fig=query how=$how by=${q%% *} iters=20 $r" >>"$out"
			done
		done
		# upstream's page_ext shows up as a call site of its own
		awk '/alloc_page_ext|page_ext_init|alloc_node_page_ext/ { print "cfg='"$cfg"' fig=allocinfo_page_ext bytes=" $1 " calls=" $2 " site=" $3 }' \
			/proc/allocinfo >>"$out"
	fi
	rmmod allocprof_bench
	{
		awk '/^MemTotal:|^MemFree:|^MemAvailable:/ { sub(":", "", $1); print "cfg='"$cfg"' fig=" $1 " kib=" $2 }' /proc/meminfo
		echo "cfg=$cfg fig=possible_cpus list=$(cat /sys/devices/system/cpu/possible)"
		# The page frames the zones span: what per-page back-references cover.
		echo "cfg=$cfg fig=page_frames n=$(awk '$1 == "spanned" { s += $2 } END { print s }' /proc/zoneinfo)"
	} >>"$out"
}

# Slab after extras' workload (fork+exec 50 times, hackbench 10 times),
# for a configuration whose extras are not taken.
slab_after_workload() {
	insmod "$ko" runs=0
	# As extras(): a failed run of the workload does not end the boot.
	: "$(timed 50 /bin/true)" "$(timed 10 /root/hackbench 4 100)"
	awk '/^Slab:/ { print "cfg='"$1"' fig=Slab kib=" $2 }' /proc/meminfo >>"$out"
	rmmod allocprof_bench
}

# The bytes /proc/allocinfo attributes, and MemTotal - MemFree.
coverage() {
	cfg=$1
	awk -v cfg="$cfg" 'NR > 2 { s += $1 } END { printf "cfg=%s fig=coverage bytes=%d", cfg, s }' /proc/allocinfo >>"$out"
	awk '/^MemTotal:/ { t = $2 } /^MemFree:/ { f = $2 } END { printf " used=%d\n", (t - f) * 1024 }' /proc/meminfo >>"$out"
	# The big users right after boot: the rootfs' tmpfs folios, slab pages,
	# thread stacks (all lines of each function).
	for fn in shmem_alloc_folio alloc_slab_page alloc_thread_stack_node; do
		awk -v cfg="$cfg" -v fn="$fn" '$NF == "func:" fn || $(NF-1) == "func:" fn { b += $1; c += $2 }
			END { printf "cfg=%s fig=cover_site func=%s bytes=%d calls=%d\n", cfg, fn, b, c }' /proc/allocinfo >>"$out"
	done
}

# The adoption of the kernel's record, as allocprof's load message gives it.
adoption() {
	dmesg | sed -n 's/.*allocprof: counting since boot: adopted the kernel.s record of \([0-9]*\) page allocations and \([0-9]*\) objects, \([0-9]*\) bytes, in \([0-9]*\) us.*/cfg='"$1"' fig=adoption pages=\1 objects=\2 bytes=\3 us=\4/p' >>"$out"
	grep -q "^cfg=$1 fig=adoption" "$out" || { echo "bench: allocprof did not adopt the record"; dmesg | grep allocprof; exit 1; }
}

# 7.3: the page_ext the kernel allocated at boot, as its log tells it (0
# without one: the built-in's compressed mode keeps page tags in page
# flags), and whether it runs compressed.  Nothing on 6.12, whose figures
# are taken as they always were.
kernel7() { case $(uname -r) in 7.*) return 0 ;; esac; return 1; }
page_ext_7() {
	kernel7 || return 0
	b=$(dmesg | sed -n 's/.*allocated \([0-9]*\) bytes of page_ext.*/\1/p' | head -n1)
	echo "cfg=$1 fig=page_ext_boot bytes=${b:-0}" >>"$out"
	echo "cfg=$1 fig=profiling_state mem_profiling=$(cat /proc/sys/vm/mem_profiling 2>/dev/null || echo none) compressed=$(cat /proc/sys/vm/mem_profiling_compressed 2>/dev/null || echo none)" >>"$out"
}

# 7.3's compressed mode, before or after (WHEN) the runs, or the figures
# would be another mode's: 7.3 turns profiling off when the tags do not fit
# in the page flags.
compressed_or_die() {
	grep -qx 1 /proc/sys/vm/mem_profiling_compressed 2>/dev/null ||
		{ echo "bench: not compressed $1: $(dmesg | grep -i 'allocation profiling')"; exit 1; }
}

# The small modules of the *-many boots, loaded before the benchmark's.
load_many() {
	n=0
	for m in /root/many_*.ko; do
		insmod "$m"
		n=$((n + 1))
	done
	echo "cfg=$1 fig=many_modules n=$n" >>"$out"
}

case "$boot" in
cover-upstream)
	coverage "$boot"
	;;
cover-early)
	grep -q '^allocprof ' /proc/modules || { echo "bench: allocprof was not loaded from the initramfs"; exit 1; }
	coverage "$boot"
	;;
cover-late | cover-record)
	modprobe allocprof
	[ "$boot" = cover-late ] || adoption "$boot"
	coverage "$boot"
	# allocprof on's Slab after the workload, the workload's first round
	# in this boot as it is in noprof's and upstream's: the base boot's
	# allocprof-on figure comes after a second round, which leaves more
	# in Slab whatever runs it.
	if [ "$boot" = cover-late ]; then
		bench_runs allocprof-first
		slab_after_workload allocprof-first
	fi
	;;
first-compressed)
	# The same, booted `,compressed` (7.3): against the base-compressed
	# boot's allocprof-on-compressed, which comes after a round as well.
	compressed_or_die "before the runs"
	modprobe allocprof
	bench_runs allocprof-first-compressed
	slab_after_workload allocprof-first-compressed
	compressed_or_die "after the runs"
	rmmod allocprof
	;;
record)
	# before bench() clears the kernel log
	dmesg | sed -n 's/.*alloc_tag: recording call sites from boot (\([0-9]*\) KiB.*/cfg=record fig=record_array kib=\1/p' >>"$out"
	page_ext_7 record
	bench_runs record
	extras record
	modprobe allocprof
	adoption record
	insmod "$ko" runs=0
	slab_vectors record
	rmmod allocprof_bench
	rmmod allocprof
	;;
record-many)
	load_many record-many
	bench_runs record-many
	;;
base-many)
	load_many base-many
	bench_runs base-many
	modprobe allocprof
	bench_runs allocprof-on-many
	rmmod allocprof
	;;
noprof | upstream | upstream-off | upstream-compressed)
	# upstream's page_ext, as the boot log tells it
	if kernel7; then
		page_ext_7 "$boot"
	else
		dmesg | sed -n 's/.*allocated \([0-9]*\) bytes of page_ext.*/cfg='"$boot"' fig=page_ext_boot bytes=\1/p' >>"$out"
	fi
	if [ "$boot" = upstream-compressed ]; then
		# Compressed and on, or the figures would be another mode's: 7.3
		# turns profiling off when the tags do not fit in the page flags.
		compressed_or_die "before the runs"
	fi
	bench_runs "$boot"
	extras "$boot"
	if [ "$boot" = upstream-compressed ]; then
		grep -qx 1 /proc/sys/vm/mem_profiling ||
			{ echo "bench: profiling off after the runs: $(dmesg | grep -i 'allocation profiling')"; exit 1; }
	fi
	;;
base-compressed)
	# 7.3: the page references in page flags, as the built-in's compressed
	# mode keeps them, handed to allocprof; compressed throughout, or the
	# figures would be another mode's.
	page_ext_7 base-compressed
	compressed_or_die "before the runs"
	bench_runs base-compressed
	extras base-compressed
	modprobe allocprof
	bench_runs allocprof-on-compressed
	extras allocprof-on-compressed
	compressed_or_die "after the runs"
	rmmod allocprof
	;;
base)
	page_ext_7 base
	bench_runs base
	extras base
	modprobe allocprof
	dmesg | sed -n 's/.*allocprof: loaded: .*, \([0-9]*\) call sites, \([0-9]*\) KiB of page back-references (\([0-9]*\) bytes a page), \([0-9]*\) bytes of counters a CPU, \([0-9]*\) KiB of counter addresses.*/cfg=allocprof-on fig=allocprof_load sites=\1 kib=\2 bytes_per_page=\3 counter_bytes=\4 table_kib=\5/p' >>"$out"
	# 7.3: no page array of allocprof's (the kernel keeps the references)
	dmesg | sed -n 's/.*allocprof: loaded: .*, \([0-9]*\) call sites, the kernel.s page and object references, \([0-9]*\) bytes of counters a CPU, \([0-9]*\) KiB of counter addresses.*/cfg=allocprof-on fig=allocprof_load sites=\1 counter_bytes=\2 table_kib=\3/p' >>"$out"
	k=1
	while [ $k -le "$runs" ]; do
		echo 1 >/proc/sys/vm/mem_profiling
		bench allocprof-on $k
		# allocprof on's memory and whole-system figures before any call
		# site is watched: what the watched runs leave behind (their
		# tables, the stack depot's pools) is not the profiler's cost.
		if [ $k -eq 1 ]; then
			extras allocprof-on
		fi
		echo 0 >/proc/sys/vm/mem_profiling
		bench allocprof-off $k
		if [ "$watch" = 1 ]; then
			echo 1 >/proc/sys/vm/mem_profiling
			bench_other watch-other $k "$other_flags"
			bench_watched watch-s $k s
			bench_watched watch-a $k a
			bench_watched watch-sa $k sa
			for fl in $site_flags; do
				bench_other "watch-other-$fl" $k "$fl"
				bench_watched "watch-$fl" $k "$fl" "$params"
			done
		fi
		k=$((k + 1))
	done
	rmmod allocprof
	;;
*)
	echo "guest.sh: unknown boot '$boot'"
	exit 2
	;;
esac
echo "bench: $boot done: $(grep -c . "$out") lines"
