/* Hand-written wrappers for what bindgen cannot reach: thread-local
 * variables and function-like macros. Everything `static inline` is wrapped
 * by bindgen's generated extern.c instead. Keep this file tiny. */
#include <stdint.h>

int fwd_rte_errno(void);
unsigned int fwd_rte_lcore_id(void);
