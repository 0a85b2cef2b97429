// SPDX-License-Identifier: GPL-2.0
/*
 * allocprof_bench: the allocation micro-benchmark of upstream's memory
 * allocation profiling series (a kmalloc/kfree loop with sizes growing from
 * 8 to 240 bytes, a __get_free_page/free_page loop), plus a vmalloc/vfree
 * and an alloc_percpu/free_percpu loop, and a kmalloc(64)/kfree loop, the C
 * call site allocprof_rust_bench's Rust loop is compared with, once with a
 * tag for each allocation and once under one tag for the whole loop.  Built against every kernel flavour
 * (with or without CONFIG_MEM_ALLOC_PROFILING, patched or not), so the same
 * source measures all of them.
 *
 * At load, a kthread bound to CPU @cpu runs @runs rounds of the six loops
 * (each after an untimed warm-up of a tenth of its iterations) and prints
 * one line per loop:
 *
 *   allocprof_bench: result tag=TAG run=N loop=kmalloc iters=I ns=T cal_iters=C cal_ns=K cpu=0
 *
 * T is ktime_get_ns() around the timed loop; under QEMU's -icount shift=0 a
 * nanosecond is one guest instruction.  K is the time of C iterations of an
 * arithmetic calibration loop run right before it (see loop_cal()).  The module stays loaded until
 * rmmod, with a clock for shell scripts: cat /sys/kernel/debug/allocprof_bench/now
 * prints ktime_get_ns().
 *
 * echo TAG > /sys/kernel/debug/allocprof_bench/run runs one more round, the
 * same way (the same kthread, the same lines, run=1), once the module is
 * loaded: after a write to allocprof's control file has flagged the
 * module's own call sites, which only exist from its load (bench/guest.sh,
 * the watch-* configurations).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

static unsigned int kmalloc_iters = 200000;
module_param(kmalloc_iters, uint, 0444);
MODULE_PARM_DESC(kmalloc_iters, "kmalloc/kfree pairs per run (sizes 8, 16, ... 240 bytes, in turn)");

static unsigned int kmalloc64_iters = 100000;
module_param(kmalloc64_iters, uint, 0444);
MODULE_PARM_DESC(kmalloc64_iters, "kmalloc(64)/kfree pairs per run (the C call site allocprof_rust_bench's KBox loop is compared with)");

static unsigned int page_iters = 100000;
module_param(page_iters, uint, 0444);
MODULE_PARM_DESC(page_iters, "__get_free_page/free_page pairs per run");

static unsigned int vmalloc_iters = 5000;
module_param(vmalloc_iters, uint, 0444);
MODULE_PARM_DESC(vmalloc_iters, "vmalloc/vfree pairs per run");

static unsigned int vmalloc_size = PAGE_SIZE;
module_param(vmalloc_size, uint, 0444);
MODULE_PARM_DESC(vmalloc_size, "bytes per vmalloc (default one page)");

static unsigned int percpu_iters = 20000;
module_param(percpu_iters, uint, 0444);
MODULE_PARM_DESC(percpu_iters, "alloc_percpu(u64)/free_percpu pairs per run");

static unsigned int cal_iters = 1000000;
module_param(cal_iters, uint, 0444);
MODULE_PARM_DESC(cal_iters, "iterations of the calibration loop timed before each loop (0: none)");

static unsigned int runs = 1;
module_param(runs, uint, 0444);
MODULE_PARM_DESC(runs, "rounds of the loops at load (0: only the debugfs files)");

static unsigned int cpu;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "CPU the benchmark kthread is bound to");

static char *tag = "-";
module_param(tag, charp, 0444);
MODULE_PARM_DESC(tag, "label printed in each result line (no spaces)");

/*
 * The kernel's sizes of what a slab object has in its slab's extension
 * vector and of the profiling part of it, for the vectors' memory that
 * bench/guest.sh reads (issue #25, target 5); 0 where the kernel has none.
 * Upstream's profiler keeps a union codetag_ref in struct slabobj_ext; the
 * patched kernel a struct alloc_tag_slot before the vector
 * (patch 0015, mm/slab.h: slab_obj_slot()).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
/*
 * 7.3: struct slabobj_ext is mm/slab.h's, out of a module's sight: an
 * 8-byte union (objcg or union codetag_ref), a slab object's entry one of
 * them for each of memcg's objcg (caches that may be charged) and the
 * profiling tag (slab_obj_ext_size()); the kernel keeps the tag with or
 * without the 7.3 series.  The entry of a charged cache's object below.
 */
#define BENCH_PROFILING_BYTES \
	(IS_ENABLED(CONFIG_MEM_ALLOC_PROFILING) ? sizeof(union codetag_ref) : 0)
#define BENCH_EXT_BYTES (IS_ENABLED(CONFIG_SLAB_OBJ_EXT) ? \
	(IS_ENABLED(CONFIG_MEMCG) ? sizeof(void *) : 0) + BENCH_PROFILING_BYTES : 0)
#elif !IS_ENABLED(CONFIG_MEM_ALLOC_PROFILING)
#define BENCH_PROFILING_BYTES 0
#elif __has_include(<linux/alloc_tag_backend.h>)
#define BENCH_PROFILING_BYTES sizeof(struct alloc_tag_slot)
#else
#define BENCH_PROFILING_BYTES sizeof(union codetag_ref)
#define BENCH_PROFILING_IN_EXT
#endif

static unsigned int slabobj_ext_bytes =
#ifdef BENCH_EXT_BYTES
	BENCH_EXT_BYTES
#else
	(IS_ENABLED(CONFIG_SLAB_OBJ_EXT) ? sizeof(struct slabobj_ext) : 0)
#ifndef BENCH_PROFILING_IN_EXT
	+ BENCH_PROFILING_BYTES
#endif
#endif
	;
module_param(slabobj_ext_bytes, uint, 0444);
MODULE_PARM_DESC(slabobj_ext_bytes, "bytes a slab object has in its slab's extension vector (read only)");

static unsigned int profiling_bytes = BENCH_PROFILING_BYTES;
module_param(profiling_bytes, uint, 0444);
MODULE_PARM_DESC(profiling_bytes, "of those, allocation profiling's (read only)");

/* Yield now and then: PREEMPT_NONE kernels would otherwise stall RCU. */
#define BENCH_RESCHED_MASK	4095

static int loop_kmalloc(unsigned int iters)
{
	unsigned int i;
	void *p;

	for (i = 0; i < iters; i++) {
		/* 8, 16, ... 240 bytes: 30 sizes, one kmalloc cache each */
		size_t size = 8 * (1 + i % 30);

		OPTIMIZER_HIDE_VAR(size);
		p = kmalloc(size, GFP_KERNEL);
		if (!p)
			return -ENOMEM;
		kfree(p);
		if (!(i & BENCH_RESCHED_MASK))
			cond_resched();
	}
	return 0;
}

/*
 * What allocprof_rust_bench's loop allocates, from a C call site: with
 * @own_tag each allocation sets its call site's tag (kmalloc()), without
 * none of its own (kmalloc_noprof()).  Inlined with a constant @own_tag.
 */
static __always_inline int loop_kmalloc64_each(unsigned int iters, bool own_tag)
{
	unsigned int i;
	void *p;

	for (i = 0; i < iters; i++) {
		p = own_tag ? kmalloc(64, GFP_KERNEL) : kmalloc_noprof(64, GFP_KERNEL);
		if (!p)
			return -ENOMEM;
		OPTIMIZER_HIDE_VAR(p);
		kfree(p);
		if (!(i & BENCH_RESCHED_MASK))
			cond_resched();
	}
	return 0;
}

static int loop_kmalloc64(unsigned int iters)
{
	return loop_kmalloc64_each(iters, true);
}

static noinline int kmalloc64_untagged(unsigned int iters)
{
	return loop_kmalloc64_each(iters, false);
}

/*
 * kmalloc64's allocations under one tag set once outside the loop
 * (alloc_hooks() around it, kmalloc_noprof() inside): kmalloc64 against
 * this is what a C call site's tag costs an allocation, alloc_hooks()' save
 * and restore of the task's tag.
 */
static int loop_kmalloc64_one_tag(unsigned int iters)
{
	return alloc_hooks(kmalloc64_untagged(iters));
}

static int loop_page(unsigned int iters)
{
	unsigned long addr;
	unsigned int i;

	for (i = 0; i < iters; i++) {
		addr = __get_free_page(GFP_KERNEL);
		if (!addr)
			return -ENOMEM;
		free_page(addr);
		if (!(i & BENCH_RESCHED_MASK))
			cond_resched();
	}
	return 0;
}

static int loop_vmalloc(unsigned int iters)
{
	unsigned int i;
	void *p;

	for (i = 0; i < iters; i++) {
		p = vmalloc(vmalloc_size);
		if (!p)
			return -ENOMEM;
		vfree(p);
		if (!(i & BENCH_RESCHED_MASK))
			cond_resched();
	}
	return 0;
}

static int loop_percpu(unsigned int iters)
{
	unsigned int i;
	u64 __percpu *p;

	for (i = 0; i < iters; i++) {
		p = alloc_percpu(u64);
		if (!p)
			return -ENOMEM;
		free_percpu(p);
		if (!(i & BENCH_RESCHED_MASK))
			cond_resched();
	}
	return 0;
}

/*
 * Calibration: integer arithmetic only, the same instructions in every
 * kernel.  Timed right before each loop, it measures how fast the host runs
 * the guest at that moment (plain TCG), and under -icount shows that the
 * clock counts the same instructions in every kernel.
 */
static u64 cal_sink;

static u64 loop_cal(unsigned int iters)
{
	u64 x = iters;
	unsigned int i;

	for (i = 0; i < iters; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		OPTIMIZER_HIDE_VAR(x);
	}
	return x;
}

static const struct bench_loop {
	const char *name;
	int (*fn)(unsigned int iters);
	unsigned int *iters;
} bench_loops[] = {
	{ "kmalloc", loop_kmalloc, &kmalloc_iters },
	{ "kmalloc64", loop_kmalloc64, &kmalloc64_iters },
	{ "kmalloc64_one_tag", loop_kmalloc64_one_tag, &kmalloc64_iters },
	{ "page", loop_page, &page_iters },
	{ "vmalloc", loop_vmalloc, &vmalloc_iters },
	{ "percpu", loop_percpu, &percpu_iters },
};

struct bench_ctx {
	struct completion done;
	const char *tag;
	unsigned int runs;
	int err;
};

static int bench_thread(void *data)
{
	struct bench_ctx *ctx = data;
	const char *tag = ctx->tag;
	unsigned int run, l;
	int err = 0;

	for (run = 1; run <= ctx->runs && !err; run++) {
		for (l = 0; l < ARRAY_SIZE(bench_loops) && !err; l++) {
			const struct bench_loop *b = &bench_loops[l];
			unsigned int iters = *b->iters;
			u64 t0, t1, cal = 0;

			if (!iters)
				continue;
			err = b->fn(max(iters / 10, 1U));
			if (err)
				break;
			if (cal_iters) {
				t0 = ktime_get_ns();
				WRITE_ONCE(cal_sink, loop_cal(cal_iters));
				cal = ktime_get_ns() - t0;
			}
			t0 = ktime_get_ns();
			err = b->fn(iters);
			t1 = ktime_get_ns();
			if (err)
				break;
			pr_info("result tag=%s run=%u loop=%s iters=%u ns=%llu cal_iters=%u cal_ns=%llu cpu=%d\n",
				tag, run, b->name, iters, t1 - t0, cal_iters, cal,
				raw_smp_processor_id());
		}
	}
	if (err)
		pr_err("tag=%s: allocation failed: %d\n", tag, err);
	ctx->err = err;
	kthread_complete_and_exit(&ctx->done, 0);
}

/* @nr_runs rounds of the loops on a kthread bound to @cpu, tagged @tag. */
static int bench_rounds(const char *tag, unsigned int nr_runs)
{
	struct bench_ctx ctx = { .tag = tag, .runs = nr_runs };
	struct task_struct *t;

	if (cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -EINVAL;
	init_completion(&ctx.done);
	t = kthread_create_on_cpu(bench_thread, &ctx, cpu, "allocprof_bench/%u");
	if (IS_ERR(t))
		return PTR_ERR(t);
	wake_up_process(t);
	wait_for_completion(&ctx.done);
	return ctx.err;
}

static int now_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%llu\n", ktime_get_ns());
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(now);

static DEFINE_MUTEX(run_lock);

/*
 * One round tagged with what is written (one word, no blanks; a trailing
 * newline is dropped).  No allocation here: the module's only call sites
 * stay those of the loops.
 */
static ssize_t run_write(struct file *file, const char __user *buf, size_t count, loff_t *ppos)
{
	char tagbuf[64];
	size_t len = count;
	int err;

	if (!len || len >= sizeof(tagbuf))
		return -EINVAL;
	if (copy_from_user(tagbuf, buf, len))
		return -EFAULT;
	if (tagbuf[len - 1] == '\n')
		len--;
	tagbuf[len] = '\0';
	if (!len || strpbrk(tagbuf, " \t\n"))
		return -EINVAL;
	mutex_lock(&run_lock);
	err = bench_rounds(tagbuf, 1);
	mutex_unlock(&run_lock);
	return err ? err : count;
}

static const struct file_operations run_fops = {
	.owner = THIS_MODULE,
	.write = run_write,
};

static struct dentry *bench_dir;

static int __init allocprof_bench_init(void)
{
	int err;

	if (runs) {
		err = bench_rounds(tag, runs);
		if (err)
			return err;
	}
	bench_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("now", 0444, bench_dir, NULL, &now_fops);
	debugfs_create_file("run", 0200, bench_dir, NULL, &run_fops);
	return 0;
}

static void __exit allocprof_bench_exit(void)
{
	debugfs_remove_recursive(bench_dir);
}

module_init(allocprof_bench_init);
module_exit(allocprof_bench_exit);
MODULE_DESCRIPTION("kmalloc, page, vmalloc and percpu allocation micro-benchmark");
MODULE_LICENSE("GPL");
