// SPDX-License-Identifier: GPL-2.0
/*
 * allocprof_test2: a module that leaves memory allocated behind when it
 * unloads.
 *
 * On load it allocates at its own call sites, "nr" times each (module
 * parameter, default 3), and hands the memory to allocprof_test
 * (allocprof_test_adopt()), which frees it on command:
 *   echo free > /sys/kernel/debug/allocprof_test/adopted
 * So the call sites below can be checked in /proc/allocinfo while this
 * module is loaded, after it is gone, and after the memory is freed.
 * /sys/kernel/debug/allocprof_test2/sites has the format of
 * allocprof_test's: "<name> <kind> <detail> <allocations made at load>".
 */
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "allocprof_test.h"

#define APTEST2_KMALLOC_SIZE 300
#define APTEST2_PAGES_ORDER 1

static unsigned int nr = 3;
module_param(nr, uint, 0444);
MODULE_PARM_DESC(nr, "allocations made at each call site on load (default 3)");

static struct dentry *aptest2_dir;

static noinline void *aptest2_kmalloc_300(void)
{
	return kmalloc(APTEST2_KMALLOC_SIZE, GFP_KERNEL);
}

static noinline struct page *aptest2_alloc_pages_1(void)
{
	return alloc_pages(GFP_KERNEL, APTEST2_PAGES_ORDER);
}

static int aptest2_sites_show(struct seq_file *m, void *v)
{
	/* The names of kmalloc_info[] in mm/slab_common.c, as allocprof_test. */
	seq_printf(m, "kmalloc_300 slab kmalloc-%zu %u\n",
		   kmalloc_size_roundup(APTEST2_KMALLOC_SIZE), nr);
	seq_printf(m, "alloc_pages_1 pages %lu %u\n", PAGE_SIZE << APTEST2_PAGES_ORDER, nr);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(aptest2_sites);

static int __init aptest2_init(void)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		void *p = aptest2_kmalloc_300();
		struct page *page = aptest2_alloc_pages_1();

		if (p && allocprof_test_adopt(p, APTEST_ADOPT_KFREE, 0)) {
			kfree(p);
			p = NULL;
		}
		if (page && allocprof_test_adopt(page, APTEST_ADOPT_PAGES,
						 APTEST2_PAGES_ORDER)) {
			__free_pages(page, APTEST2_PAGES_ORDER);
			page = NULL;
		}
		/* What was adopted is allocprof_test's to free. */
		if (!p || !page)
			return -ENOMEM;
	}
	aptest2_dir = debugfs_create_dir("allocprof_test2", NULL);
	debugfs_create_file("sites", 0400, aptest2_dir, NULL, &aptest2_sites_fops);
	return 0;
}

static void __exit aptest2_exit(void)
{
	debugfs_remove_recursive(aptest2_dir);
}

module_init(aptest2_init);
module_exit(aptest2_exit);
MODULE_DESCRIPTION("allocprof selftests: call sites with memory live at module unload");
MODULE_LICENSE("GPL");
