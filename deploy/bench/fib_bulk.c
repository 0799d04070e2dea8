/*
 * LD_PRELOAD shim for dpdk-test-fib: its rte_fib_lookup_bulk() and
 * rte_fib6_lookup_bulk() calls (bulks of 64, fixed in the tool) go to DPDK
 * in bulks of at most FIB_BULK addresses (environment; unset or 0: as
 * called), so that deploy/bench/fib.sh can put rte_fib's time at the
 * worker's burst of 32 next to ours. A split costs one more call a bulk.
 * rte_lpm's bulk lookup is inline in the tool: this cannot split it.
 * Build: cc -O2 -shared -fPIC -o libfib_bulk.so fib_bulk.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

struct rte_fib;
struct rte_fib6;

static int bulk_of(int n)
{
	static int bulk = -1;

	if (bulk < 0) {
		const char *e = getenv("FIB_BULK");
		bulk = e ? atoi(e) : 0;
	}
	return bulk > 0 && bulk < n ? bulk : n;
}

/* The body of both wrappers: `real` over bulks of at most FIB_BULK. */
#define SPLIT(real, fib, ips, next_hops, n)                                   \
	do {                                                                  \
		int b_ = bulk_of(n), rc_ = 0, i_;                             \
		if ((real) == NULL)                                           \
			return -1;                                            \
		for (i_ = 0; i_ < (n) && rc_ == 0; i_ += b_)                  \
			rc_ = (real)((fib), (ips) + i_, (next_hops) + i_,     \
				     (n) - i_ < b_ ? (n) - i_ : b_);          \
		return rc_;                                                   \
	} while (0)

int rte_fib_lookup_bulk(struct rte_fib *fib, uint32_t *ips, uint64_t *next_hops, int n)
{
	static int (*real)(struct rte_fib *, uint32_t *, uint64_t *, int);

	if (real == NULL)
		real = (int (*)(struct rte_fib *, uint32_t *, uint64_t *, int))
			dlsym(RTLD_NEXT, "rte_fib_lookup_bulk");
	SPLIT(real, fib, ips, next_hops, n);
}

int rte_fib6_lookup_bulk(struct rte_fib6 *fib, uint8_t ips[][16], uint64_t *next_hops, int n)
{
	static int (*real)(struct rte_fib6 *, uint8_t (*)[16], uint64_t *, int);

	if (real == NULL)
		real = (int (*)(struct rte_fib6 *, uint8_t (*)[16], uint64_t *, int))
			dlsym(RTLD_NEXT, "rte_fib6_lookup_bulk");
	SPLIT(real, fib, ips, next_hops, n);
}
