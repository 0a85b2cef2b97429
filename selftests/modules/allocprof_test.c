// SPDX-License-Identifier: GPL-2.0
/*
 * allocprof_test: allocation call sites with known sizes for the
 * allocprof selftests.
 *
 * Each call site is the only allocation in its own function, so it shows
 * in /proc/allocinfo as "... [allocprof_test] func:aptest_<site>".
 * Driven through debugfs (/sys/kernel/debug/allocprof_test/):
 *   echo "<site> <count>" > alloc   make <count> allocations at <site>
 *   echo "<site> [<n>]" > free      free the last <n> live entries of <site>
 *                                   (default: all of them)
 *   echo "<site> <n> first" > free  free the first <n> live entries of <site>,
 *                                   the oldest
 *   cat sites                       one line a site: name, kind, what the
 *                                   expected figures are computed from (see
 *                                   aptest_sites_show()), live entries
 *
 * A live entry is one allocation, or at a batch site (split_page,
 * pages_bulk, cache_bulk) one of the APTEST_BATCH pages or objects that one
 * allocation there makes, each counted as one call.
 *   echo free > adopted             free the memory other test modules
 *                                   handed over (allocprof_test_adopt())
 *   cat adopted                     how many allocations were handed over
 *   echo "<kind> <count>" > untagged
 *                                   <count> allocations (each freed again)
 *                                   that carry no allocation tag: kmalloc,
 *                                   pages or percpu through their _noprof
 *                                   functions, without alloc_hooks()
 *   echo 1 > warn                   a deliberate WARN(), to check that the
 *                                   guest runner fails on kernel warnings
 *   echo start|outer|inner|pages|free > nested
 *                                   a nested allocation run in stages, so
 *                                   that a test can switch profiling
 *                                   between them (aptest_nested_write())
 *   echo "a|b <count>" > callers    <count> allocations at one call site,
 *                                   aptest_helper(), called by
 *                                   aptest_from_a() or aptest_from_b(): one
 *                                   call site, two call chains
 *   echo free > callers             free them all
 *   cat callers                     as "sites": "helper slab <cache> <live>",
 *                                   then "from_a caller aptest_from_a <live>"
 *                                   and the same for b
 *   echo <n> > partial_race, cat partial_race
 *                                   n partial frees at aptest_partial_race()
 *                                   raced by a timer's put (all freed after);
 *                                   cat: the runs the timer's put ended
 *   echo <n> > deep, echo free > deep, cat deep
 *                                   n allocations at one call site, each
 *                                   through a call chain of its own
 *                                   (aptest_deep_write())
 *   echo <n> > hold, echo free > hold, cat hold
 *                                   n blocks of pages held at one call site
 *                                   until freed, to fill memory for a real
 *                                   OOM (aptest_hold_write())
 *   echo 1 > kvmalloc              one kvmalloc() of 16 pages at
 *                                   aptest_kvmalloc_64k(), freed at once
 *                                   (fault_test: ENOMEM if it failed)
 *   echo overlive|foreign > forge, cat forge
 *                                   slab slots written behind the profiler's
 *                                   back, for its debug mode's reports
 *                                   (aptest_forge_write(); patched kernels
 *                                   with allocation profiling only)
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "allocprof_test.h"

/*
 * The forge file needs the slab internals (mm/slab.h, on the include path
 * by Kbuild) and the back end's slot (struct alloc_tag_slot, before the
 * slab's extension vector): only on a patched 6.12 kernel with allocation
 * profiling (7.3's series keeps no slot for the back end).
 */
#if IS_ENABLED(CONFIG_MEM_ALLOC_PROFILING) && __has_include(<linux/alloc_tag_backend.h>) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define APTEST_FORGE
#include "slab.h"
#endif

#define APTEST_MAX_LIVE 4096

enum aptest_kind {
	APTEST_SLAB, APTEST_CACHE, APTEST_PAGES, APTEST_EXACT, APTEST_VMALLOC,
	APTEST_PERCPU,
};

/* What a batch site's alloc_batch() makes of one allocation. */
#define APTEST_BATCH 4

struct aptest_site {
	const char *name;
	enum aptest_kind kind;
	size_t size;		/* bytes asked for (slab, exact) */
	unsigned int order;	/* pages */
	void *(*alloc)(struct aptest_site *site);
	void (*free)(struct aptest_site *site, void *p);
	/*
	 * Batch sites: one allocation puts APTEST_BATCH live entries in out[]
	 * (0 or -ENOMEM), which are freed one by one with free(), or all at
	 * once with free_batch() where a site has it.
	 */
	int (*alloc_batch)(struct aptest_site *site, void **out);
	void (*free_batch)(struct aptest_site *site, void **p, unsigned int n);
	bool account;		/* slab: __GFP_ACCOUNT, a kmalloc-cg cache */
	struct mutex lock;	/* nr_live and live[]: one lock a site, so */
				/* writers at different sites run in parallel */
	unsigned int nr_live;
	void *live[APTEST_MAX_LIVE];
};

static struct kmem_cache *aptest_cache;
static struct dentry *aptest_dir;
/* The adopted memory. */
static DEFINE_MUTEX(aptest_lock);

#define APTEST_OBJ_SIZE 200
#define APTEST_CACHE_NAME "allocprof_test_obj"

/*
 * kvmalloc() tries kmalloc() first (__GFP_NORETRY | __GFP_NOWARN above a
 * page) and falls back to vmalloc only when that fails: above
 * KMALLOC_MAX_SIZE it always does.  The fallback may use huge pages
 * (VM_ALLOW_HUGE_VMAP) and retries with small pages when they run out; a
 * multiple of PMD_SIZE is the same number of (split) pages either way.
 */
#define APTEST_KVMALLOC_SIZE ALIGN(KMALLOC_MAX_SIZE + 1, PMD_SIZE)
#define APTEST_PERCPU_SIZE 48
#define APTEST_PERCPU_ALIGN 8

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

/* Never fails: fault injection must not fail it either. */
static noinline void *aptest_kmalloc_nofail(struct aptest_site *site)
{
	return kmalloc(site->size, GFP_KERNEL | __GFP_NOFAIL);
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

/*
 * Entry i on node i modulo the online nodes (the guest's are 0 and 1):
 * a call site with pages on every node, for the per-node figures.
 */
static noinline void *aptest_pages_node(struct aptest_site *site)
{
	return alloc_pages_node(site->nr_live % num_online_nodes(),
				GFP_KERNEL | __GFP_THISNODE, 0);
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

static noinline void *aptest_vmalloc_5p(struct aptest_site *site)
{
	return vmalloc(site->size);
}

static noinline void *aptest_vzalloc(struct aptest_site *site)
{
	return vzalloc(site->size);
}

static noinline void *aptest_vmalloc_huge(struct aptest_site *site)
{
#ifdef vmalloc_huge_node
	/*
	 * 7.x's vmalloc_huge() is an inline function around this macro: the
	 * macro here keeps the call site in this function.
	 */
	return vmalloc_huge_node(site->size, GFP_KERNEL, NUMA_NO_NODE);
#else
	return vmalloc_huge(site->size, GFP_KERNEL);
#endif
}

static noinline void *aptest_kvmalloc_vmalloc(struct aptest_site *site)
{
	return kvmalloc(site->size, GFP_KERNEL);
}

static void aptest_kvfree(struct aptest_site *site, void *p)
{
	kvfree(p);
}

/* What kvrealloc() grows: a vmalloc()ed page at a call site of its own. */
static noinline void *aptest_kvrealloc_vmalloc_base(void)
{
	return vmalloc(PAGE_SIZE);
}

/*
 * kvrealloc() of a vmalloc()ed area is vrealloc() (which 6.12 does not
 * export): growing it beyond its pages allocates a new area and frees the
 * old one, so only the new area stays counted, at this call site.
 */
static noinline void *aptest_kvrealloc_vmalloc(struct aptest_site *site)
{
	void *old = aptest_kvrealloc_vmalloc_base(), *p;

	if (!old)
		return NULL;
	p = kvrealloc(old, site->size, GFP_KERNEL);
	if (!p)
		vfree(old);
	return p;
}

/* What kvrealloc() grows: a kmalloc-128 object at a call site of its own. */
static noinline void *aptest_kvrealloc_kmalloc_base(void)
{
	return kmalloc(100, GFP_KERNEL);
}

/*
 * kvrealloc() of a kmalloc()ed object is krealloc(): a new object from the
 * kmalloc cache of the new size, and the old one freed.
 */
static noinline void *aptest_kvrealloc_kmalloc(struct aptest_site *site)
{
	void *old = aptest_kvrealloc_kmalloc_base(), *p;

	if (!old)
		return NULL;
	p = kvrealloc(old, site->size, GFP_KERNEL);
	if (!p)
		kfree(old);
	return p;
}

/*
 * A partial free: an order-2 page that is not compound, with a second
 * reference on its first page while __free_pages() drops the allocation's,
 * so that only the three tail pages are freed.  The entry is the first
 * page, as an order-0 allocation: 4 KiB and the one call stay counted.
 */
static noinline void *aptest_pages_partial(struct aptest_site *site)
{
	struct page *page = alloc_pages(GFP_KERNEL, 2);

	if (!page)
		return NULL;
	get_page(page);
	__free_pages(page, 2);
	return page;
}

/* A block of pages split into order-0 pages, each freed on its own. */
static noinline int aptest_split_page(struct aptest_site *site, void **out)
{
	struct page *page = alloc_pages(GFP_KERNEL, ilog2(APTEST_BATCH));
	int i;

	if (!page)
		return -ENOMEM;
	split_page(page, ilog2(APTEST_BATCH));
	for (i = 0; i < APTEST_BATCH; i++)
		out[i] = page + i;
	return 0;
}

/* The bulk page allocator; it may fill fewer slots than asked per call. */
static noinline int aptest_pages_bulk(struct aptest_site *site, void **out)
{
	struct page *pages[APTEST_BATCH] = {};
	unsigned long n = 0, before;
	int i;

	do {
		before = n;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 14, 0)
		n = alloc_pages_bulk(GFP_KERNEL, APTEST_BATCH, pages);
#else
		n = alloc_pages_bulk_array(GFP_KERNEL, APTEST_BATCH, pages);
#endif
	} while (n < APTEST_BATCH && n > before);
	if (n < APTEST_BATCH) {
		for (i = 0; i < APTEST_BATCH; i++)
			if (pages[i])
				__free_page(pages[i]);
		return -ENOMEM;
	}
	for (i = 0; i < APTEST_BATCH; i++)
		out[i] = pages[i];
	return 0;
}

static noinline int aptest_cache_bulk(struct aptest_site *site, void **out)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	/* 7.x returns whether it allocated them all. */
	return kmem_cache_alloc_bulk(aptest_cache, GFP_KERNEL, APTEST_BATCH, out) ? 0 : -ENOMEM;
#else
	return kmem_cache_alloc_bulk(aptest_cache, GFP_KERNEL, APTEST_BATCH, out) ==
	       APTEST_BATCH ? 0 : -ENOMEM;
#endif
}

static void aptest_cache_free_bulk(struct aptest_site *site, void **p, unsigned int n)
{
	kmem_cache_free_bulk(aptest_cache, n, p);
}

/* Charged to the allocating task's memory cgroup. */
static noinline void *aptest_kmalloc_account(struct aptest_site *site)
{
	return kmalloc(100, GFP_KERNEL_ACCOUNT);
}

static noinline void *aptest_pages_account(struct aptest_site *site)
{
	return alloc_pages(GFP_KERNEL_ACCOUNT, 0);
}

/*
 * 256 pages charged at once: one update of the memory cgroup's statistics
 * larger than the batch after which reading memory.stat flushes them
 * (memcg_vmstats_needs_flush(): 64 pages a CPU), so that a read after it
 * is exact whatever the periodic flush did (memcg_test).
 */
static noinline void *aptest_pages_account_8(struct aptest_site *site)
{
	return alloc_pages(GFP_KERNEL_ACCOUNT, 8);
}

static noinline void *aptest_percpu_48(struct aptest_site *site)
{
	return (void __force *)__alloc_percpu_gfp(site->size, APTEST_PERCPU_ALIGN,
						  GFP_KERNEL);
}

static void aptest_free_percpu(struct aptest_site *site, void *p)
{
	free_percpu((void __percpu __force *)p);
}

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 18, 0)
/*
 * kmalloc_nolock(), kfree_nolock() and alloc_pages_nolock() may be called
 * under a raw spinlock (and in NMI), so their profiling hooks run there:
 * these sites allocate (and the slab site frees) under one of the
 * module's own; free_pages_nolock() is not exported.  Both allocators are
 * best effort (a trylock another CPU holds fails them), so an allocation
 * is tried again, the lock released in between.
 */
#define APTEST_NOLOCK_TRIES	1000
static DEFINE_RAW_SPINLOCK(aptest_raw_lock);

static noinline void *aptest_kmalloc_nolock(struct aptest_site *site)
{
	unsigned long flags;
	void *p = NULL;
	int i;

	for (i = 0; !p && i < APTEST_NOLOCK_TRIES; i++) {
		raw_spin_lock_irqsave(&aptest_raw_lock, flags);
		p = kmalloc_nolock(site->size, 0, NUMA_NO_NODE);
		raw_spin_unlock_irqrestore(&aptest_raw_lock, flags);
	}
	return p;
}

static void aptest_kfree_nolock(struct aptest_site *site, void *p)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&aptest_raw_lock, flags);
	kfree_nolock(p);
	raw_spin_unlock_irqrestore(&aptest_raw_lock, flags);
}

static noinline void *aptest_pages_nolock(struct aptest_site *site)
{
	struct page *page = NULL;
	unsigned long flags;
	int i;

	for (i = 0; !page && i < APTEST_NOLOCK_TRIES; i++) {
		raw_spin_lock_irqsave(&aptest_raw_lock, flags);
		page = alloc_pages_nolock(0, NUMA_NO_NODE, site->order);
		raw_spin_unlock_irqrestore(&aptest_raw_lock, flags);
	}
	return page;
}

#endif

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
	{ "pages_node", APTEST_PAGES, 0, 0, aptest_pages_node,
	  aptest_free_pages },
	{ "get_free_pages_2", APTEST_PAGES, 0, 2, aptest_get_free_pages_2,
	  aptest_free_pages_addr },
	{ "alloc_pages_exact", APTEST_EXACT, 5 * PAGE_SIZE - 100, 0,
	  aptest_alloc_pages_exact, aptest_free_pages_exact },
	{ "vmalloc_5p", APTEST_VMALLOC, 5 * PAGE_SIZE, 0, aptest_vmalloc_5p,
	  aptest_kvfree },
	{ "vzalloc", APTEST_VMALLOC, 2 * PAGE_SIZE + 1, 0, aptest_vzalloc,
	  aptest_kvfree },
	{ "vmalloc_huge", APTEST_VMALLOC, PMD_SIZE, 0, aptest_vmalloc_huge,
	  aptest_kvfree },
	{ "kvmalloc_vmalloc", APTEST_VMALLOC, APTEST_KVMALLOC_SIZE, 0,
	  aptest_kvmalloc_vmalloc, aptest_kvfree },
	{ "kvrealloc_vmalloc", APTEST_VMALLOC, 3 * PAGE_SIZE, 0,
	  aptest_kvrealloc_vmalloc, aptest_kvfree },
	{ "kvrealloc_kmalloc", APTEST_SLAB, 2000, 0, aptest_kvrealloc_kmalloc,
	  aptest_kvfree },
	{ "percpu_48", APTEST_PERCPU, APTEST_PERCPU_SIZE, 0, aptest_percpu_48,
	  aptest_free_percpu },
	{ "pages_partial", APTEST_PAGES, 0, 0, aptest_pages_partial,
	  aptest_free_pages },
	{ "split_page", APTEST_PAGES, 0, 0, NULL, aptest_free_pages,
	  .alloc_batch = aptest_split_page },
	{ "pages_bulk", APTEST_PAGES, 0, 0, NULL, aptest_free_pages,
	  .alloc_batch = aptest_pages_bulk },
	{ "cache_bulk", APTEST_CACHE, APTEST_OBJ_SIZE, 0, NULL, aptest_cache_free,
	  .alloc_batch = aptest_cache_bulk, .free_batch = aptest_cache_free_bulk },
	{ "kmalloc_account", APTEST_SLAB, 100, 0, aptest_kmalloc_account, aptest_kfree,
	  .account = true },
	{ "pages_account", APTEST_PAGES, 0, 0, aptest_pages_account, aptest_free_pages },
	{ "pages_account_8", APTEST_PAGES, 0, 8, aptest_pages_account_8,
	  aptest_free_pages },
	{ "kmalloc_nofail", APTEST_SLAB, 100, 0, aptest_kmalloc_nofail, aptest_kfree },
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 18, 0)
	{ "kmalloc_nolock", APTEST_SLAB, 100, 0, aptest_kmalloc_nolock,
	  aptest_kfree_nolock },
	{ "pages_nolock", APTEST_PAGES, 0, 0, aptest_pages_nolock,
	  aptest_free_pages },
#endif
};

/* Memory handed over by other test modules, freed on command. */
struct aptest_adopted {
	void *p;
	enum aptest_adopt_kind kind;
	unsigned int order;
};

static struct aptest_adopted aptest_adopted[APTEST_MAX_LIVE];
static unsigned int aptest_nr_adopted;

int allocprof_test_adopt(void *p, enum aptest_adopt_kind kind, unsigned int order)
{
	int ret = 0;

	mutex_lock(&aptest_lock);
	if (aptest_nr_adopted == ARRAY_SIZE(aptest_adopted))
		ret = -ENOSPC;
	else
		aptest_adopted[aptest_nr_adopted++] =
			(struct aptest_adopted){ p, kind, order };
	mutex_unlock(&aptest_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(allocprof_test_adopt);

/* Called with aptest_lock held. */
static void aptest_free_adopted(void)
{
	while (aptest_nr_adopted) {
		struct aptest_adopted *a = &aptest_adopted[--aptest_nr_adopted];

		if (a->kind == APTEST_ADOPT_PAGES)
			__free_pages(a->p, a->order);
		else
			kfree(a->p);
	}
}

static struct aptest_site *aptest_find(const char *name)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(aptest_sites); i++)
		if (!strcmp(aptest_sites[i].name, name))
			return &aptest_sites[i];
	return NULL;
}

/* Frees the site's last @n live entries. */
static void aptest_free_last(struct aptest_site *site, unsigned int n)
{
	n = min(n, site->nr_live);
	if (site->free_batch) {
		site->nr_live -= n;
		if (n)
			site->free_batch(site, &site->live[site->nr_live], n);
		return;
	}
	while (n--)
		site->free(site, site->live[--site->nr_live]);
}

static void aptest_free_first(struct aptest_site *site, unsigned int n)
{
	unsigned int i;

	n = min(n, site->nr_live);
	if (!n)
		return;
	if (site->free_batch)
		site->free_batch(site, site->live, n);
	else
		for (i = 0; i < n; i++)
			site->free(site, site->live[i]);
	site->nr_live -= n;
	memmove(site->live, &site->live[n], site->nr_live * sizeof(site->live[0]));
}

static void aptest_free_all(struct aptest_site *site)
{
	aptest_free_last(site, site->nr_live);
}

/* One allocation at @site: 1 live entry, or APTEST_BATCH for a batch site. */
static int aptest_alloc_one(struct aptest_site *site)
{
	void *p;

	if (site->alloc_batch) {
		int err = site->alloc_batch(site, &site->live[site->nr_live]);

		if (!err)
			site->nr_live += APTEST_BATCH;
		return err;
	}
	p = site->alloc(site);
	if (!p)
		return -ENOMEM;
	site->live[site->nr_live++] = p;
	return 0;
}

static ssize_t aptest_write(struct file *file, const char __user *ubuf,
			    size_t len, loff_t *ppos, bool alloc)
{
	char buf[64], name[32], which[8];
	struct aptest_site *site;
	unsigned int count = 0;
	ssize_t ret = len;
	int n;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';

	n = sscanf(buf, "%31s %u %7s", name, &count, which);
	if (n < 1 || (alloc && n != 2) || (n == 3 && strcmp(which, "first")))
		return -EINVAL;
	site = aptest_find(name);
	if (!site)
		return -ENOENT;

	mutex_lock(&site->lock);
	if (!alloc) {
		if (n == 3)
			aptest_free_first(site, count);
		else
			aptest_free_last(site, n == 2 ? count : site->nr_live);
	} else if (count > (APTEST_MAX_LIVE - site->nr_live) /
			   (site->alloc_batch ? APTEST_BATCH : 1)) {
		ret = -ENOSPC;
	} else {
		while (count--) {
			int err = aptest_alloc_one(site);

			if (err) {
				ret = err;
				break;
			}
		}
	}
	mutex_unlock(&site->lock);
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

static ssize_t aptest_adopted_write(struct file *file, const char __user *ubuf,
				    size_t len, loff_t *ppos)
{
	char buf[8];

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (strcmp(strim(buf), "free"))
		return -EINVAL;
	mutex_lock(&aptest_lock);
	aptest_free_adopted();
	mutex_unlock(&aptest_lock);
	return len;
}

static int aptest_adopted_show(struct seq_file *m, void *v)
{
	mutex_lock(&aptest_lock);
	seq_printf(m, "%u\n", aptest_nr_adopted);
	mutex_unlock(&aptest_lock);
	return 0;
}

DEFINE_SHOW_STORE_ATTRIBUTE(aptest_adopted);

/*
 * Allocations without an allocation tag: the _noprof functions called
 * directly, as code that lacks an alloc_hooks() annotation does.  Nothing
 * around them sets current->alloc_tag (a debugfs write runs outside any
 * alloc_hooks()), so the profiler sees a NULL tag.
 */
#define APTEST_UNTAGGED_SIZE 700

static noinline int aptest_untagged_kmalloc(void)
{
	void *p = kmalloc_noprof(APTEST_UNTAGGED_SIZE, GFP_KERNEL);

	kfree(p);
	return p ? 0 : -ENOMEM;
}

static noinline int aptest_untagged_pages(void)
{
	struct page *page = alloc_pages_noprof(GFP_KERNEL, 1);

	if (page)
		__free_pages(page, 1);
	return page ? 0 : -ENOMEM;
}

static noinline int aptest_untagged_percpu(void)
{
	void __percpu *p = pcpu_alloc_noprof(APTEST_PERCPU_SIZE, APTEST_PERCPU_ALIGN,
					     false, GFP_KERNEL);

	free_percpu(p);
	return p ? 0 : -ENOMEM;
}

static ssize_t aptest_untagged_write(struct file *file, const char __user *ubuf,
				     size_t len, loff_t *ppos)
{
	char buf[32], kind[16];
	unsigned int count;
	int (*fn)(void);
	int err = 0;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%15s %u", kind, &count) != 2 || count > 100)
		return -EINVAL;
	if (!strcmp(kind, "kmalloc"))
		fn = aptest_untagged_kmalloc;
	else if (!strcmp(kind, "pages"))
		fn = aptest_untagged_pages;
	else if (!strcmp(kind, "percpu"))
		fn = aptest_untagged_percpu;
	else
		return -ENOENT;
	while (count-- && !err)
		err = fn();
	return err ? err : len;
}

static const struct file_operations aptest_untagged_fops = {
	.owner = THIS_MODULE,
	.write = aptest_untagged_write,
};

/*
 * A nested allocation in stages: aptest_nested_outer()'s alloc_hooks() sets
 * its tag, the run stops (APTEST_NESTED_OUTER); then aptest_nested_inner()'s
 * alloc_hooks() is passed and the run stops again (APTEST_NESTED_INNER);
 * then the pages are allocated (APTEST_NESTED_DONE).  Code that allocates
 * inside an allocation, such as vmalloc() needing a new slab for its page
 * array, has this shape.  A test switches vm.mem_profiling or reloads the
 * profiler between the stages:
 *   echo start > nested   runs the allocation (the writer blocks until it
 *                         is done, or a stage waited 60 s in vain)
 *   echo outer > nested   returns when the run stopped at its first stop
 *   echo inner > nested   lets the run past its first stop, returns when it
 *                         stopped at the second
 *   echo pages > nested   lets it allocate, returns when it did
 *   echo free > nested    frees the pages (also when the module unloads)
 *   cat nested            the bytes one run allocates (one call)
 */
#define APTEST_NESTED_ORDER 3
#define APTEST_NESTED_WAIT (60 * HZ)

enum aptest_nested_stage {
	APTEST_NESTED_IDLE, APTEST_NESTED_OUTER, APTEST_NESTED_GO_INNER,
	APTEST_NESTED_INNER, APTEST_NESTED_GO_PAGES, APTEST_NESTED_DONE,
};

static DECLARE_WAIT_QUEUE_HEAD(aptest_nested_wq);
static DEFINE_MUTEX(aptest_nested_lock);	/* starting, freeing: one run */
static int aptest_nested_stage;
static struct page *aptest_nested_page;

static void aptest_nested_set(int stage)
{
	WRITE_ONCE(aptest_nested_stage, stage);
	wake_up_all(&aptest_nested_wq);
}

/* Waits until the run reaches @stage; 0, or -ETIMEDOUT or -EINTR. */
static int aptest_nested_wait(int stage)
{
	long left = wait_event_killable_timeout(aptest_nested_wq,
						READ_ONCE(aptest_nested_stage) >= stage,
						APTEST_NESTED_WAIT);

	if (left < 0)
		return left;
	return left ? 0 : -ETIMEDOUT;
}

static noinline struct page *aptest_nested_pages_noprof(void)
{
	aptest_nested_set(APTEST_NESTED_INNER);
	if (aptest_nested_wait(APTEST_NESTED_GO_PAGES))
		return NULL;
	return alloc_pages_noprof(GFP_KERNEL, APTEST_NESTED_ORDER);
}

static noinline struct page *aptest_nested_inner(void)
{
	return alloc_hooks(aptest_nested_pages_noprof());
}

static noinline struct page *aptest_nested_outer_noprof(void)
{
	aptest_nested_set(APTEST_NESTED_OUTER);
	if (aptest_nested_wait(APTEST_NESTED_GO_INNER))
		return NULL;
	return aptest_nested_inner();
}

static noinline struct page *aptest_nested_outer(void)
{
	return alloc_hooks(aptest_nested_outer_noprof());
}

/* Lets the run go on from @from (it must be there) and waits for @to. */
static int aptest_nested_step(int from, int go, int to)
{
	int err = aptest_nested_wait(from);

	if (err)
		return err;
	if (READ_ONCE(aptest_nested_stage) != from)
		return -EINVAL;
	aptest_nested_set(go);
	return aptest_nested_wait(to);
}

static void aptest_nested_free(void)
{
	if (aptest_nested_page)
		__free_pages(aptest_nested_page, APTEST_NESTED_ORDER);
	aptest_nested_page = NULL;
}

/* Runs the nested allocation; the pages stay until "free". */
static int aptest_nested_start(void)
{
	int err = 0;

	mutex_lock(&aptest_nested_lock);
	if (aptest_nested_page || READ_ONCE(aptest_nested_stage) != APTEST_NESTED_IDLE) {
		err = -EBUSY;
	} else {
		aptest_nested_page = aptest_nested_outer();
		if (!aptest_nested_page)
			err = -ENOMEM;
		/* Also after a failed run, so that "free" ends it. */
		aptest_nested_set(APTEST_NESTED_DONE);
	}
	mutex_unlock(&aptest_nested_lock);
	return err;
}

/* Frees the pages of a finished run. */
static int aptest_nested_end(void)
{
	int stage, err = 0;

	mutex_lock(&aptest_nested_lock);
	stage = READ_ONCE(aptest_nested_stage);
	if (stage == APTEST_NESTED_DONE || stage == APTEST_NESTED_IDLE) {
		aptest_nested_free();
		aptest_nested_set(APTEST_NESTED_IDLE);
	} else {
		err = -EBUSY;
	}
	mutex_unlock(&aptest_nested_lock);
	return err;
}

static ssize_t aptest_nested_write(struct file *file, const char __user *ubuf,
				   size_t len, loff_t *ppos)
{
	char buf[8];
	int err;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	strim(buf);
	if (!strcmp(buf, "start"))
		err = aptest_nested_start();
	else if (!strcmp(buf, "outer"))
		err = aptest_nested_wait(APTEST_NESTED_OUTER);
	else if (!strcmp(buf, "inner"))
		err = aptest_nested_step(APTEST_NESTED_OUTER, APTEST_NESTED_GO_INNER,
					 APTEST_NESTED_INNER);
	else if (!strcmp(buf, "pages"))
		err = aptest_nested_step(APTEST_NESTED_INNER, APTEST_NESTED_GO_PAGES,
					 APTEST_NESTED_DONE);
	else if (!strcmp(buf, "free"))
		err = aptest_nested_end();
	else
		err = -EINVAL;
	return err ? err : len;
}

/* "<bytes>": what one run allocates. */
static int aptest_nested_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%lu\n", PAGE_SIZE << APTEST_NESTED_ORDER);
	return 0;
}

DEFINE_SHOW_STORE_ATTRIBUTE(aptest_nested);

/*
 * A partial free raced by the last put: aptest_partial_race() allocates an
 * order-2 page that is not compound and takes a second reference on its
 * first page; a timer drops that reference while __free_pages() drops the
 * allocation's.  The timer runs in the softirq that ends the timer
 * interrupt, at the same point of the task: freeing a page in hard irq is
 * an invalid wait context (PREEMPT_RT cannot take the page allocator's
 * spinlock_t there; lockdep's PROVE_RAW_LOCK_NESTING, on in debug-7.3,
 * reports it).  When the timer fires between __free_pages()'s
 * put_page_testzero() and its page_ref_sub, the first page is freed (4 KiB
 * and the call) before the three tail pages' bytes are taken off.  The
 * timer is armed to fire at once and __free_pages() starts after a delay,
 * shortened when the timer fired before it and lengthened when not, so
 * that the runs close in on the moment the timer fires.
 */
#define APTEST_RACE_STEP_NS	500
#define APTEST_RACE_MAX_NS	(10 * NSEC_PER_MSEC)
static struct page *aptest_race_page;
static struct hrtimer aptest_race_timer;
static atomic_t aptest_race_last;	/* the timer dropped the last reference */
static DEFINE_MUTEX(aptest_race_lock);

static enum hrtimer_restart aptest_race_fire(struct hrtimer *t)
{
	struct page *page = xchg(&aptest_race_page, NULL);

	if (page) {
		if (page_ref_count(page) == 1)
			atomic_inc(&aptest_race_last);
		put_page(page);
	}
	return HRTIMER_NORESTART;
}

static noinline struct page *aptest_partial_race(void)
{
	return alloc_pages(GFP_KERNEL, 2);
}

static int aptest_race_run(long n)
{
	unsigned long delay = 0;
	long i;

	for (i = 0; i < n; i++) {
		struct page *page = aptest_partial_race();

		if (!page)
			return -ENOMEM;
		get_page(page);
		WRITE_ONCE(aptest_race_page, page);
		hrtimer_start(&aptest_race_timer, 0, HRTIMER_MODE_REL_SOFT);
		udelay(delay / 1000);
		ndelay(delay % 1000);
		/* Fired already: start sooner next time; else later. */
		if (!READ_ONCE(aptest_race_page))
			delay -= min(delay, APTEST_RACE_STEP_NS + delay / 256);
		else if (delay < APTEST_RACE_MAX_NS)
			delay += APTEST_RACE_STEP_NS + delay / 64 + i % 7 * 70;
		__free_pages(page, 2);
		/* A busy softirq load defers the timer to ksoftirqd. */
		while (READ_ONCE(aptest_race_page))
			cond_resched();
		hrtimer_cancel(&aptest_race_timer);
		cond_resched();
	}
	pr_info("aptest race: delay %lu ns at the end\n", delay);
	return 0;
}

static ssize_t aptest_race_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	long n;
	int err = kstrtol_from_user(ubuf, len, 0, &n);

	if (err)
		return err;
	if (n < 0)
		return -EINVAL;
	mutex_lock(&aptest_race_lock);
	atomic_set(&aptest_race_last, 0);
	err = aptest_race_run(n);
	mutex_unlock(&aptest_race_lock);
	return err ? err : len;
}

/* How many runs of the last write the timer's put ended. */
static int aptest_race_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%d\n", atomic_read(&aptest_race_last));
	return 0;
}

DEFINE_SHOW_STORE_ATTRIBUTE(aptest_race);

/*
 * One tagged helper, two callers: what allocinfo shows as one call site,
 * and allocprof's stacks tell apart.
 */
#define APTEST_CALLERS_SIZE 256

static DEFINE_MUTEX(aptest_callers_lock);
static void *aptest_callers_live[2][APTEST_MAX_LIVE];
static unsigned int aptest_callers_nr[2];
/* Calls made by each caller: also keeps gcc from folding the two callers. */
static unsigned long aptest_callers_made[2];

static noinline void *aptest_helper(void)
{
	return kmalloc(APTEST_CALLERS_SIZE, GFP_KERNEL);
}

/* Not tail calls: each caller stays in the call chain. */
static noinline void *aptest_from_a(void)
{
	void *p = aptest_helper();

	aptest_callers_made[0]++;
	return p;
}

static noinline void *aptest_from_b(void)
{
	void *p = aptest_helper();

	aptest_callers_made[1]++;
	return p;
}

static void aptest_callers_free(void)
{
	int c;

	mutex_lock(&aptest_callers_lock);
	for (c = 0; c < 2; c++)
		while (aptest_callers_nr[c])
			kfree(aptest_callers_live[c][--aptest_callers_nr[c]]);
	mutex_unlock(&aptest_callers_lock);
}

static ssize_t aptest_callers_write(struct file *file, const char __user *ubuf,
				    size_t len, loff_t *ppos)
{
	char buf[32], which;
	unsigned int count, c;
	ssize_t ret = len;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sysfs_streq(buf, "free")) {
		aptest_callers_free();
		return len;
	}
	if (sscanf(buf, "%c %u", &which, &count) != 2 || (which != 'a' && which != 'b'))
		return -EINVAL;
	c = which - 'a';
	mutex_lock(&aptest_callers_lock);
	if (count > APTEST_MAX_LIVE - aptest_callers_nr[c])
		ret = -ENOSPC;
	while (ret > 0 && count--) {
		void *p = c ? aptest_from_b() : aptest_from_a();

		if (!p) {
			ret = -ENOMEM;
			break;
		}
		aptest_callers_live[c][aptest_callers_nr[c]++] = p;
	}
	mutex_unlock(&aptest_callers_lock);
	return ret;
}

static int aptest_callers_show(struct seq_file *m, void *v)
{
	size_t sz = kmalloc_size_roundup(APTEST_CALLERS_SIZE);

	mutex_lock(&aptest_callers_lock);
	seq_printf(m, "helper slab kmalloc-%zu %u\n", sz,
		   aptest_callers_nr[0] + aptest_callers_nr[1]);
	seq_printf(m, "from_a caller aptest_from_a %u\n", aptest_callers_nr[0]);
	seq_printf(m, "from_b caller aptest_from_b %u\n", aptest_callers_nr[1]);
	mutex_unlock(&aptest_callers_lock);
	return 0;
}

DEFINE_SHOW_STORE_ATTRIBUTE(aptest_callers);

/*
 * Many call chains to one call site, for the per-call-site control's
 * stacks (control_test): allocation i goes through APTEST_DEEP_LEVELS
 * calls of aptest_deep_0() or aptest_deep_1(), as the bits of i choose, so
 * each of 2^APTEST_DEEP_LEVELS allocations has a call chain of its own.
 *   echo <n> > deep    n allocations at aptest_deep_alloc(), numbers 0 to
 *                      n - 1 (n at most 2^APTEST_DEEP_LEVELS)
 *   echo all > deep    2^APTEST_DEEP_LEVELS of them
 *   echo free > deep   free them
 *   cat deep           as "sites": "deep_alloc slab <cache> <live>"
 */
#define APTEST_DEEP_LEVELS 8
#define APTEST_DEEP_MAX (1U << APTEST_DEEP_LEVELS)
#define APTEST_DEEP_SIZE 8

static DEFINE_MUTEX(aptest_deep_lock);
static void *aptest_deep_live[APTEST_DEEP_MAX];
static unsigned int aptest_deep_nr;
/* Calls through each function: also keeps gcc from making tail calls. */
static unsigned long aptest_deep_made[2];

static noinline void *aptest_deep_alloc(void)
{
	return kmalloc(APTEST_DEEP_SIZE, GFP_KERNEL);
}

static noinline void *aptest_deep_0(unsigned int bits, unsigned int level);
static noinline void *aptest_deep_1(unsigned int bits, unsigned int level);

static void *aptest_deep_next(unsigned int bits, unsigned int level)
{
	if (!level)
		return aptest_deep_alloc();
	return bits & 1 ? aptest_deep_1(bits >> 1, level - 1) :
			  aptest_deep_0(bits >> 1, level - 1);
}

static noinline void *aptest_deep_0(unsigned int bits, unsigned int level)
{
	void *p = aptest_deep_next(bits, level);

	aptest_deep_made[0]++;
	return p;
}

static noinline void *aptest_deep_1(unsigned int bits, unsigned int level)
{
	void *p = aptest_deep_next(bits, level);

	aptest_deep_made[1]++;
	return p;
}

static void aptest_deep_free(void)
{
	mutex_lock(&aptest_deep_lock);
	while (aptest_deep_nr)
		kfree(aptest_deep_live[--aptest_deep_nr]);
	mutex_unlock(&aptest_deep_lock);
}

/*
 * A write to a file that allocates on command: "free", or a count (or
 * "all", if all is not 0, for all).  1 for "free", 0 and *n for a count,
 * or -EINVAL, -EFAULT.
 */
static int aptest_parse_count(const char __user *ubuf, size_t len, unsigned int all,
			      unsigned int *n)
{
	char buf[16];

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sysfs_streq(buf, "free"))
		return 1;
	if (all && sysfs_streq(buf, "all")) {
		*n = all;
		return 0;
	}
	return kstrtouint(strim(buf), 10, n) ? -EINVAL : 0;
}

static ssize_t aptest_deep_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	unsigned int n;
	ssize_t ret = len;
	int cmd = aptest_parse_count(ubuf, len, APTEST_DEEP_MAX, &n);

	if (cmd < 0)
		return cmd;
	if (cmd) {
		aptest_deep_free();
		return len;
	}
	if (n > APTEST_DEEP_MAX)
		return -EINVAL;
	mutex_lock(&aptest_deep_lock);
	if (aptest_deep_nr) {
		ret = -EBUSY;
	} else {
		while (aptest_deep_nr < n) {
			void *p = aptest_deep_next(aptest_deep_nr, APTEST_DEEP_LEVELS);

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			aptest_deep_live[aptest_deep_nr++] = p;
		}
	}
	mutex_unlock(&aptest_deep_lock);
	return ret;
}

static int aptest_deep_show(struct seq_file *m, void *v)
{
	mutex_lock(&aptest_deep_lock);
	seq_printf(m, "deep_alloc slab kmalloc-%zu %u\n",
		   kmalloc_size_roundup(APTEST_DEEP_SIZE), aptest_deep_nr);
	mutex_unlock(&aptest_deep_lock);
	return 0;
}

DEFINE_SHOW_STORE_ATTRIBUTE(aptest_deep);

/*
 * Memory held at one call site, for a real OOM (oom_test): the test fills
 * most of the memory here, then a process of its own runs into the OOM
 * killer, whose report lists this call site.
 *   echo <n> > hold    n more pages at aptest_hold_alloc(); when memory runs
 *                      short it stops with ENOMEM, keeping the pages it got,
 *                      without retrying reclaim, a warning or the OOM killer
 *   echo free > hold   free them (also when the module unloads)
 *   cat hold           as "sites": "hold pages <bytes of a page> <live>"
 * Single pages, not larger blocks: after the programs before it the free
 * memory is fragmented, and a hold of 2 MiB blocks got 417 of 682 (make
 * check, debug, 2026-11-24), less than half of all memory.
 */
static DEFINE_MUTEX(aptest_hold_lock);
static LIST_HEAD(aptest_hold_list);
static unsigned int aptest_hold_nr;

static noinline struct page *aptest_hold_alloc(void)
{
	return alloc_page(GFP_KERNEL | __GFP_NORETRY | __GFP_NOWARN);
}

static void aptest_hold_free(void)
{
	struct page *page, *next;

	mutex_lock(&aptest_hold_lock);
	list_for_each_entry_safe(page, next, &aptest_hold_list, lru) {
		list_del(&page->lru);
		__free_page(page);
		cond_resched();
	}
	aptest_hold_nr = 0;
	mutex_unlock(&aptest_hold_lock);
}

static ssize_t aptest_hold_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	unsigned int n;
	ssize_t ret = len;
	int cmd = aptest_parse_count(ubuf, len, 0, &n);

	if (cmd < 0)
		return cmd;
	if (cmd) {
		aptest_hold_free();
		return len;
	}
	mutex_lock(&aptest_hold_lock);
	if (n > UINT_MAX - aptest_hold_nr)
		ret = -ENOSPC;
	while (ret > 0 && n--) {
		struct page *page = aptest_hold_alloc();

		if (!page) {
			ret = -ENOMEM;
			break;
		}
		list_add(&page->lru, &aptest_hold_list);
		aptest_hold_nr++;
		cond_resched();
	}
	mutex_unlock(&aptest_hold_lock);
	return ret;
}

/*
 * A kvmalloc() whose kmalloc try is asked (16 pages from the page
 * allocator) and that falls back to vmalloc when the try fails: which of
 * the two serves it is the allocator's choice, so it is no site of
 * aptest_sites[] (whose figures are exact), only fault_test's.
 */
static noinline void *aptest_kvmalloc_64k(void)
{
	return kvmalloc(PAGE_SIZE << 4, GFP_KERNEL);
}

/* Any write: one allocation at aptest_kvmalloc_64k(), freed at once. */
static ssize_t aptest_kvmalloc_write(struct file *file, const char __user *ubuf,
				     size_t len, loff_t *ppos)
{
	void *p = aptest_kvmalloc_64k();

	if (!p)
		return -ENOMEM;
	kvfree(p);
	return len;
}

static const struct file_operations aptest_kvmalloc_fops = {
	.write = aptest_kvmalloc_write,
};

static int aptest_hold_show(struct seq_file *m, void *v)
{
	mutex_lock(&aptest_hold_lock);
	seq_printf(m, "hold pages %lu %u\n", PAGE_SIZE, aptest_hold_nr);
	mutex_unlock(&aptest_hold_lock);
	return 0;
}

DEFINE_SHOW_STORE_ATTRIBUTE(aptest_hold);

#ifdef APTEST_FORGE
/*
 * Forged slots, for allocprof's debug mode (debug_test): the slot the
 * kernel keeps for the profiler with each slab object (before the slab's
 * object extension vector, mm/slab.h), written behind the profiler's back,
 * in a cache of its own that nothing else allocates from.
 *   echo overlive > forge  aptest_forge_live() allocates an object; with
 *                          preemption off, the slots of the free objects of
 *                          its slab get a copy of its slot (a reference the
 *                          loaded profiler wrote: as if their frees had not
 *                          been seen), aptest_forge_overlive() allocates one
 *                          of them (EAGAIN if its object came from another
 *                          slab: then try again), the forged slots are
 *                          cleared and both objects freed
 *   echo foreign > forge   aptest_forge_foreign() allocates an object, its
 *                          slot's id gets bit 15 set (APTEST_FORGE_FOREIGN:
 *                          an id no call site has while fewer than 32,768
 *                          are handed out, and below the watch ids), and
 *                          aptest_forge_foreign_free() frees it
 *   cat forge              "overlive <id> foreign <value>": the call-site
 *                          id of the copied slot, the slot value the
 *                          foreign object was freed with (0x...)
 * ENODATA: the object got no slot value (nothing profiles it).
 */
#define APTEST_FORGE_CACHE "allocprof_test_forge"
#define APTEST_FORGE_SIZE 64
#define APTEST_FORGE_FOREIGN 0x8000

static struct kmem_cache *aptest_forge_cache;
static DEFINE_MUTEX(aptest_forge_lock);
static unsigned long aptest_forge_id, aptest_forge_value;

/* The profiler's slot of slab object @obj, or NULL if it has none. */
static u16 *aptest_slot(void *obj)
{
	struct slab *slab = virt_to_slab(obj);
	struct slabobj_ext *ext = slab ? slab_obj_vec(slab) : NULL;

	if (!ext)
		return NULL;
	return &slab_obj_slot(ext, obj_to_index(aptest_forge_cache, slab, obj))->id;
}

static noinline void *aptest_forge_live(void)
{
	return kmem_cache_alloc(aptest_forge_cache, GFP_ATOMIC);
}

static noinline void *aptest_forge_overlive(void)
{
	return kmem_cache_alloc(aptest_forge_cache, GFP_ATOMIC);
}

static noinline void *aptest_forge_foreign(void)
{
	return kmem_cache_alloc(aptest_forge_cache, GFP_KERNEL);
}

/* Frees made: also keeps gcc from making the free below a tail call. */
static unsigned long aptest_forge_frees;

/* Its own function: the foreign free's call chain names it. */
static noinline void aptest_forge_foreign_free(void *p)
{
	kmem_cache_free(aptest_forge_cache, p);
	aptest_forge_frees++;
}

static int aptest_forge_overlive_run(void)
{
	void *live, *over = NULL;
	struct slabobj_ext *ext;
	struct slab *slab;
	u16 *slot, *other, v;
	unsigned int i;
	int err = -EAGAIN;

	preempt_disable();
	live = aptest_forge_live();
	slot = live ? aptest_slot(live) : NULL;
	v = slot ? READ_ONCE(*slot) : 0;
	if (!v) {
		err = live ? -ENODATA : -ENOMEM;
		goto out;
	}
	slab = virt_to_slab(live);
	ext = slab_obj_vec(slab);
	for (i = 0; i < slab->objects; i++) {
		other = &slab_obj_slot(ext, i)->id;
		if (!READ_ONCE(*other))
			WRITE_ONCE(*other, v);
	}
	over = aptest_forge_overlive();
	if (over && virt_to_slab(over) == slab)
		err = 0;
	for (i = 0; i < slab->objects; i++) {
		other = &slab_obj_slot(ext, i)->id;
		if (other != slot && READ_ONCE(*other) == v)
			WRITE_ONCE(*other, 0);
	}
	aptest_forge_id = v;
out:
	preempt_enable();
	if (over)
		kmem_cache_free(aptest_forge_cache, over);
	if (live)
		kmem_cache_free(aptest_forge_cache, live);
	return err;
}

static int aptest_forge_foreign_run(void)
{
	void *p = aptest_forge_foreign();
	u16 *slot = p ? aptest_slot(p) : NULL;
	u16 v = slot ? READ_ONCE(*slot) : 0;

	if (!p)
		return -ENOMEM;
	if (v) {
		v |= APTEST_FORGE_FOREIGN;
		WRITE_ONCE(*slot, v);
		aptest_forge_value = v;
	}
	aptest_forge_foreign_free(p);
	return v ? 0 : -ENODATA;
}

static ssize_t aptest_forge_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	char buf[16];
	int err;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	mutex_lock(&aptest_forge_lock);
	if (sysfs_streq(buf, "overlive"))
		err = aptest_forge_overlive_run();
	else if (sysfs_streq(buf, "foreign"))
		err = aptest_forge_foreign_run();
	else
		err = -EINVAL;
	mutex_unlock(&aptest_forge_lock);
	return err ? err : len;
}

static int aptest_forge_show(struct seq_file *m, void *v)
{
	mutex_lock(&aptest_forge_lock);
	seq_printf(m, "overlive %lu foreign %#lx\n", aptest_forge_id, aptest_forge_value);
	mutex_unlock(&aptest_forge_lock);
	return 0;
}

DEFINE_SHOW_STORE_ATTRIBUTE(aptest_forge);
#endif /* APTEST_FORGE */

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
 * One line a site: "<name> <kind> <detail> <live>", the figures of one live
 * entry and how many there are.  For kmalloc sites the detail is the
 * kmalloc cache serving the size (kmalloc-cg-* with __GFP_ACCOUNT; the test
 * reads its slab_size from /sys/kernel/slab); for the own cache its name;
 * for page sites the bytes of an entry; for vmalloc sites the bytes of pages
 * mapped (the test adds the page-pointer array vmalloc allocates for them,
 * as mm/vmalloc.c does); for percpu sites "<size>+<extra>": the size
 * asked, which upstream accounts once per possible CPU, and the memcg
 * bytes pcpu_obj_full_size() (mm/percpu-internal.h) adds.
 */
static int aptest_sites_show(struct seq_file *m, void *v)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(aptest_sites); i++) {
		struct aptest_site *site = &aptest_sites[i];

		mutex_lock(&site->lock);
		switch (site->kind) {
		case APTEST_SLAB: {
			size_t sz = kmalloc_size_roundup(site->size);

			const char *type = site->account ? "cg-" : "";

			/* The names of kmalloc_info[] in mm/slab_common.c. */
			if (sz >= 1024)
				seq_printf(m, "%s slab kmalloc-%s%zuk", site->name,
					   type, sz / 1024);
			else
				seq_printf(m, "%s slab kmalloc-%s%zu", site->name,
					   type, sz);
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
		case APTEST_VMALLOC:
			seq_printf(m, "%s vmalloc %lu", site->name,
				   PAGE_ALIGN(site->size));
			break;
		case APTEST_PERCPU: {
			size_t size = ALIGN(site->size, PCPU_MIN_ALLOC_SIZE), extra = 0;

			/*
			 * As pcpu_obj_full_size(), assuming kmem accounting
			 * is on (mem_cgroup_kmem_disabled() is not exported).
			 */
			if (IS_ENABLED(CONFIG_MEMCG))
				extra = size / PCPU_MIN_ALLOC_SIZE * sizeof(void *);
			seq_printf(m, "%s percpu %zu+%zu", site->name, size, extra);
			break;
		}
		}
		seq_printf(m, " %u\n", site->nr_live);
		mutex_unlock(&site->lock);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(aptest_sites);

static int __init aptest_init(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(aptest_sites); i++)
		mutex_init(&aptest_sites[i].lock);
	aptest_cache = kmem_cache_create(APTEST_CACHE_NAME, APTEST_OBJ_SIZE,
					 0, SLAB_NO_MERGE, NULL);
	if (!aptest_cache)
		return -ENOMEM;
#ifdef APTEST_FORGE
	aptest_forge_cache = kmem_cache_create(APTEST_FORGE_CACHE, APTEST_FORGE_SIZE,
					       0, SLAB_NO_MERGE, NULL);
	if (!aptest_forge_cache) {
		kmem_cache_destroy(aptest_cache);
		return -ENOMEM;
	}
#endif

	aptest_dir = debugfs_create_dir("allocprof_test", NULL);
	debugfs_create_file("alloc", 0200, aptest_dir, NULL, &aptest_alloc_fops);
	debugfs_create_file("free", 0200, aptest_dir, NULL, &aptest_free_fops);
	debugfs_create_file("sites", 0400, aptest_dir, NULL, &aptest_sites_fops);
	debugfs_create_file("adopted", 0600, aptest_dir, NULL, &aptest_adopted_fops);
	debugfs_create_file("untagged", 0200, aptest_dir, NULL, &aptest_untagged_fops);
	debugfs_create_file("warn", 0200, aptest_dir, NULL, &aptest_warn_fops);
	debugfs_create_file("nested", 0600, aptest_dir, NULL, &aptest_nested_fops);
	debugfs_create_file("callers", 0600, aptest_dir, NULL, &aptest_callers_fops);
	debugfs_create_file("deep", 0600, aptest_dir, NULL, &aptest_deep_fops);
	debugfs_create_file("hold", 0600, aptest_dir, NULL, &aptest_hold_fops);
	debugfs_create_file("kvmalloc", 0200, aptest_dir, NULL, &aptest_kvmalloc_fops);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(&aptest_race_timer, aptest_race_fire, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
#else
	hrtimer_init(&aptest_race_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	aptest_race_timer.function = aptest_race_fire;
#endif
	debugfs_create_file("partial_race", 0600, aptest_dir, NULL, &aptest_race_fops);
#ifdef APTEST_FORGE
	debugfs_create_file("forge", 0600, aptest_dir, NULL, &aptest_forge_fops);
#endif
	return 0;
}

static void __exit aptest_exit(void)
{
	int i;

	debugfs_remove_recursive(aptest_dir);
	hrtimer_cancel(&aptest_race_timer);
	for (i = 0; i < ARRAY_SIZE(aptest_sites); i++)
		aptest_free_all(&aptest_sites[i]);
	aptest_free_adopted();
	aptest_nested_free();
	aptest_callers_free();
	aptest_deep_free();
	aptest_hold_free();
	kmem_cache_destroy(aptest_cache);
#ifdef APTEST_FORGE
	kmem_cache_destroy(aptest_forge_cache);
#endif
}

module_init(aptest_init);
module_exit(aptest_exit);
MODULE_DESCRIPTION("Known allocation call sites for the allocprof selftests");
MODULE_LICENSE("GPL");
