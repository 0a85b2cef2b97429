// SPDX-License-Identifier: GPL-2.0
/*
 * allocprof_churn: a module of many call sites, for churn_test, which loads
 * and unloads it in turn with a module of few (allocprof_test2 nr=0): a long
 * and a short section of allocprof's call-site ids take the same ids one
 * after the other while /proc/allocinfo is read.
 *
 * It has APCHURN_SITES call sites, more than 100 and more than one block
 * of allocprof's ids (64); each allocates once on load, kmalloc(APCHURN_SIZE),
 * and the memory is freed on unload.  /sys/kernel/debug/allocprof_churn/sites
 * lists them in allocprof_test's format: "<name> slab <cache> 1", where the
 * call site's function is apchurn_<name>.
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#define APCHURN_SIZE 64

/* 2^n call sites named by n binary digits after the prefix: X(name). */
#define APCHURN_2(X, n) X(n##0) X(n##1)
#define APCHURN_4(X, n) APCHURN_2(X, n##0) APCHURN_2(X, n##1)
#define APCHURN_8(X, n) APCHURN_4(X, n##0) APCHURN_4(X, n##1)
#define APCHURN_16(X, n) APCHURN_8(X, n##0) APCHURN_8(X, n##1)
#define APCHURN_32(X, n) APCHURN_16(X, n##0) APCHURN_16(X, n##1)
#define APCHURN_64(X, n) APCHURN_32(X, n##0) APCHURN_32(X, n##1)
#define APCHURN_128(X, n) APCHURN_64(X, n##0) APCHURN_64(X, n##1)
#define APCHURN_ALL(X) APCHURN_128(X, s)

/* One call site: a function of its own, so a tag of its own. */
#define APCHURN_FUNC(n)						\
	static noinline void *apchurn_##n(void)			\
	{							\
		return kmalloc(APCHURN_SIZE, GFP_KERNEL);	\
	}
APCHURN_ALL(APCHURN_FUNC)

#define APCHURN_ENTRY(n) { #n, apchurn_##n },
static const struct {
	const char *name;
	void *(*alloc)(void);
} apchurn_sites[] = { APCHURN_ALL(APCHURN_ENTRY) };

#define APCHURN_SITES ARRAY_SIZE(apchurn_sites)

static void *apchurn_mem[APCHURN_SITES];
static struct dentry *apchurn_dir;

static int apchurn_sites_show(struct seq_file *m, void *v)
{
	unsigned int i;

	/* The names of kmalloc_info[] in mm/slab_common.c, as allocprof_test. */
	for (i = 0; i < APCHURN_SITES; i++)
		seq_printf(m, "%s slab kmalloc-%zu 1\n", apchurn_sites[i].name,
			   kmalloc_size_roundup(APCHURN_SIZE));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(apchurn_sites);

static void apchurn_free(void)
{
	unsigned int i;

	for (i = 0; i < APCHURN_SITES; i++)
		kfree(apchurn_mem[i]);
}

static int __init apchurn_init(void)
{
	unsigned int i;

	for (i = 0; i < APCHURN_SITES; i++) {
		apchurn_mem[i] = apchurn_sites[i].alloc();
		if (!apchurn_mem[i]) {
			apchurn_free();
			return -ENOMEM;
		}
	}
	apchurn_dir = debugfs_create_dir("allocprof_churn", NULL);
	debugfs_create_file("sites", 0400, apchurn_dir, NULL, &apchurn_sites_fops);
	return 0;
}

static void __exit apchurn_exit(void)
{
	debugfs_remove_recursive(apchurn_dir);
	apchurn_free();
}

module_init(apchurn_init);
module_exit(apchurn_exit);
MODULE_DESCRIPTION("allocprof selftests: a module of many call sites, loaded and unloaded in turn");
MODULE_LICENSE("GPL");
