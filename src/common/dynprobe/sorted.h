/*
 * Binary search in arrays sorted by an unsigned key: the one loop every
 * sorted table of elf/ and patch/ (sections, functions, branch targets,
 * ranges, slots) is searched with.
 *
 *   DP_BOUND(v, n, field, key, DP_BOUND_LOWER)  first i with v[i].field >= key
 *   DP_BOUND(v, n, field, key, DP_BOUND_UPPER)  first i with v[i].field > key
 *   DP_BOUND_KEYS(v, n, key, how)               the same over v[i] itself
 *
 * n when there is none.  Keys are unsigned integers of 4 or 8 bytes;
 * "the last element at or below key" is the one before the UPPER bound.
 */
#ifndef DP_SORTED_H
#define DP_SORTED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum dp_bound {
	DP_BOUND_LOWER,		/* first key >= the one sought */
	DP_BOUND_UPPER,		/* first key > the one sought */
};

static inline uint64_t dp_sorted_key(const void *at, size_t width)
{
	uint32_t k32;
	uint64_t k64;

	if (width == sizeof(k32)) {
		memcpy(&k32, at, sizeof(k32));
		return k32;
	}
	memcpy(&k64, at, sizeof(k64));
	return k64;
}

static inline size_t dp_sorted_bound(const void *base, size_t n, size_t size, size_t off,
				     size_t width, uint64_t key, enum dp_bound how)
{
	const unsigned char *p = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k = dp_sorted_key(p + mid * size + off, width);

		if (k < key || (how == DP_BOUND_UPPER && k == key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#define DP_SORTED_WIDTH(x)							\
	(sizeof(char[sizeof(x) == 4 || sizeof(x) == 8 ? 1 : -1]) * sizeof(x))

#define DP_BOUND(v, n, field, key, how)						\
	dp_sorted_bound((v), (n), sizeof(*(v)), offsetof(__typeof__(*(v)), field),	\
			DP_SORTED_WIDTH((v)->field), (key), (how))

#define DP_BOUND_KEYS(v, n, key, how)						\
	dp_sorted_bound((v), (n), sizeof(*(v)), 0, DP_SORTED_WIDTH(*(v)), (key), (how))

#endif /* DP_SORTED_H */
