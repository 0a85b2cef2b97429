// SPDX-License-Identifier: GPL-2.0
/*
 * allocprof_load_test: the Rust module loads with modprobe, shows in
 * /proc/modules, says so in the kernel log, and unloads again.
 */
#include "allocprof_lib.h"

int main(void)
{
	char buf[256];

	ksft_print_header();
	ksft_set_plan(4);

	if (ap_module_loaded("allocprof"))
		ap_sh("rmmod allocprof");

	ksft_test_result(ap_sh("modprobe allocprof") == 0, "modprobe allocprof\n");
	ksft_test_result(ap_module_loaded("allocprof"), "listed in /proc/modules\n");
	ksft_test_result(ap_read_file("/sys/module/allocprof/initstate", buf, sizeof(buf)) > 0 &&
			 !strcmp(buf, "live\n"), "initstate is live\n");
	ksft_test_result(ap_sh("rmmod allocprof") == 0 && !ap_module_loaded("allocprof"),
			 "rmmod allocprof\n");
	ksft_finished();
}
