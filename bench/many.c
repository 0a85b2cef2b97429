// SPDX-License-Identifier: GPL-2.0
/*
 * One of the small modules of make bench's "100 modules loaded" rows:
 * bench/run builds this file as many_000.ko .. many_099.ko, and the *-many
 * boots load them all before the benchmark's module (bench/guest.sh), so
 * that the benchmark's call sites come after a hundred sections of
 * allocation tags, in the profiler's registry and in the kernel's boot
 * record.  Each has three call sites of its own, each with one allocation
 * that lives until the module unloads.
 */
#include <linux/gfp.h>
#include <linux/module.h>
#include <linux/slab.h>

static void *many_small, *many_zeroed;
static struct page *many_page;

static void many_free(void)
{
	kfree(many_small);
	kfree(many_zeroed);
	if (many_page)
		__free_page(many_page);
}

static int __init many_init(void)
{
	many_small = kmalloc(64, GFP_KERNEL);
	many_zeroed = kzalloc(192, GFP_KERNEL);
	many_page = alloc_page(GFP_KERNEL);
	if (many_small && many_zeroed && many_page)
		return 0;
	many_free();
	return -ENOMEM;
}

static void __exit many_exit(void)
{
	many_free();
}

module_init(many_init);
module_exit(many_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("make bench: one of many small modules with call sites of their own");
