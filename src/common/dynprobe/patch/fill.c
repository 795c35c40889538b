/*
 * Fill that nothing runs (see plan.h): where a window may end past a ret or
 * jmp, and where a hop's jmp rel32 may go, within a rel8's reach of its
 * site, in fill no other patch of the plan writes.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/plan-internal.h"
#include "sorted.h"

#define HOP_REACH_BACK 128	/* a rel8 reaches 128 bytes back from its end... */
#define HOP_REACH_FWD 127	/* ... and 127 on */
#define GAP_MAX 4096		/* fill between functions, at most */
#define GAP_RUN 64		/* fill inside a function, at most (64-byte alignment) */

int pl_decode_at(struct dp_object *obj, uint64_t va, struct dp_insn *insn, const uint8_t **bytes)
{
	struct dp_elf *elf = dp_object_elf(obj);
	const uint8_t *p = NULL;
	size_t avail;

	for (avail = DP_INSN_MAX_LEN; avail && !(p = dp_elf_code(elf, va, avail)); avail--)
		;
	if (!p)
		return -ENOENT;
	*bytes = p;
	return dp_insn_decode(p, avail, insn);
}

/* Alignment fill: nops and int3s. */
bool pl_is_fill(const struct dp_insn *insn, const uint8_t *bytes)
{
	return (insn->len == 1 && bytes[0] == 0xcc) ||
	       (insn->mnemonic && !strcmp(insn->mnemonic, "nop"));
}

/*
 * Whether [va, va + n) is fill that nothing runs, right after an instruction
 * of fn that leaves: no branch target, nops and int3s only (whole
 * instructions of fn inside it; outside, bytes of no function), or bytes
 * of no section that a segment of code loads (pl_gap_bytes).  Inside a
 * function whose indirect jmps may go anywhere, nothing is known to be
 * dead.  A window may end anywhere in such fill: the rest stays free, for
 * hops.
 */
const uint8_t *pl_gap_bytes(struct dp_object *obj, uint64_t va, unsigned n)
{
	struct dp_elf *elf = dp_object_elf(obj);
	Elf *e = dp_elf_handle(elf);
	size_t nph = 0, len = 0;
	const char *raw = elf_rawfile(e, &len);

	if (!raw || !n || va + n < va || elf_getphdrnum(e, &nph))
		return NULL;
	for (uint64_t b = va; b < va + n; b++)
		if (dp_elf_bytes(elf, b, 1))
			return NULL;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t off;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    va < ph.p_vaddr || va - ph.p_vaddr > ph.p_filesz ||
		    n > ph.p_filesz - (va - ph.p_vaddr))
			continue;
		off = ph.p_offset + (va - ph.p_vaddr);
		if (off <= len && n <= len - off)
			return (const uint8_t *)raw + off;
	}
	return NULL;
}

bool pl_dead_fill(struct dp_object *obj, const struct dp_function *fn, uint64_t va, unsigned n)
{
	uint64_t end = fn->start + fn->size;

	if (va < end && (fn->flags & (DP_FN_INDIRECT | DP_FN_UNDECODED)))
		return false;
	for (uint64_t b = va; b < va + n; b++)
		if (dp_object_target_kind(obj, b) || (b >= end && dp_object_function_at(obj, b)))
			return false;
	for (uint64_t x = va; x < va + n;) {
		struct dp_insn insn;
		const uint8_t *bytes;

		/* Past the last section of code: no instruction is there. */
		if (x >= end && pl_gap_bytes(obj, x, 1)) {
			x++;
			continue;
		}
		if (pl_decode_at(obj, x, &insn, &bytes) || !pl_is_fill(&insn, bytes) ||
		    (x < end && dp_function_insn_index(fn, x) < 0))
			return false;
		x += insn.len;
	}
	return true;
}

/* The index of the first range that ends after lo. */
static size_t ranges_find(const struct pl_ranges *r, uint64_t lo)
{
	return DP_BOUND(r->v, r->n, hi, lo, DP_BOUND_UPPER);
}

bool pl_ranges_overlap(const struct pl_ranges *r, uint64_t lo, uint64_t hi)
{
	size_t a = ranges_find(r, lo);

	return a < r->n && r->v[a].lo < hi;
}

int pl_ranges_add(struct pl_ranges *r, uint64_t lo, uint64_t hi)
{
	size_t a = ranges_find(r, lo), b = a;

	while (b < r->n && r->v[b].lo <= hi) {
		if (r->v[b].lo < lo)
			lo = r->v[b].lo;
		if (r->v[b].hi > hi)
			hi = r->v[b].hi;
		b++;
	}
	if (a == b) {
		if (r->n == r->cap) {
			size_t cap = r->cap ? 2 * r->cap : 64;
			struct pl_range *v = realloc(r->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			r->v = v;
			r->cap = cap;
		}
		memmove(r->v + a + 1, r->v + a, (r->n - a) * sizeof(*r->v));
		r->n++;
		b = a + 1;
	}
	r->v[a].lo = lo;
	r->v[a].hi = hi;
	memmove(r->v + a + 1, r->v + b, (r->n - b) * sizeof(*r->v));
	r->n -= b - a - 1;
	return 0;
}

void pl_taken_release(struct pl_taken *t)
{
	free(t->windows.v);
	free(t->hops.v);
}

static bool taken_overlap(const struct pl_taken *t, uint64_t lo, uint64_t hi)
{
	return pl_ranges_overlap(&t->windows, lo, hi) || pl_ranges_overlap(&t->hops, lo, hi);
}

bool pl_leaves(const struct dp_insn *insn)
{
	return insn->flow == DP_FLOW_RET || insn->flow == DP_FLOW_JMP ||
	       insn->flow == DP_FLOW_JMP_IND || insn->flow == DP_FLOW_UD;
}

static bool any_target(struct dp_object *obj, uint64_t lo, uint64_t hi)
{
	for (uint64_t b = lo; b < hi; b++)
		if (dp_object_target_kind(obj, b))
			return true;
	return false;
}

/*
 * The first byte in [lo, hi] of 5 in fill [r0, r1), right after an
 * instruction that leaves, that nothing of the plan takes.  A window ending
 * with that instruction may run on over the fill's first 4 bytes, in this
 * plan or in another: with `spare`, those are left alone, so that patches
 * planned apart are less likely to want the same bytes.
 */
static bool slot_in(const struct pl_taken *t, uint64_t r0, uint64_t r1, uint64_t lo, uint64_t hi,
		    bool spare, uint64_t *slot)
{
	if (spare)
		r0 += PL_JMP_LEN - 1;
	for (uint64_t s = r0 > lo ? r0 : lo; s + DP_HOP_LEN <= r1 && s <= hi; s++) {
		if (!taken_overlap(t, s, s + DP_HOP_LEN)) {
			*slot = s;
			return true;
		}
	}
	return false;
}

/*
 * Whether [g0, g1), bytes outside every function, is fill that nothing
 * runs: no branch target in it, only nops and int3s that end at g1, right
 * after a function whose last instruction that is not fill leaves (ret,
 * jmp, ud2) and is followed by no target: code cannot run into it.  A call
 * last may return into it (only the analysis knows which never return).
 */
bool pl_gap_dead(struct dp_object *obj, uint64_t g0, uint64_t g1)
{
	const struct dp_function *fn = dp_object_function_at(obj, g0 - 1);
	struct dp_insn insn;
	const uint8_t *bytes;

	if (!fn || (fn->flags & DP_FN_UNDECODED) || !fn->ninsns || fn->start + fn->size != g0)
		return false;
	for (uint64_t va = g0; va < g1; va += insn.len)
		if (pl_decode_at(obj, va, &insn, &bytes) || !pl_is_fill(&insn, bytes) ||
		    va + insn.len > g1)
			return false;
	if (any_target(obj, g0, g1))
		return false;
	for (uint32_t k = fn->ninsns; k-- > 0;) {
		uint64_t at = fn->start + fn->insn_off[k];

		if (pl_decode_at(obj, at, &insn, &bytes) ||
		    (k == fn->ninsns - 1 && at + insn.len != g0))
			return false;
		if (!pl_is_fill(&insn, bytes))
			return pl_leaves(&insn);
		/* Fill something branches to runs into the gap. */
		if (dp_object_target_kind(obj, at))
			return false;
	}
	return false;
}

/* A slot in the fill between functions around b, which no function holds. */
static bool gap_slot(struct dp_object *obj, uint64_t b, const struct pl_taken *t, uint64_t lo,
		     uint64_t hi, bool spare, uint64_t *slot, uint64_t *next)
{
	struct dp_elf *elf = dp_object_elf(obj);
	uint64_t g0 = b, g1 = b;

	while (b - g0 < GAP_MAX && g0 > 0 && dp_elf_code(elf, g0 - 1, 1) &&
	       !dp_object_function_at(obj, g0 - 1))
		g0--;
	while (g1 - b < GAP_MAX && dp_elf_code(elf, g1, 1) && !dp_object_function_at(obj, g1))
		g1++;
	*next = g1 + 1;
	return pl_gap_dead(obj, g0, g1) && slot_in(t, g0, g1, lo, hi, spare, slot);
}

/*
 * A slot in fill inside fn: a run of nops and int3s right after an
 * instruction that leaves (ret, jmp, ud2), up to the next branch target.
 * Nothing runs it unless something branches into it, and no target says
 * so; a function with indirect jmps that may go anywhere is no place.
 */
static bool fill_slot(struct dp_object *obj, const struct dp_function *fn, const struct pl_taken *t,
		      uint64_t lo, uint64_t hi, bool spare, uint64_t *slot)
{
	uint64_t from = lo > GAP_RUN ? lo - GAP_RUN : 0;
	uint32_t i = 0, n = fn->ninsns;

	if (fn->flags & (DP_FN_INDIRECT | DP_FN_UNDECODED))
		return false;
	/* The first instruction that may start a run of fill reaching lo. */
	if (from > fn->start)
		i = (uint32_t)DP_BOUND_KEYS(fn->insn_off, n, from - fn->start, DP_BOUND_LOWER);
	for (i = i ? i : 1; i < n && fn->start + fn->insn_off[i] <= hi; i++) {
		uint64_t r0 = fn->start + fn->insn_off[i], r1;
		struct dp_insn insn;
		const uint8_t *bytes;
		uint32_t j;

		if (pl_decode_at(obj, r0, &insn, &bytes) || !pl_is_fill(&insn, bytes) ||
		    dp_object_target_kind(obj, r0) ||
		    pl_decode_at(obj, fn->start + fn->insn_off[i - 1], &insn, &bytes) || !pl_leaves(&insn))
			continue;
		for (j = i; j < n; j++) {
			uint64_t at = fn->start + fn->insn_off[j];

			if (j > i && dp_object_target_kind(obj, at))
				break;
			if (pl_decode_at(obj, at, &insn, &bytes) || !pl_is_fill(&insn, bytes))
				break;
		}
		r1 = j < n ? fn->start + fn->insn_off[j] : fn->start + fn->size;
		if (!any_target(obj, r0, r1) && slot_in(t, r0, r1, lo, hi, spare, slot))
			return true;
		i = j;
	}
	return false;
}

/* hop_slot_find for a first byte in [lo, hi], sparing the bytes windows
 * may run on over or not. */
static bool hop_slot_scan(struct dp_object *obj, uint64_t lo, uint64_t hi, const struct pl_taken *t,
			  bool spare, uint64_t *slot)
{
	struct dp_elf *elf = dp_object_elf(obj);
	uint64_t b = lo;

	while (b <= hi) {
		const struct dp_function *fn = dp_object_function_at(obj, b);
		uint64_t next;

		if (fn) {
			if (fill_slot(obj, fn, t, lo, hi, spare, slot))
				return true;
			b = fn->start + fn->size > b ? fn->start + fn->size : b + 1;
		} else if (!dp_elf_code(elf, b, 1)) {
			b++;
		} else {
			if (gap_slot(obj, b, t, lo, hi, spare, slot, &next))
				return true;
			b = next;
		}
	}
	return false;
}

/*
 * Where a hop's jmp rel32 can go for a jmp rel8 that ends at `from`: the
 * first byte of 5 within the rel8's reach, in fill that nothing runs, that
 * nothing else of the plan takes; away from the bytes any window may run on
 * over when there is such a place.
 */
static bool hop_slot_find(struct dp_object *obj, uint64_t lo, uint64_t hi, const struct pl_taken *t,
			  uint64_t *slot)
{
	return hop_slot_scan(obj, lo, hi, t, true, slot) || hop_slot_scan(obj, lo, hi, t, false, slot);
}

int pl_hop_take_from(struct dp_object *obj, uint64_t from, struct pl_taken *t,
		     struct dp_hop *hop, bool *ok)
{
	return pl_hop_take_within(obj, from > HOP_REACH_BACK ? from - HOP_REACH_BACK : 0,
				  from + HOP_REACH_FWD, t, hop, ok);
}

int pl_hop_take_within(struct dp_object *obj, uint64_t lo, uint64_t hi, struct pl_taken *t,
		       struct dp_hop *hop, bool *ok)
{
	const uint8_t *bytes;
	uint64_t slot;
	int err;

	*ok = false;
	if (lo > hi || !hop_slot_find(obj, lo, hi, t, &slot))
		return 0;
	bytes = dp_elf_code(dp_object_elf(obj), slot, DP_HOP_LEN);
	if (!bytes)
		return 0;
	err = pl_ranges_add(&t->hops, slot, slot + DP_HOP_LEN);
	if (err)
		return err;
	hop->addr = slot;
	hop->len = DP_HOP_LEN;
	memcpy(hop->bytes, bytes, DP_HOP_LEN);
	*ok = true;
	return 0;
}

int pl_hop_take(struct dp_object *obj, struct dp_patch *p, struct pl_taken *t, bool *ok)
{
	return pl_hop_take_from(obj, p->win.addr + DP_HOP_SITE_LEN, t, &p->hop, ok);
}
