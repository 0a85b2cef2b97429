# allocprof: memory-allocation profiling for Linux as a Rust-for-Linux
# out-of-tree module.
#
#   make demo     boot the guest counting from boot (alloc_tag.record=1), load
#                 allocprof, show the top of /proc/allocinfo
#   make check    run every test (host + kselftests in the guest)
#   make soak     make check's kselftests with the long reliability storm
#                 (1000 load/unload cycles on base and on debug; slow)
#   make bench    allocprof against upstream's profiler, side by side (slow;
#                 not part of check; see Documentation/benchmark.md)
#   make gate-soak  the gate's capture of kernel reports and paths_test's
#                 retries, many times on a loaded machine (slow)
#   make mutants  how many deliberate bugs in the module (scripts/mutants.list)
#                 the base kselftests catch (slow; MUTANTS="name ..." for some)
#   make series-check  does each prefix of the kernel patch series compile,
#                 with the base config, base without CONFIG_MEM_ALLOC_PROFILING
#                 and the debug config (clang)?  (slow: half an hour to
#                 hours; not part of check; see scripts/series-check)
#
#   make [module]          build allocprof.ko (and the test modules) against KDIR
#   make print-kdir        build the flavour's kernel if needed, print its tree
#   make initramfs         the guest initramfs of the flavour
#   make setup             install what is missing (Debian packages, bindgen)
#   make clean | distclean remove build products | also the kernel cache
#
# KFLAVOUR=base|debug|upstream|noprof|distro|base-7.3|upstream-7.3|noprof-7.3 chooses the
# kernel (default base; NAME-7.3: NAME's configuration on Linux 7.3).  KDIR=...
# builds the module against another kernel tree (then pass LLVM=... as that
# tree was built).  MODSRC=DIR builds the module from DIR's Kbuild, src/ and
# selftests/modules/ (make mutants), GUEST_NAME=NAME stages it in and makes
# the guest in the checkout's modbuild/NAME and guest/NAME (default: the
# flavour), under the cache's checkout/<dir>-<hash of its path>.

SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# make check runs the kselftests on the base and the debug kernel and on
# base-7.3 (the 7.3 series with allocprof), and the oracle tests on
# upstream's built-in profiler, or on the one flavour given (make check
# KFLAVOUR=debug).  7.3's oracle (upstream-7.3) is make check-7.3's: a
# fourth kernel to build would take CI past its time (testing.md).
CHECK_FLAVOURS ?= $(if $(filter command line environment,$(origin KFLAVOUR)),$(KFLAVOUR),base debug upstream base-7.3)
export CHECK_FLAVOURS
KFLAVOUR ?= base
export KFLAVOUR
ALLOCPROF_CACHE ?= $(HOME)/.cache/allocprof
export ALLOCPROF_CACHE
CACHE := $(ALLOCPROF_CACHE)

RUSTC ?= /usr/bin/rustc
# A flavour NAME-7.3 is NAME's configuration on Linux 7.3 (scripts/lib.sh,
# scripts/lib-kver.sh), which has its own bindgen and patch series
# (patches/7.3/, applied for base-7.3).
KVER := $(if $(filter %-7.3,$(KFLAVOUR)),7.3,6.12)
ifeq ($(KVER),7.3)
BINDGEN ?= $(shell KFLAVOUR=$(KFLAVOUR) ALLOCPROF_CACHE=$(CACHE) bash -c '. scripts/lib.sh && echo $$BINDGEN_BIN')
else
BINDGEN ?= $(HOME)/.cargo/bin/bindgen
endif
ifneq ($(filter debug debug-%,$(KFLAVOUR)),)
LLVM ?= -19
endif
KMAKE_VARS := ARCH=x86_64 RUSTC=$(RUSTC) BINDGEN=$(BINDGEN) $(if $(LLVM),LLVM=$(LLVM))

# The kernel build tree: the cached build of KFLAVOUR unless KDIR is given.
# Evaluated once, and only by targets that need it.
ifeq ($(origin KDIR),undefined)
KDIR = $(eval KDIR := $(shell KFLAVOUR=$(KFLAVOUR) ALLOCPROF_CACHE=$(ALLOCPROF_CACHE) scripts/build-kernel | tail -n1))$(KDIR)
endif

# What this checkout builds and its guests run lives in a directory of the
# cache named for the checkout (scripts/lib.sh, checkout_cache()), so that
# another checkout's make never runs or counts it; the kernels are shared.
CHECKOUT_REAL := $(realpath $(CURDIR))
CHECKOUT_CACHE := $(CACHE)/checkout/$(notdir $(CHECKOUT_REAL))-$(shell printf '%s' '$(CHECKOUT_REAL)' | sha256sum | cut -c1-12)
MODSRC ?= $(CURDIR)
GUEST_NAME ?= $(KFLAVOUR)
GUEST := $(CHECKOUT_CACHE)/guest/$(GUEST_NAME)
MODSTAGE := $(CHECKOUT_CACHE)/modbuild/$(GUEST_NAME)

.PHONY: all module print-kdir print-checkout-cache initramfs setup demo check check-7.3 soak bench mutants lint lint-clippy lint-rustfmt \
	lint-checkpatch lint-host lint-rt lint-deps lint-shell clean distclean kernel selftests

all: module

setup:
	@scripts/setup

kernel: setup
	@scripts/build-kernel >/dev/null

print-kdir: setup
	@scripts/build-kernel | tail -n1

# This checkout's directory in the cache (its module, guests, test logs).
print-checkout-cache:
	@echo $(CHECKOUT_CACHE)

# The module is built in a staging copy per flavour, so gcc and clang
# objects never mix.  The upstream flavours have no hook API: only the test
# modules are built there.
module: setup
	@test -n "$(KDIR)" || { echo "allocprof: no kernel build tree" >&2; exit 1; }
	@mkdir -p $(MODSTAGE)
	@cd $(MODSRC) && rsync -a --delete --exclude '*.o' --exclude '*.ko' --exclude '.*.cmd' \
		--exclude '*.mod*' --exclude 'modules.order' --exclude 'Module.symvers' --exclude '*.rmeta' \
		Kbuild src selftests/modules $(MODSTAGE)/
	@$(MAKE) --no-print-directory -C $(KDIR) M=$(MODSTAGE) $(KMAKE_VARS) \
		ALLOCPROF_FLAVOUR=$(KFLAVOUR) modules 2>&1 | { grep -v '^make\[' || true; }
	@mkdir -p $(GUEST)/modules && rm -f $(GUEST)/modules/*.ko && \
		find $(MODSTAGE) -name '*.ko' -not -path '*/moved/*' -exec cp {} $(GUEST)/modules/ \;
	@# Signed with the tree's key: a locked-down kernel loads nothing else
	@# (lockdown_test; scripts/sign-modules).
	@scripts/sign-modules $(KDIR) $(GUEST)/modules/*.ko
	@# Build B of allocprof_rust_moved: the same module name, so on its own,
	@# and beside the selftests (initramfs), not among the modules.
	@if [ -z "$(filter upstream noprof upstream-% noprof-%,$(KFLAVOUR))" ] && [ -e $(MODSTAGE)/modules/allocprof_rust_moved.ko ]; then \
		$(MAKE) --no-print-directory -C $(KDIR) M=$(MODSTAGE)/modules/moved $(KMAKE_VARS) \
			modules 2>&1 | { grep -v '^make\[' || true; } && \
		mkdir -p $(GUEST)/moved && \
		cp $(MODSTAGE)/modules/moved/allocprof_rust_moved.ko $(GUEST)/moved/allocprof_rust_moved_b.ko && \
		scripts/sign-modules $(KDIR) $(GUEST)/moved/allocprof_rust_moved_b.ko; \
	fi
	@ls $(GUEST)/modules/ | sed 's/^/  module: /'

# The kselftest tree the guest runs: our collection, built with the kernel's
# lib.mk, plus the kernel's run_kselftest.sh and its runner.
SELFTESTS_KSRC = $$(if [ -e $(KDIR)/source ]; then readlink -f $(KDIR)/source; else echo $(KDIR); fi)
# The host tool goes into the guest too (allocinfo_tool_test), linked
# statically: the guest has no C library.
TOOL_TARGET := x86_64-unknown-linux-gnu
TOOL_BIN := $(CHECKOUT_CACHE)/tool-build/$(TOOL_TARGET)/release/allocinfo
selftests: setup
	@rm -rf $(GUEST)/kselftest && mkdir -p $(GUEST)/selftests-build $(GUEST)/kselftest
	@cd tools/allocinfo && RUSTFLAGS="-C target-feature=+crt-static" cargo build --quiet --release \
		--locked --target $(TOOL_TARGET) --target-dir $(CHECKOUT_CACHE)/tool-build
	@ksrc=$(SELFTESTS_KSRC); \
	$(MAKE) --no-print-directory -s -C selftests/allocprof KSRC=$$ksrc \
		ALLOC_TAG_UAPI=$(if $(filter 7.3,$(KVER)),$$ksrc,$$(scripts/kernel-source patched))/include/uapi/linux/alloc_tag.h \
		OUTPUT=$(GUEST)/selftests-build INSTALL_PATH=$(GUEST)/kselftest/allocprof install && \
	cp $(TOOL_BIN) $(GUEST)/kselftest/allocprof/ && \
	cp -r $$ksrc/tools/testing/selftests/run_kselftest.sh $$ksrc/tools/testing/selftests/kselftest \
		$(GUEST)/kselftest/ && \
	$(MAKE) --no-print-directory -s -C selftests/allocprof KSRC=$$ksrc COLLECTION=allocprof \
		OUTPUT=$(GUEST)/selftests-build emit_tests >$(GUEST)/kselftest/kselftest-list.txt

initramfs: module selftests
	@if [ -f $(GUEST)/moved/allocprof_rust_moved_b.ko ]; then \
		cp $(GUEST)/moved/allocprof_rust_moved_b.ko $(GUEST)/kselftest/allocprof/; fi
	@qemu/mkinitramfs $(GUEST)/initramfs.cpio.gz $(KDIR) $(wildcard $(GUEST)/modules/*.ko) \
		--selftests $(GUEST)/kselftest

# Style checks, each its own target so scripts/check can count them:
# clippy on the module (warnings are errors), rustfmt with the kernel's
# .rustfmt.toml, checkpatch --strict on each patch and on the cover letter
# (patches/0000-cover-letter.patch: its line lengths), clippy and rustfmt
# on the host crates, the module's imports a DAG (scripts/deps), shellcheck
# on every shell script.  checkpatch runs in the kernel source, as a kernel developer
# would: inside our git repository it reads the patch files as added by a
# commit.  Its ignores, each checked by hand: UNKNOWN_COMMIT_ID (the cited
# upstream commits are real, but there is no kernel git history here),
# FILE_PATH_CHANGES (the new rust/helpers files fall under rust/ in
# MAINTAINERS), MACRO_ARG_PRECEDENCE (ALLOC_TAG_HOOK's argument is a
# member name, which cannot be parenthesised) and MACRO_ARG_UNUSED (without
# CONFIG_MEM_ALLOC_PROFILING, alloc_tag_save() must not evaluate its tag,
# as upstream's does not: alloc_hooks() hands it a tag that is not defined
# then, rhashtable a member that does not exist; patch 0007).
CHECKPATCH_IGNORE := UNKNOWN_COMMIT_ID,FILE_PATH_CHANGES,MACRO_ARG_PRECEDENCE,MACRO_ARG_UNUSED
lint: lint-clippy lint-rustfmt lint-checkpatch lint-host lint-rt lint-deps lint-shell

# clippy builds the module and the test modules again each time (85 s of a
# warm make check, 2026-11-27), so it runs only when what it reads changed
# since it last passed: their sources, the kernel they are built against
# (its vmlinux and .config), rustc and clippy; MODSTAGE-clippy.passed holds
# the hash of those.  A fresh checkout always runs it.
CLIPPY_KEY = $(shell { find Kbuild src selftests/modules -type f | LC_ALL=C sort | xargs sha256sum; \
	stat -c '%s %Y' $(KDIR)/vmlinux $(KDIR)/.config; $(RUSTC) --version; /usr/bin/clippy-driver --version; \
	echo '$(KMAKE_VARS) $(KFLAVOUR)'; } 2>&1 | sha256sum | cut -c1-16)
lint-clippy: setup
	@key=$(CLIPPY_KEY); \
	if [ "$$(cat $(MODSTAGE)-clippy.passed 2>/dev/null)" = "$$key" ]; then \
		echo "clippy: passed before on these sources, kernel and tools ($$key)"; exit 0; fi; \
	mkdir -p $(MODSTAGE)-clippy && rm -f $(MODSTAGE)-clippy.passed && \
	rsync -a --delete Kbuild src selftests/modules $(MODSTAGE)-clippy/ && \
	touch $(MODSTAGE)-clippy/src/allocprof.rs && \
	$(MAKE) --no-print-directory -C $(KDIR) M=$(MODSTAGE)-clippy $(KMAKE_VARS) \
		ALLOCPROF_FLAVOUR=$(KFLAVOUR) CLIPPY=1 CLIPPY_DRIVER=/usr/bin/clippy-driver \
		ALLOCPROF_RUSTFLAGS=-Dwarnings modules 2>&1 | { grep -v '^make\[' || true; } && \
	echo "$$key" >$(MODSTAGE)-clippy.passed

lint-rustfmt: setup
	@ksrc=$$(scripts/kernel-source pristine); rustfmt --check --edition 2021 --config-path $$ksrc/.rustfmt.toml \
		src/allocprof.rs

# A kernel with PREEMPT_RT is refused at build time (src/Kbuild): the module
# built against this flavour's tree with CONFIG_PREEMPT_RT=y forced must
# fail, saying why.
lint-rt: setup
	@mkdir -p $(MODSTAGE)-rt
	@rsync -a --delete Kbuild src selftests/modules $(MODSTAGE)-rt/
	@out=$$($(MAKE) --no-print-directory -C $(KDIR) M=$(MODSTAGE)-rt $(KMAKE_VARS) \
		ALLOCPROF_FLAVOUR=$(KFLAVOUR) CONFIG_PREEMPT_RT=y modules 2>&1); rc=$$?; \
	if [ $$rc -ne 0 ] && echo "$$out" | grep -q 'allocprof does not support PREEMPT_RT'; then \
		echo "PREEMPT_RT refused: $$(echo "$$out" | grep -o 'allocprof does not support PREEMPT_RT[^:]*')"; \
	else echo "$$out" | tail -n 5; echo "allocprof: a PREEMPT_RT build was not refused (exit $$rc)" >&2; exit 1; fi

lint-checkpatch: setup
	@ksrc=$$(scripts/kernel-source pristine); rc=0; for p in $(CURDIR)/patches/*.patch; do \
		(cd $$ksrc && scripts/checkpatch.pl --strict --quiet --no-tree \
			--ignore $(CHECKPATCH_IGNORE) "$$p") || rc=1; \
	done; exit $$rc

# The module's imports form a DAG (scripts/deps), and scripts/deps still
# finds a cycle: the same tree with sys/mm.rs using the profiler (which
# uses sys/mm) must fail it.
lint-deps:
	@scripts/deps src >/dev/null || { scripts/deps src | grep '^cycle:'; exit 1; }
	@tmp=$$(mktemp -d) && cp -r src "$$tmp/src" && \
		echo 'use crate::profiler::Profiler;' >>"$$tmp/src/sys/mm.rs" && \
		out=$$(scripts/deps "$$tmp/src"); rc=$$?; rm -rf "$$tmp"; \
		if [ $$rc -eq 1 ] && echo "$$out" | grep -q '^cycle: .*profiler.*sys/mm\|^cycle: .*sys/mm.*profiler'; then \
			echo "imports: a DAG; a cycle put in is found: $$(echo "$$out" | grep -m1 '^cycle:')"; \
		else echo "scripts/deps did not find the cycle put in (exit $$rc)"; exit 1; fi

# Every shell script of the tree, found by its first line (a #! of sh or
# bash, or "# shellcheck shell=" in a file that is only sourced, as
# scripts/lib.sh), so that a new script is checked without being listed;
# .shellcheckrc has shellcheck follow the files each one sources.  A
# finding that is not a bug gets a directive on its line saying why.
SHELL_DIRS := scripts qemu packaging bench .ci selftests tools
lint-shell:
	@command -v shellcheck >/dev/null || { echo "no shellcheck: run make setup" >&2; exit 1; }
	@files=$$(find $(SHELL_DIRS) -type d -name target -prune -o -type f -exec awk \
		'FNR == 1 && (/^#!.*[\/ ](ba)?sh( |$$)/ || /^# shellcheck shell=/) { print FILENAME } { nextfile }' {} + | sort) && \
		test -n "$$files" && shellcheck $$files && echo "shellcheck: $$(echo $$files | wc -w) scripts, no finding"

lint-host:
	@for c in tools/*/Cargo.toml; do \
		(cd $$(dirname $$c) && cargo clippy --quiet --locked --all-targets -- -D warnings && \
			cargo fmt --check) || exit 1; \
	done

demo: initramfs
	@qemu/run --flavour $(KFLAVOUR) --append alloc_tag.record=1 --add scripts/demo.sh -- sh /root/demo.sh

# CHECK_DISTRO=1 (CI's .ci/run) adds make distro-check, its checks counted
# with the others.
check: setup
	@scripts/check

# Linux 7.3 alone: the suite on base-7.3 (the 7.3 series with allocprof)
# and the oracle tests on upstream-7.3 (7.3's built-in profiler), with the
# host tests and lints; the 7.3 source fetched and its kernels built the
# first time (Documentation/testing.md, Linux 7.3).
check-7.3: setup
	@CHECK_FLAVOURS="base-7.3 upstream-7.3" scripts/check

# The long runs on the patched flavours of both kernels: SOAK_CYCLES
# load/unload cycles of allocprof (storm_test), SOAK_CHURN cycles of other modules while
# /proc/allocinfo is read (churn_test), SOAK_RELOADS loads of a leaking
# module (leak_reload_test), SOAK_FUZZ seconds of fuzzing (fuzz_test) with
# a new seed, SOAK_RACES partial frees raced by a timer (control_test).
SOAK_CYCLES ?= 1000
SOAK_CHURN ?= 2000
SOAK_RELOADS ?= 2000
SOAK_FUZZ ?= 1800
SOAK_RACES ?= 20000
soak: setup
	@STORM_CYCLES=$(SOAK_CYCLES) STORM_CYCLES_DEBUG=$(SOAK_CYCLES) STORM_CYCLES_7_3=$(SOAK_CYCLES) \
		CHURN_CYCLES=$(SOAK_CHURN) CHURN_CYCLES_DEBUG=$(SOAK_CHURN) CHURN_CYCLES_7_3=$(SOAK_CHURN) \
		LEAK_RELOADS=$(SOAK_RELOADS) LEAK_RELOADS_DEBUG=$(SOAK_RELOADS) LEAK_RELOADS_7_3=$(SOAK_RELOADS) \
		FUZZ_SECONDS=$(SOAK_FUZZ) FUZZ_SECONDS_DEBUG=$(SOAK_FUZZ) FUZZ_SEED= CHECK_FLAVOURS="base debug base-7.3" \
		PARTIAL_RACES=$(SOAK_RACES) \
		STORM_TIMEOUT=14400 scripts/check

# The gate's own reliability on a loaded machine (scripts/gate-soak): 50
# guests whose last act is a WARN(), 30 runs of paths_test with its retries
# taken every time, two guests and a kernel build at once (slow; not part
# of check).  GATE_SOAK="capture N paths N" for other counts.
GATE_SOAK ?= capture 50 paths 30
.PHONY: gate-soak test-checkouts
gate-soak: setup
	@scripts/gate-soak $(GATE_SOAK)

# Two checkouts never run each other's builds (scripts/test-checkouts).
test-checkouts: setup
	@scripts/test-checkouts

# Boots noprof, upstream and base guests in turn, of Linux 6.12 and of 7.3
# (their -7.3 flavours; how long the latest run took:
# Documentation/benchmark.md); BENCH_KVERS ("6.12 7.3"), BENCH_ROUNDS,
# BENCH_TCG_ROUNDS, BENCH_RUNS, BENCH_TCG_RUNS, BENCH_PARAMS (see bench/run).
bench: setup
	@bench/run

# The kernels of make deb and make distro-check (6.12's distro flavour,
# 7.3's distro-7.3) and the Debian release of distro-check and of the
# install check: trixie (Debian 13) or bookworm (Debian 12).
DEB_KVERS ?= 6.12 7.3
DISTRO_SUITE ?= trixie
export DISTRO_SUITE DEB_KVERS
deb_flavour = distro$(if $(filter-out 6.12,$(1)),-$(1))

# The packages of make deb installed on a Debian system (DISTRO_SUITE)
# booted with systemd, their kernel booted with alloc_tag.record=1, for
# each kernel of DEB_KVERS (not part of check; needs root):
# scripts/distro-check.
.PHONY: distro-check
distro-check: setup
	@$(foreach v,$(DEB_KVERS),KFLAVOUR=$(call deb_flavour,$(v)) scripts/distro-check &&) true

# Debian packages (not part of check) for each kernel of DEB_KVERS: the
# patched kernel (bindeb-pkg, the distro flavour's config, -allocprof),
# allocprof-modules-<release>, allocinfo with its node_exporter timer,
# allocprof-dkms; lintian on each.  Into DEB_OUT (default $(CACHE)/deb),
# -7.3 after it for Linux 7.3's; see packaging/README.md.
.PHONY: deb
deb: setup
	@$(foreach v,$(DEB_KVERS),KFLAVOUR=$(call deb_flavour,$(v)) scripts/deb &&) true

# The kernel series applied one patch at a time to a copy of the pristine
# source, the objects it touches compiled after each in three configs: base,
# base with CONFIG_MEM_ALLOC_PROFILING=n, debug (scripts/series-check;
# SERIES=DIR checks another series, SERIES_CHECK_CONFIGS="base noprof debug"
# chooses the configs).
.PHONY: series-check
SERIES ?= $(CURDIR)/patches
series-check: setup
	@scripts/series-check $(SERIES)

# Each mutant of scripts/mutants.list built and run through the base
# kselftests (short storm) in a guest of its own; see Documentation/testing.md.
mutants: setup
	@scripts/mutants $(MUTANTS)

clean:
	rm -rf $(CHECKOUT_CACHE)
	-cd tools/allocinfo && cargo clean

distclean: clean
	rm -rf $(CACHE)
