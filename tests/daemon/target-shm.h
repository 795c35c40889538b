/*
 * The counters a daemon test target shares with its test (a file both map):
 * per thread, the sequence number of the last call that completed, and the
 * wrong results seen.
 */
#ifndef DP_TESTS_TARGET_SHM_H
#define DP_TESTS_TARGET_SHM_H

#include <stdint.h>

#define DP_TARGET_MAX_THREADS 16

struct dp_target_shm {
	uint32_t nthreads;
	uint64_t done[DP_TARGET_MAX_THREADS];	/* seq of the last completed call */
	uint64_t errors;			/* results that were not the expected ones */
};

#endif /* DP_TESTS_TARGET_SHM_H */
