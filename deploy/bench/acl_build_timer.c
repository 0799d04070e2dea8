/*
 * LD_PRELOAD shim for dpdk-test-acl: times rte_acl_build(), which the tool
 * does not report. Used by fwd/src/bin/bench_acl.rs to put DPDK's build time
 * next to ours. Build: cc -O2 -shared -fPIC -o libacl_build_timer.so acl_build_timer.c -ldl
 * Output (stderr): "acl_build_timer: rte_acl_build <ns> ns rc <rc>"
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

struct rte_acl_ctx;
struct rte_acl_config;

int rte_acl_build(struct rte_acl_ctx *ctx, const struct rte_acl_config *cfg)
{
	static int (*real)(struct rte_acl_ctx *, const struct rte_acl_config *);
	struct timespec a, b;
	int rc;

	if (real == NULL)
		real = (int (*)(struct rte_acl_ctx *, const struct rte_acl_config *))
			dlsym(RTLD_NEXT, "rte_acl_build");
	if (real == NULL)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	rc = real(ctx, cfg);
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(stderr, "acl_build_timer: rte_acl_build %lld ns rc %d\n",
		(long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec), rc);
	return rc;
}
