#include <rte_errno.h>
#include <rte_lcore.h>
#include "shim.h"

/* rte_errno is a per-lcore TLS variable behind a macro. */
int fwd_rte_errno(void) { return rte_errno; }

/* rte_lcore_id() reads the per-lcore TLS variable _lcore_id. */
unsigned int fwd_rte_lcore_id(void) { return rte_lcore_id(); }
