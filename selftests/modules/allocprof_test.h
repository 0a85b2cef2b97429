/* SPDX-License-Identifier: GPL-2.0 */
/*
 * allocprof_test's interface for the other test modules: memory they
 * allocated at their own call sites is handed over ("adopted") and freed
 * later by allocprof_test, on command, after the allocating module may have
 * gone away.
 */
#ifndef ALLOCPROF_TEST_H
#define ALLOCPROF_TEST_H

enum aptest_adopt_kind {
	APTEST_ADOPT_KFREE,	/* kmalloc()ed: kfree() */
	APTEST_ADOPT_PAGES,	/* struct page * of alloc_pages(order) */
};

/*
 * Takes over @p; it is freed when "free" is written to
 * /sys/kernel/debug/allocprof_test/adopted, or when allocprof_test unloads.
 * Returns 0, or -ENOSPC (then the caller still owns @p).
 */
int allocprof_test_adopt(void *p, enum aptest_adopt_kind kind, unsigned int order);

#endif /* ALLOCPROF_TEST_H */
