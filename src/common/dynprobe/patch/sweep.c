/*
 * The one pass over an object's code: every function decoded linearly from
 * its start (instruction starts, return sites, direct branch targets, the
 * return points after calls), then the indirect jmps handed to the
 * jump-table resolver once every function is known (it needs to know which
 * calls never return), then the object-wide target set: keys sorted by a
 * radix sort and merged, for binary search.
 *
 * Bounds: every function range is within its section (dp_elf_funcs checks
 * it), code bytes come from dp_elf_code, and the bytes decoded in all are
 * capped by a multiple of the object's code size, so nested or overlapping
 * ranges in a hostile symbol table cannot make the work or the memory grow
 * without limit; the resolver's walks share a budget of steps of the same
 * order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/analysis-internal.h"
#include "sorted.h"

/* Nested ranges decode the same bytes twice; real objects stay far below. */
#define AN_DECODE_FACTOR 4
#define AN_DECODE_SLACK (UINT64_C(1) << 20)

/* Growable arrays used while analyzing. */
struct u32_vec {
	uint32_t *v;
	size_t n, cap;
};

struct ret_vec {
	struct dp_ret_site *v;
	size_t n, cap;
};

struct edge_vec {
	struct an_edge *v;
	size_t n, cap;
};

/* An indirect jmp waiting for the jump-table resolver. */
struct ind_jmp {
	size_t fn;		/* function index */
	uint32_t insn;		/* instruction index in the function */
	size_t ret;		/* its return site, in the rets pool */
};

struct ind_vec {
	struct ind_jmp *v;
	size_t n, cap;
};

struct sweep {
	struct u32_vec insns;		/* all functions' instruction offsets */
	struct ret_vec rets;		/* all functions' return sites */
	struct edge_vec edges;		/* all functions' local direct branches */
	struct ind_vec ind;		/* all indirect jmps */
	size_t *insn_first;		/* per function (and one past), into insns */
	size_t *ret_first;		/* ... into rets */
	size_t *edge_first;		/* ... into edges */
	uint64_t budget;		/* bytes still allowed to be decoded */
};

bool an_set_add(uint32_t *v, unsigned *n, unsigned cap, uint32_t i)
{
	for (unsigned k = 0; k < *n; k++)
		if (v[k] == i)
			return true;
	if (*n == cap)
		return false;
	v[(*n)++] = i;
	return true;
}

static int u32_push(struct u32_vec *vec, uint32_t x)
{
	if (DP_ARRAY_RESERVE(vec->v, vec->cap, vec->n, 64))
		return -ENOMEM;
	vec->v[vec->n++] = x;
	return 0;
}

static int ret_push(struct ret_vec *vec, uint64_t addr, unsigned kind, unsigned len)
{
	if (DP_ARRAY_RESERVE(vec->v, vec->cap, vec->n, 64))
		return -ENOMEM;
	vec->v[vec->n].addr = addr;
	vec->v[vec->n].kind = (uint8_t)kind;
	vec->v[vec->n].len = (uint8_t)len;
	vec->n++;
	return 0;
}

static int edge_push(struct edge_vec *vec, uint32_t target, uint32_t src)
{
	if (DP_ARRAY_RESERVE(vec->v, vec->cap, vec->n, 64))
		return -ENOMEM;
	vec->v[vec->n].target = target;
	vec->v[vec->n].src = src;
	vec->n++;
	return 0;
}

static int ind_push(struct ind_vec *vec, size_t fn, uint32_t insn, size_t ret)
{
	if (DP_ARRAY_RESERVE(vec->v, vec->cap, vec->n, 64))
		return -ENOMEM;
	vec->v[vec->n].fn = fn;
	vec->v[vec->n].insn = insn;
	vec->v[vec->n].ret = ret;
	vec->n++;
	return 0;
}

int an_keys_push(struct an_keys *k, uint64_t addr, unsigned kind)
{
	if (addr >= AN_ADDR_LIMIT)
		return 0;
	if (DP_ARRAY_RESERVE(k->v, k->cap, k->n, 64))
		return -ENOMEM;
	k->v[k->n++] = addr << AN_TGT_SHIFT | kind;
	return 0;
}

/* ---- decoding ---------------------------------------------------------- */

static int edge_cmp(const void *a, const void *b)
{
	const struct an_edge *x = a, *y = b;

	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->src < y->src ? -1 : x->src > y->src;
}

/* Return sites of the current function get this kind when a table resolves. */
#define RET_DROPPED 0xff

static unsigned ret_kind(const struct dp_insn *in)
{
	if (in->opcode == 0xc2)
		return DP_RET_RET_IMM;
	if (in->prefixes & DP_PFX_REP)
		return DP_RET_REP_RET;
	return DP_RET_RET;
}

static int ref_push(struct an_keys *refs, uint64_t addr)
{
	if (DP_ARRAY_RESERVE(refs->v, refs->cap, refs->n, 64))
		return -ENOMEM;
	refs->v[refs->n++] = addr;
	return 0;
}

/*
 * The values of an instruction's immediate and displacement, as code
 * addresses a position-dependent executable may name: both as encoded
 * (sign-extended) and zero-extended from 32 bits, since mov r32, imm32
 * zero-extends.  A relative target is no value.
 */
static int absolute_code_refs(struct dp_object *obj, const struct dp_insn *in)
{
	int err = 0;

	if (in->imm_size >= 4 && !(in->attr & DP_ATTR_REL)) {
		err = an_code_ref_push(obj, (uint64_t)in->imm);
		if (!err && in->imm_size == 4)
			err = an_code_ref_push(obj, (uint32_t)in->imm);
	}
	if (!err && in->disp_size >= 4 && !(in->attr & DP_ATTR_RIPREL)) {
		err = an_code_ref_push(obj, (uint64_t)in->disp);
		if (!err && in->disp_size == 4)
			err = an_code_ref_push(obj, (uint32_t)in->disp);
	}
	return err;
}

/* What one decoded instruction contributes; `i` is its index. */
static int insn_note(struct dp_object *obj, struct sweep *sw, size_t fi,
		     const struct dp_insn *in, uint32_t off, uint32_t i)
{
	const struct dp_function *fn = &obj->fns[fi];
	uint64_t addr = fn->start + off, next = addr + in->len;
	int err = 0;

	if (in->attr & DP_ATTR_REL) {
		uint64_t t = dp_insn_target(in, addr);
		bool inside = t - fn->start < fn->size;

		err = an_keys_push(&obj->keys, t, DP_TGT_DIRECT);
		if (!err)
			err = an_entered_push(obj, addr, t,
					      in->flow == DP_FLOW_JMP || in->flow == DP_FLOW_JCC ||
						      in->flow == DP_FLOW_LOOP);
		if (!err && inside && in->flow != DP_FLOW_CALL)
			err = edge_push(&sw->edges, (uint32_t)(t - fn->start), i);
		if (!err && !inside && in->flow == DP_FLOW_JMP)
			err = ret_push(&sw->rets, addr, DP_RET_TAIL_JMP, in->len);
		if (!err && !inside && in->flow == DP_FLOW_JCC)
			err = ret_push(&sw->rets, addr, DP_RET_TAIL_JCC, in->len);
	}
	if (err)
		return err;
	/* Data an instruction names: tables end where other data begins; and
	 * code it names is code whose address a pointer may hold. */
	if (in->attr & DP_ATTR_RIPREL)
		err = an_code_ref_push(obj, next + (uint64_t)in->disp);
	if (err)
		return err;
	/* Where code is not position-independent, an immediate or an absolute
	 * displacement may be a code address: mov $label, push $label. */
	if (dp_elf_type(obj->elf) != DP_ELF_DYN)
		err = absolute_code_refs(obj, in);
	if (err)
		return err;
	/* An absolute displacement names an address only where code is not
	 * position-independent; [rip + disp32] has no base either. */
	if ((in->attr & DP_ATTR_RIPREL) && in->flow == DP_FLOW_NONE)
		err = ref_push(&obj->refs, next + (uint64_t)in->disp);
	else if ((in->attr & DP_ATTR_MEM) && !(in->attr & (DP_ATTR_MOFFS | DP_ATTR_RIPREL)) &&
		 in->mod != 3 && in->base == DP_REG_NONE && in->disp > 0 &&
		 dp_elf_type(obj->elf) != DP_ELF_DYN)
		err = ref_push(&obj->refs, (uint64_t)in->disp);
	if (err)
		return err;
	switch (in->flow) {
	case DP_FLOW_CALL:
	case DP_FLOW_CALL_IND:
		return an_keys_push(&obj->keys, next, DP_TGT_RETURN);
	case DP_FLOW_RET:
		return ret_push(&sw->rets, addr, ret_kind(in), in->len);
	case DP_FLOW_JMP_IND:
		/* Leaving, until a jump table explains it. */
		err = ind_push(&sw->ind, fi, i, sw->rets.n);
		if (!err)
			err = ret_push(&sw->rets, addr, DP_RET_TAIL_INDIRECT, in->len);
		return err;
	default:
		return 0;
	}
}

static int function_decode(struct dp_object *obj, struct sweep *sw, size_t fi)
{
	struct dp_function *fn = &obj->fns[fi];
	size_t first = sw->insns.n;
	const uint8_t *code;
	uint64_t off = 0;
	int err;

	sw->insn_first[fi] = first;
	sw->ret_first[fi] = sw->rets.n;
	sw->edge_first[fi] = sw->edges.n;
	if (fn->size > UINT32_MAX || fn->size > sw->budget) {
		/* Only a hostile symbol table gets here: leave it undecoded. */
		fn->flags |= DP_FN_UNDECODED;
		return 0;
	}
	code = dp_elf_code(obj->elf, fn->start, fn->size);
	if (!code) {
		fn->flags |= DP_FN_UNDECODED;
		return 0;
	}
	sw->budget -= fn->size;

	/*
	 * Compilers put no data inside functions on x86-64 and pad after the
	 * last instruction with nops or int3, which decode: an instruction that
	 * does not decode is hand-written data or a wrong range, and nothing
	 * after it can be trusted to be an instruction boundary.
	 */
	while (off < fn->size) {
		struct dp_insn in;

		if (dp_insn_decode(code + off, fn->size - off, &in)) {
			fn->flags |= DP_FN_UNDECODED;
			break;
		}
		err = u32_push(&sw->insns, (uint32_t)off);
		if (!err)
			err = insn_note(obj, sw, fi, &in, (uint32_t)off,
					(uint32_t)(sw->insns.n - 1 - first));
		if (err)
			return err;
		off += in.len;
	}
	return 0;
}

/*
 * A function never returns when it decoded completely and has no return
 * site: it ends in calls that do not return (abort, __assert_fail) or in
 * an endless loop.
 */
static int noreturn_mark(struct dp_object *obj, const struct sweep *sw)
{
	obj->fn_noreturn = calloc(obj->nfns + 1, 1);
	if (!obj->fn_noreturn)
		return -ENOMEM;
	for (size_t i = 0; i < obj->nfns; i++)
		obj->fn_noreturn[i] = !(obj->fns[i].flags & DP_FN_UNDECODED) &&
				      sw->insn_first[i + 1] > sw->insn_first[i] &&
				      sw->ret_first[i + 1] == sw->ret_first[i];
	return 0;
}

/* Resolves the indirect jmps of every function, once all are decoded. */
static int indirect_resolve(struct dp_object *obj, struct sweep *sw)
{
	struct an_func_ctx ctx = { .obj = obj };
	const uint32_t *pool = obj->insn_pool;
	size_t cur = SIZE_MAX;
	int err = 0;

	if (!sw->ind.n)
		return 0;
	ctx.walk = calloc(1, sizeof(*ctx.walk));
	if (!ctx.walk)
		return -ENOMEM;
	/* Hostile code full of indirect jmps gets linear time, not more. */
	ctx.walk->budget = sw->insns.n * AN_WALK_PER_INSN + AN_WALK_SLACK;
	for (size_t k = 0; k < sw->ind.n; k++) {
		const struct ind_jmp *j = &sw->ind.v[k];
		struct dp_function *fn = &obj->fns[j->fn];
		int r;

		if (j->fn != cur) {
			size_t e0 = sw->edge_first[j->fn], e1 = sw->edge_first[j->fn + 1];

			cur = j->fn;
			ctx.start = fn->start;
			ctx.size = fn->size;
			ctx.code = dp_elf_code(obj->elf, fn->start, fn->size);
			ctx.off = pool + sw->insn_first[cur];
			ctx.n = (uint32_t)(sw->insn_first[cur + 1] - sw->insn_first[cur]);
			ctx.edges = sw->edges.v + e0;
			ctx.nedges = e1 - e0;
			if (ctx.nedges > 1)
				qsort(sw->edges.v + e0, ctx.nedges, sizeof(*sw->edges.v), edge_cmp);
		}
		r = ctx.code ? an_jump_table_resolve(&ctx, j->insn) : 0;
		if (r < 0) {
			err = r;
			break;
		}
		if (r > 0) {
			fn->flags |= DP_FN_JUMP_TABLE;
			/* Still a way out when some destination is elsewhere. */
			sw->rets.v[j->ret].kind = r == 1 ? RET_DROPPED : DP_RET_TAIL_TABLE;
		}
		/* Otherwise a DP_RET_TAIL_INDIRECT site: tailcall.c decides,
		 * once every target is known, what it makes of the function. */
	}
	free(ctx.walk);
	return err;
}

uint64_t an_ref_after(const struct dp_object *obj, uint64_t addr)
{
	size_t lo = DP_BOUND_KEYS(obj->refs.v, obj->refs.n, addr, DP_BOUND_UPPER);

	return lo < obj->refs.n ? obj->refs.v[lo] : UINT64_MAX;
}

/* Drops the return sites a jump table explained, keeping each function's slice. */
static void rets_compact(struct dp_object *obj, struct sweep *sw)
{
	size_t w = 0;

	for (size_t i = 0; i < obj->nfns; i++) {
		size_t r0 = sw->ret_first[i], r1 = sw->ret_first[i + 1];

		sw->ret_first[i] = w;
		for (size_t r = r0; r < r1; r++)
			if (sw->rets.v[r].kind != RET_DROPPED)
				sw->rets.v[w++] = sw->rets.v[r];
	}
	sw->ret_first[obj->nfns] = w;
	sw->rets.n = w;
}

static uint64_t code_bytes(const struct dp_object *obj)
{
	uint64_t total = 0;

	for (size_t i = 0; i < obj->nscns; i++)
		if (obj->scns[i].exec)
			total += obj->scns[i].size;
	return total;
}

int an_functions_decode(struct dp_object *obj)
{
	struct sweep sw = { 0 };
	size_t nf = obj->nfns;
	int err = 0;

	sw.budget = code_bytes(obj) * AN_DECODE_FACTOR + AN_DECODE_SLACK;
	sw.insn_first = malloc((nf + 1) * sizeof(*sw.insn_first));
	sw.ret_first = malloc((nf + 1) * sizeof(*sw.ret_first));
	sw.edge_first = malloc((nf + 1) * sizeof(*sw.edge_first));
	if (!sw.insn_first || !sw.ret_first || !sw.edge_first) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nf && !err; i++)
		err = function_decode(obj, &sw, i);
	if (err)
		goto out;
	sw.insn_first[nf] = sw.insns.n;
	sw.ret_first[nf] = sw.rets.n;
	sw.edge_first[nf] = sw.edges.n;

	/*
	 * The instruction pool stops moving now: the resolver may check that a
	 * table entry lands on an instruction of another function.
	 */
	obj->insn_pool = sw.insns.v;
	sw.insns.v = NULL;
	for (size_t i = 0; i < nf; i++) {
		obj->fns[i].ninsns = (uint32_t)(sw.insn_first[i + 1] - sw.insn_first[i]);
		obj->fns[i].insn_off = obj->insn_pool ? obj->insn_pool + sw.insn_first[i] : NULL;
	}
	err = noreturn_mark(obj, &sw);
	if (!err)
		err = an_keys_sort_unique(&obj->refs);
	if (!err)
		err = indirect_resolve(obj, &sw);
	free(obj->refs.v);
	memset(&obj->refs, 0, sizeof(obj->refs));
	if (err)
		goto out;
	rets_compact(obj, &sw);
	obj->ret_pool = sw.rets.v;
	sw.rets.v = NULL;
	for (size_t i = 0; i < nf; i++) {
		obj->fns[i].nrets = (uint32_t)(sw.ret_first[i + 1] - sw.ret_first[i]);
		obj->fns[i].rets = obj->ret_pool ? obj->ret_pool + sw.ret_first[i] : NULL;
	}
out:
	free(sw.insns.v);
	free(sw.rets.v);
	free(sw.edges.v);
	free(sw.ind.v);
	free(sw.insn_first);
	free(sw.ret_first);
	free(sw.edge_first);
	return err;
}

/* ---- the target set ---------------------------------------------------- */

/* LSD radix sort by bytes, skipping the bytes all keys share. */
int an_u64_sort(uint64_t *v, size_t n)
{
	uint64_t *tmp, *src = v, *dst;
	size_t count[256];

	if (n < 2)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	dst = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t pos = 0;
		bool uniform = false;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & 0xff]++;
		for (unsigned b = 0; b < 256; b++) {
			size_t c = count[b];

			if (c == n)
				uniform = true;
			count[b] = pos;
			pos += c;
		}
		if (uniform)
			continue;
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 0xff]++] = src[i];
		dst = src;
		src = src == v ? tmp : v;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	return 0;
}

int an_targets_build(struct dp_object *obj)
{
	struct an_keys *k = &obj->keys;
	size_t n = 0;
	int err;

	for (size_t i = 0; i < obj->nfns; i++) {
		err = an_keys_push(k, obj->fns[i].start, DP_TGT_FUNCTION);
		if (err)
			return err;
	}
	err = an_u64_sort(k->v, k->n);
	if (err)
		return err;
	obj->tgt_addr = malloc((k->n ? k->n : 1) * sizeof(*obj->tgt_addr));
	obj->tgt_kind = malloc(k->n ? k->n : 1);
	if (!obj->tgt_addr || !obj->tgt_kind)
		return -ENOMEM;
	for (size_t i = 0; i < k->n; i++) {
		uint64_t addr = k->v[i] >> AN_TGT_SHIFT;
		uint8_t kind = (uint8_t)k->v[i];

		if (n && obj->tgt_addr[n - 1] == addr) {
			obj->tgt_kind[n - 1] |= kind;
			continue;
		}
		obj->tgt_addr[n] = addr;
		obj->tgt_kind[n++] = kind;
	}
	obj->ntgt = n;
	free(k->v);
	memset(k, 0, sizeof(*k));
	return 0;
}

