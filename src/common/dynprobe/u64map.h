/*
 * A map from nonzero 64-bit keys (addresses, ids) to 32-bit values (indexes
 * into an array the caller owns), for lookups that must stay O(1) when a
 * process holds tens of thousands of probes and patches.  Open addressing,
 * linear probing, a power-of-two table at most half full; key 0 marks an
 * empty slot.  There is no removal: a caller that removes elements from its
 * array clears the map and adds the rest again (dp_u64map_clear), which
 * costs what compacting the array costs.  Not thread-safe; header-only.
 */
#ifndef DP_U64MAP_H
#define DP_U64MAP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct dp_u64map {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap;		/* slots: 0 or a power of two */
	size_t n;		/* keys held */
};

static inline size_t dp_u64map_slot(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

static inline void dp_u64map_free(struct dp_u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* Forgets every key, keeping the table. */
static inline void dp_u64map_clear(struct dp_u64map *m)
{
	if (m->cap)
		memset(m->keys, 0, m->cap * sizeof(*m->keys));
	m->n = 0;
}

/* The value of key (nonzero), or false. */
static inline bool dp_u64map_get(const struct dp_u64map *m, uint64_t key, uint32_t *val)
{
	if (!m->cap || !key)
		return false;
	for (size_t i = dp_u64map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			*val = m->vals[i];
			return true;
		}
		if (!m->keys[i])
			return false;
	}
}

static inline void dp_u64map_put_slot(uint64_t *keys, uint32_t *vals, size_t cap, uint64_t key,
				      uint32_t val, bool *added)
{
	size_t i = dp_u64map_slot(key, cap);

	while (keys[i] && keys[i] != key)
		i = (i + 1) & (cap - 1);
	*added = !keys[i];
	keys[i] = key;
	vals[i] = val;
}

/* Sets key (nonzero) to val, replacing its value if present.  0, -EINVAL
 * (key 0) or -ENOMEM (the map is as it was). */
static inline int dp_u64map_put(struct dp_u64map *m, uint64_t key, uint32_t val)
{
	bool added;

	if (!key)
		return -EINVAL;
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		uint64_t *keys = calloc(cap, sizeof(*keys));
		uint32_t *vals = malloc(cap * sizeof(*vals));

		if (!keys || !vals) {
			free(keys);
			free(vals);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i])
				dp_u64map_put_slot(keys, vals, cap, m->keys[i], m->vals[i], &added);
		free(m->keys);
		free(m->vals);
		m->keys = keys;
		m->vals = vals;
		m->cap = cap;
	}
	dp_u64map_put_slot(m->keys, m->vals, m->cap, key, val, &added);
	m->n += added;
	return 0;
}

#endif /* DP_U64MAP_H */
