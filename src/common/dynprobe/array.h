/*
 * Growing arrays: the one rule every list of the library and the agent
 * grows by (capacity doubled, from a first size), with its overflow check.
 * Header-only, so that the agent's subset of the library has it too.
 */
#ifndef DP_ARRAY_H
#define DP_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Room for element n of the array at *arrayp (a pointer to the array
 * pointer, of any element type) holding *cap elements of elem bytes: when
 * n < *cap nothing changes, else the capacity doubles (or becomes `first`).
 * 0, or -ENOMEM with the array and *cap unchanged.
 */
static inline int dp_array_reserve(void *arrayp, size_t *cap, size_t n, size_t elem,
				   size_t first)
{
	size_t ncap;
	void *v, *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : first;
	if (ncap <= n)
		ncap = n + 1;
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	/* Through memcpy: the array pointer is not a void * object. */
	memcpy(&v, arrayp, sizeof(v));
	nv = realloc(v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	memcpy(arrayp, &nv, sizeof(nv));
	*cap = ncap;
	return 0;
}

/* dp_array_reserve of an array pointer `array` (an lvalue) and its size_t
 * capacity `cap`. */
#define DP_ARRAY_RESERVE(array, cap, n, first) \
	dp_array_reserve(&(array), &(cap), (n), sizeof(*(array)), (first))

#endif /* DP_ARRAY_H */
