// SPDX-License-Identifier: GPL-2.0
/*
 * allocprof_test: allocation call sites with known sizes for the
 * allocprof selftests.
 *
 * Each call site is the only allocation in its own function, so it shows
 * in /proc/allocinfo as "... [allocprof_test] func:aptest_<site>".
 * Driven through debugfs (/sys/kernel/debug/allocprof_test/):
 *   echo "<site> <count>" > alloc   make <count> allocations at <site>
 *   echo "<site>" > free            free every live allocation of <site>
 *   cat sites                       one line a site: name, kind, and the
 *                                   kmalloc cache or the bytes per call
 *   echo 1 > warn                   a deliberate WARN(), to check that the
 *                                   guest runner fails on kernel warnings
 */
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#define APTEST_MAX_LIVE 4096

enum aptest_kind { APTEST_SLAB, APTEST_CACHE, APTEST_PAGES, APTEST_EXACT };

struct aptest_site {
	const char *name;
	enum aptest_kind kind;
	size_t size;		/* bytes asked for (slab, exact) */
	unsigned int order;	/* pages */
	void *(*alloc)(struct aptest_site *site);
	void (*free)(struct aptest_site *site, void *p);
	unsigned int nr_live;
	void *live[APTEST_MAX_LIVE];
};

static struct kmem_cache *aptest_cache;
static struct dentry *aptest_dir;
static DEFINE_MUTEX(aptest_lock);

#define APTEST_OBJ_SIZE 200
#define APTEST_CACHE_NAME "allocprof_test_obj"

static noinline void *aptest_kmalloc_8(struct aptest_site *site)
{
	return kmalloc(8, GFP_KERNEL);
}

static noinline void *aptest_kmalloc_100(struct aptest_site *site)
{
	return kmalloc(100, GFP_KERNEL);
}

static noinline void *aptest_kmalloc_1000(struct aptest_site *site)
{
	return kmalloc(1000, GFP_KERNEL);
}

static noinline void *aptest_kmalloc_3000(struct aptest_site *site)
{
	return kmalloc(3000, GFP_KERNEL);
}

static void aptest_kfree(struct aptest_site *site, void *p)
{
	kfree(p);
}

static noinline void *aptest_cache_alloc(struct aptest_site *site)
{
	return kmem_cache_alloc(aptest_cache, GFP_KERNEL);
}

static void aptest_cache_free(struct aptest_site *site, void *p)
{
	kmem_cache_free(aptest_cache, p);
}

static noinline void *aptest_alloc_pages_0(struct aptest_site *site)
{
	return alloc_pages(GFP_KERNEL, 0);
}

static noinline void *aptest_alloc_pages_3(struct aptest_site *site)
{
	return alloc_pages(GFP_KERNEL, 3);
}

static void aptest_free_pages(struct aptest_site *site, void *p)
{
	__free_pages(p, site->order);
}

static noinline void *aptest_get_free_pages_2(struct aptest_site *site)
{
	return (void *)__get_free_pages(GFP_KERNEL, 2);
}

static void aptest_free_pages_addr(struct aptest_site *site, void *p)
{
	free_pages((unsigned long)p, site->order);
}

static noinline void *aptest_alloc_pages_exact(struct aptest_site *site)
{
	return alloc_pages_exact(site->size, GFP_KERNEL);
}

static void aptest_free_pages_exact(struct aptest_site *site, void *p)
{
	free_pages_exact(p, site->size);
}

static struct aptest_site aptest_sites[] = {
	{ "kmalloc_8", APTEST_SLAB, 8, 0, aptest_kmalloc_8, aptest_kfree },
	{ "kmalloc_100", APTEST_SLAB, 100, 0, aptest_kmalloc_100, aptest_kfree },
	{ "kmalloc_1000", APTEST_SLAB, 1000, 0, aptest_kmalloc_1000, aptest_kfree },
	{ "kmalloc_3000", APTEST_SLAB, 3000, 0, aptest_kmalloc_3000, aptest_kfree },
	{ "cache_alloc", APTEST_CACHE, APTEST_OBJ_SIZE, 0, aptest_cache_alloc,
	  aptest_cache_free },
	{ "alloc_pages_0", APTEST_PAGES, 0, 0, aptest_alloc_pages_0,
	  aptest_free_pages },
	{ "alloc_pages_3", APTEST_PAGES, 0, 3, aptest_alloc_pages_3,
	  aptest_free_pages },
	{ "get_free_pages_2", APTEST_PAGES, 0, 2, aptest_get_free_pages_2,
	  aptest_free_pages_addr },
	{ "alloc_pages_exact", APTEST_EXACT, 5 * PAGE_SIZE - 100, 0,
	  aptest_alloc_pages_exact, aptest_free_pages_exact },
};

static struct aptest_site *aptest_find(const char *name)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(aptest_sites); i++)
		if (!strcmp(aptest_sites[i].name, name))
			return &aptest_sites[i];
	return NULL;
}

static void aptest_free_all(struct aptest_site *site)
{
	while (site->nr_live)
		site->free(site, site->live[--site->nr_live]);
}

static ssize_t aptest_write(struct file *file, const char __user *ubuf,
			    size_t len, loff_t *ppos, bool alloc)
{
	char buf[64], name[32];
	struct aptest_site *site;
	unsigned int count = 0;
	ssize_t ret = len;
	int n;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';

	n = sscanf(buf, "%31s %u", name, &count);
	if (n < 1 || (alloc && n != 2))
		return -EINVAL;
	site = aptest_find(name);
	if (!site)
		return -ENOENT;

	mutex_lock(&aptest_lock);
	if (!alloc) {
		aptest_free_all(site);
	} else if (count > APTEST_MAX_LIVE - site->nr_live) {
		ret = -ENOSPC;
	} else {
		while (count--) {
			void *p = site->alloc(site);

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			site->live[site->nr_live++] = p;
		}
	}
	mutex_unlock(&aptest_lock);
	return ret;
}

static ssize_t aptest_alloc_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	return aptest_write(file, ubuf, len, ppos, true);
}

static ssize_t aptest_free_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	return aptest_write(file, ubuf, len, ppos, false);
}

static ssize_t aptest_warn_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	WARN(1, "allocprof_test: deliberate warning\n");
	return len;
}

static const struct file_operations aptest_warn_fops = {
	.owner = THIS_MODULE,
	.write = aptest_warn_write,
};

static const struct file_operations aptest_alloc_fops = {
	.owner = THIS_MODULE,
	.write = aptest_alloc_write,
};

static const struct file_operations aptest_free_fops = {
	.owner = THIS_MODULE,
	.write = aptest_free_write,
};

/*
 * One line a site: "<name> <kind> <detail> <live>".  For kmalloc sites the
 * detail is the kmalloc cache serving the size (the test reads its
 * slab_size from /sys/kernel/slab); for the own cache its name; for page
 * sites the bytes allocated per call.
 */
static int aptest_sites_show(struct seq_file *m, void *v)
{
	int i;

	mutex_lock(&aptest_lock);
	for (i = 0; i < ARRAY_SIZE(aptest_sites); i++) {
		struct aptest_site *site = &aptest_sites[i];

		switch (site->kind) {
		case APTEST_SLAB: {
			size_t sz = kmalloc_size_roundup(site->size);

			/* The names of kmalloc_info[] in mm/slab_common.c. */
			if (sz >= 1024)
				seq_printf(m, "%s slab kmalloc-%zuk", site->name,
					   sz / 1024);
			else
				seq_printf(m, "%s slab kmalloc-%zu", site->name, sz);
			break;
		}
		case APTEST_CACHE:
			seq_printf(m, "%s slab %s", site->name, APTEST_CACHE_NAME);
			break;
		case APTEST_PAGES:
			seq_printf(m, "%s pages %lu", site->name,
				   PAGE_SIZE << site->order);
			break;
		case APTEST_EXACT:
			seq_printf(m, "%s pages %lu", site->name,
				   PAGE_ALIGN(site->size));
			break;
		}
		seq_printf(m, " %u\n", site->nr_live);
	}
	mutex_unlock(&aptest_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(aptest_sites);

static int __init aptest_init(void)
{
	aptest_cache = kmem_cache_create(APTEST_CACHE_NAME, APTEST_OBJ_SIZE,
					 0, SLAB_NO_MERGE, NULL);
	if (!aptest_cache)
		return -ENOMEM;

	aptest_dir = debugfs_create_dir("allocprof_test", NULL);
	debugfs_create_file("alloc", 0200, aptest_dir, NULL, &aptest_alloc_fops);
	debugfs_create_file("free", 0200, aptest_dir, NULL, &aptest_free_fops);
	debugfs_create_file("sites", 0400, aptest_dir, NULL, &aptest_sites_fops);
	debugfs_create_file("warn", 0200, aptest_dir, NULL, &aptest_warn_fops);
	return 0;
}

static void __exit aptest_exit(void)
{
	int i;

	debugfs_remove_recursive(aptest_dir);
	for (i = 0; i < ARRAY_SIZE(aptest_sites); i++)
		aptest_free_all(&aptest_sites[i]);
	kmem_cache_destroy(aptest_cache);
}

module_init(aptest_init);
module_exit(aptest_exit);
MODULE_DESCRIPTION("Known allocation call sites for the allocprof selftests");
MODULE_LICENSE("GPL");
