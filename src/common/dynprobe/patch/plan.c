/*
 * Site planning (see plan.h): windows for jumps, the int3 fallback, the
 * refusals, and the merging of many points into patches.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/plan.h"
#include "x86/reloc.h"

#define JMP_LEN 5

const char *dp_site_method_str(enum dp_site_method method)
{
	switch (method) {
	case DP_SITE_JUMP: return "jump";
	case DP_SITE_INT3: return "int3";
	default: return "refused";
	}
}

/* Decodes the instruction at va, with as many bytes as the section has. */
static int decode_at(struct dp_object *obj, uint64_t va, struct dp_insn *insn,
		     const uint8_t **bytes)
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

static bool is_endbr64(const struct dp_insn *insn, const uint8_t *bytes)
{
	return insn->len == 4 && bytes[0] == 0xf3 && bytes[1] == 0x0f && bytes[2] == 0x1e &&
	       bytes[3] == 0xfa;
}

static bool falls_through(const struct dp_insn *insn)
{
	return insn->flow != DP_FLOW_RET && insn->flow != DP_FLOW_JMP &&
	       insn->flow != DP_FLOW_JMP_IND;
}

/*
 * Whether [va, va + need) is padding that nothing runs: outside every
 * function, no branch target, and only nops and int3s.
 */
static bool is_padding(struct dp_object *obj, uint64_t va, unsigned need)
{
	uint64_t end = va + need;

	for (uint64_t b = va; b < end; b++) {
		if (dp_object_function_at(obj, b) || dp_object_target_kind(obj, b))
			return false;
	}
	while (va < end) {
		struct dp_insn insn;
		const uint8_t *bytes;

		if (decode_at(obj, va, &insn, &bytes))
			return false;
		if (!(insn.len == 1 && bytes[0] == 0xcc) &&
		    !(insn.mnemonic && !strcmp(insn.mnemonic, "nop")))
			return false;
		va += insn.len;
	}
	return true;
}

static void window_copy_bytes(struct dp_object *obj, struct dp_window *w)
{
	const uint8_t *p = dp_elf_code(dp_object_elf(obj), w->addr, w->len);

	if (p)
		memcpy(w->bytes, p, w->len);
}

/* Whether register `reg` holds, at instruction idx, a pointer loaded from
 * memory by an earlier instruction of the same block: mov reg, [mem]. */
static bool loaded_pointer(struct dp_object *obj, const struct dp_function *fn, long idx,
			   unsigned reg)
{
	for (long k = idx - 1; k >= 0 && idx - k <= DP_WINDOW_MAX_INSNS; k--) {
		uint64_t va = fn->start + fn->insn_off[k];
		const uint8_t *bytes;
		struct dp_insn in;

		if (decode_at(obj, va, &in, &bytes))
			return false;
		if (in.regs_written & (1u << reg))
			return in.enc == DP_ENC_LEGACY && in.map == DP_MAP_1BYTE &&
			       in.opcode == 0x8b && in.w && in.mod != 3 &&
			       in.index == DP_REG_NONE && !in.seg;
		/* Another path may reach what follows with another value. */
		if (in.flow != DP_FLOW_NONE || dp_object_target_kind(obj, va))
			return false;
	}
	return false;
}

/*
 * Whether a dynamic relocation stores an address in (lo, hi): a code
 * address kept in data (a label table, a saved continuation).
 */
static bool data_points_into(struct dp_object *obj, uint64_t lo, uint64_t hi)
{
	Elf *e = dp_elf_handle(dp_object_elf(obj));
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *data, *syms;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		syms = elf_getdata(elf_getscn(e, sh.sh_link), NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			uint64_t to;
			GElf_Rela r;
			GElf_Sym sym;

			if (!gelf_getrela(data, (int)i, &r))
				return true;
			if (GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE)
				to = r.r_addend;
			else if (GELF_R_TYPE(r.r_info) == R_X86_64_64 && syms &&
				 gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
				to = sym.st_value + r.r_addend;
			else
				continue;
			if (to > lo && to < hi)
				return true;
		}
	}
	return false;
}

/*
 * Whether a function the analysis marks DP_FN_INDIRECT (indirect jumps that
 * are no resolved jump table) is nonetheless safe to displace code in: when
 * every such jump is a tail call through a function pointer loaded from
 * memory (jmp [mem], or jmp reg right after mov reg, [mem]; memory with no
 * index register, as a table lookup would have), it lands on a function
 * start, never inside a window.  Computed gotos materialize the addresses
 * of their own labels: a function whose code (other than its start) is
 * referred to from its own instructions or from relocated data keeps the
 * flag.  Only in position-independent objects, where data holds no code
 * address without a relocation.
 */
static bool indirect_jumps_unsafe(struct dp_object *obj, const struct dp_function *fn)
{
	uint64_t end = fn->start + fn->size;

	if (!(fn->flags & DP_FN_INDIRECT))
		return false;
	if (dp_elf_type(dp_object_elf(obj)) != DP_ELF_DYN)
		return true;
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		uint64_t va = fn->start + fn->insn_off[i], ref;
		const uint8_t *bytes;
		struct dp_insn in;

		if (decode_at(obj, va, &in, &bytes))
			return true;
		if (in.attr & DP_ATTR_RIPREL) {
			ref = va + in.len + in.disp;
			if (ref > fn->start && ref < end)
				return true;
		}
	}
	for (uint32_t r = 0; r < fn->nrets; r++) {
		const struct dp_ret_site *rs = &fn->rets[r];
		long idx = dp_function_insn_index(fn, rs->addr);
		const uint8_t *bytes;
		struct dp_insn in;

		if (rs->kind != DP_RET_TAIL_INDIRECT)
			continue;
		if (idx < 0 || decode_at(obj, rs->addr, &in, &bytes))
			return true;
		if (in.mod != 3 ? in.index != DP_REG_NONE || in.seg || in.adsize != 8
				: !loaded_pointer(obj, fn, idx, in.rm))
			return true;
	}
	return data_points_into(obj, fn->start, end);
}

/*
 * Builds a jump window from the instruction at `start` that covers `must`
 * (an instruction start at or after it), and at least 5 bytes.  On failure,
 * *stop is the address of the obstacle: one after `must` means that a window
 * starting earlier, needing fewer bytes after `must`, could still fit.
 */
static enum dp_reason window_from(struct dp_object *obj, const struct dp_function *fn,
				  bool indirect, uint64_t start, uint64_t must,
				  struct dp_window *w, uint64_t *stop)
{
	uint64_t end = fn->start + fn->size, va = start;
	bool last_only = false;

	memset(w, 0, sizeof(*w));
	w->addr = start;
	while (w->len < JMP_LEN || va <= must) {
		struct dp_insn insn;
		const uint8_t *bytes;
		enum dp_reason r;

		*stop = va;
		if (va >= end) {
			unsigned need = JMP_LEN - w->len;

			if (w->ninsns && va > must && w->len < JMP_LEN &&
			    !falls_through(&w->insns[w->ninsns - 1]) && is_padding(obj, va, need)) {
				w->len = JMP_LEN;
				break;
			}
			return DP_REASON_SHORT;
		}
		if (w->ninsns) {
			if (dp_object_target_kind(obj, va))
				return DP_REASON_BRANCH_TARGET;
			if (indirect)
				return DP_REASON_INDIRECT_JUMPS;
			if (last_only)
				return DP_REASON_CALL_INSIDE;
		}
		if (dp_function_insn_index(fn, va) < 0 || decode_at(obj, va, &insn, &bytes))
			return DP_REASON_UNDECODED_AFTER;
		/* Branches may land inside an instruction too (past a lock
		 * prefix, say): no byte but the window's first may be a target. */
		for (uint64_t b = va + 1; b < va + insn.len; b++) {
			if (dp_object_target_kind(obj, b)) {
				*stop = b;
				return DP_REASON_BRANCH_TARGET;
			}
		}
		r = dp_reloc_check(&insn, &last_only);
		if (r != DP_REASON_NONE)
			return w->ninsns ? DP_REASON_NEIGHBOUR : r;
		if (w->ninsns == DP_WINDOW_MAX_INSNS || w->len + insn.len > DP_WINDOW_MAX_LEN)
			return DP_REASON_NEIGHBOUR;
		w->insns[w->ninsns] = insn;
		w->off[w->ninsns++] = w->len;
		w->len += insn.len;
		va += insn.len;
	}
	window_copy_bytes(obj, w);
	return DP_REASON_NONE;
}

/* A window that ends with the point's instruction or runs past it. */
static bool window_before(struct dp_object *obj, const struct dp_function *fn, bool indirect,
			  long idx, struct dp_window *w)
{
	uint64_t point = fn->start + fn->insn_off[idx], stop;

	if (dp_object_target_kind(obj, point) || indirect)
		return false;
	for (long k = idx - 1; k >= 0 && idx - k < DP_WINDOW_MAX_INSNS; k--) {
		uint64_t start = fn->start + fn->insn_off[k];
		enum dp_reason r = window_from(obj, fn, indirect, start, point, w, &stop);

		if (r == DP_REASON_NONE)
			return true;
		/* An obstacle up to the point stays inside when going further
		 * back; one after it (the next block's branch target after a
		 * ret, say) needs fewer bytes from an earlier start. */
		if (r != DP_REASON_SHORT && stop <= point)
			return false;
		if (k > 0 && dp_object_target_kind(obj, start))
			return false;
	}
	return false;
}

/* indirect_jumps_unsafe() of the last function planned, for runs of points. */
struct fn_memo {
	const struct dp_function *fn;
	bool indirect;
};

static int plan_site(struct dp_object *obj, uint64_t point, struct dp_patch *out,
		     struct fn_memo *memo)
{
	const struct dp_function *fn;
	struct dp_insn insn;
	const uint8_t *bytes;
	bool last_only;
	long idx;
	enum dp_reason r;
	uint64_t stop;
	bool indirect;

	memset(out, 0, sizeof(*out));
	out->method = DP_SITE_REFUSED;
	out->npoints = 1;
	out->points[0] = point;

	if (!dp_elf_code(dp_object_elf(obj), point, 1)) {
		out->reason = DP_REASON_NOT_CODE;
		return 0;
	}
	fn = dp_object_function_at(obj, point);
	if (!fn) {
		out->reason = DP_REASON_NO_FUNCTION;
		return 0;
	}
	out->fn = fn;
	idx = dp_function_insn_index(fn, point);
	if (idx < 0) {
		out->reason = DP_REASON_NOT_BOUNDARY;
		for (uint32_t i = 0; i < fn->ninsns; i++) {
			uint64_t b = fn->start + fn->insn_off[i];

			if (b < point)
				out->prev_boundary = b;
			else if (!out->next_boundary)
				out->next_boundary = b;
		}
		return 0;
	}
	if (decode_at(obj, point, &insn, &bytes)) {
		out->reason = DP_REASON_INSN_INVALID;
		return 0;
	}
	/* endbr64 stays where indirect branches expect it: probe after it. */
	if (is_endbr64(&insn, bytes) && (uint32_t)idx + 1 < fn->ninsns) {
		point += insn.len;
		idx++;
		out->points[0] = point;
		if (decode_at(obj, point, &insn, &bytes)) {
			out->reason = DP_REASON_INSN_INVALID;
			return 0;
		}
	}
	r = dp_reloc_check(&insn, &last_only);
	if (r != DP_REASON_NONE) {
		out->reason = r;
		return 0;
	}

	if (memo->fn != fn) {
		memo->fn = fn;
		memo->indirect = indirect_jumps_unsafe(obj, fn);
	}
	indirect = memo->indirect;
	out->reason = window_from(obj, fn, indirect, point, point, &out->win, &stop);
	if (out->reason == DP_REASON_NONE || window_before(obj, fn, indirect, idx, &out->win)) {
		out->method = DP_SITE_JUMP;
		out->reason = DP_REASON_NONE;
		return 0;
	}
	/* Starting earlier was not even tried: say why. */
	if (indirect && idx > 0)
		out->reason = DP_REASON_INDIRECT_JUMPS;
	/* int3 on the instruction itself. */
	memset(&out->win, 0, sizeof(out->win));
	out->method = DP_SITE_INT3;
	out->win.addr = point;
	out->win.len = insn.len;
	out->win.ninsns = 1;
	out->win.insns[0] = insn;
	memcpy(out->win.bytes, bytes, insn.len);
	return 0;
}

int dp_plan_site(struct dp_object *obj, uint64_t point, struct dp_patch *out)
{
	struct fn_memo memo = { 0 };

	return plan_site(obj, point, out, &memo);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_patch_addr(const void *a, const void *b)
{
	const struct dp_patch *x = a, *y = b;

	return cmp_u64(&x->win.addr, &y->win.addr);
}

/* The accepted jump patch whose window holds va as an instruction start. */
static struct dp_patch *window_holding(struct dp_patch *jumps, size_t n, uint64_t va)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (jumps[mid].win.addr <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	struct dp_patch *p = &jumps[lo - 1];

	for (unsigned i = 0; i < p->win.ninsns; i++)
		if (p->win.addr + p->win.off[i] == va)
			return p;
	return NULL;
}

static void add_point(struct dp_patch *p, uint64_t point, size_t id)
{
	/* In window order: the trampoline calls hooks as it reaches them. */
	unsigned i = p->npoints;

	while (i > 0 && p->points[i - 1] > point) {
		p->points[i] = p->points[i - 1];
		p->point_ids[i] = p->point_ids[i - 1];
		i--;
	}
	p->points[i] = point;
	p->point_ids[i] = id;
	p->npoints++;
}

int dp_plan_sites(struct dp_object *obj, const uint64_t *points, size_t n,
		  struct dp_patch **patches, size_t *npatches)
{
	struct dp_patch *single = calloc(n ? n : 1, sizeof(*single));
	struct dp_patch *jumps = calloc(n ? n : 1, sizeof(*jumps));
	struct dp_patch *outp = calloc(n ? n : 1, sizeof(*outp));
	size_t njumps = 0, nout = 0;
	uint64_t jump_end = 0;
	struct fn_memo memo = { 0 };
	int ret = 0;

	if (!single || !jumps || !outp) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		ret = plan_site(obj, points[i], &single[i], &memo);
		if (ret)
			goto out;
		single[i].point_ids[0] = i;
	}

	/* Jump windows, earliest first; one that overlaps an accepted one waits. */
	for (size_t i = 0; i < n; i++)
		if (single[i].method == DP_SITE_JUMP)
			jumps[njumps++] = single[i];
	qsort(jumps, njumps, sizeof(*jumps), cmp_patch_addr);
	{
		size_t kept = 0;

		for (size_t i = 0; i < njumps; i++) {
			if (kept && jumps[i].win.addr < jump_end) {
				/* Overlapping: the accepted window may grow over
				 * this point (a ret right after an entry window),
				 * which then becomes one of its hooks. */
				struct dp_patch *k = &jumps[kept - 1];
				uint64_t must = jumps[i].points[0], stop;
				uint64_t last = k->win.addr + k->win.off[k->win.ninsns - 1];
				struct dp_window w;

				if (must < last)
					must = last;
				if (k->fn == jumps[i].fn && k->fn &&
				    window_from(obj, k->fn, indirect_jumps_unsafe(obj, k->fn),
						k->win.addr, must, &w, &stop) == DP_REASON_NONE) {
					k->win = w;
					jump_end = w.addr + w.len;
				}
				continue;
			}
			jumps[i].npoints = 0;
			jumps[kept++] = jumps[i];
			jump_end = jumps[i].win.addr + jumps[i].win.len;
		}
		njumps = kept;
	}

	/* Every point goes to the jump window holding it, or stands alone. */
	for (size_t i = 0; i < n; i++) {
		struct dp_patch *s = &single[i];
		struct dp_patch *w = NULL;

		if (s->method != DP_SITE_REFUSED) {
			w = window_holding(jumps, njumps, s->points[0]);
			if (w && w->npoints < DP_PATCH_MAX_POINTS) {
				add_point(w, s->points[0], i);
				continue;
			}
		}
		if (w) {
			/* Its bytes are under a full window: nothing else fits. */
			s->method = DP_SITE_REFUSED;
			s->reason = DP_REASON_OVERLAP;
		} else if (s->method == DP_SITE_JUMP) {
			/* Its window lost to an overlapping one: int3 on the point. */
			uint64_t point = s->points[0];
			struct dp_insn insn;
			const uint8_t *bytes;

			memset(&s->win, 0, sizeof(s->win));
			if (decode_at(obj, point, &insn, &bytes)) {
				s->method = DP_SITE_REFUSED;
				s->reason = DP_REASON_INSN_INVALID;
			} else {
				s->method = DP_SITE_INT3;
				s->reason = DP_REASON_OVERLAP;
				s->win.addr = point;
				s->win.len = insn.len;
				s->win.ninsns = 1;
				s->win.insns[0] = insn;
				memcpy(s->win.bytes, bytes, insn.len);
			}
		}
		/* Two probes on one int3 share it. */
		if (s->method == DP_SITE_INT3) {
			struct dp_patch *same = NULL;

			for (size_t k = 0; k < nout && !same; k++)
				if (outp[k].method == DP_SITE_INT3 && outp[k].win.addr == s->win.addr &&
				    outp[k].npoints < DP_PATCH_MAX_POINTS)
					same = &outp[k];
			if (same) {
				add_point(same, s->points[0], i);
				continue;
			}
		}
		outp[nout++] = *s;
	}
	for (size_t i = 0; i < njumps; i++)
		outp[nout++] = jumps[i];
	qsort(outp, nout, sizeof(*outp), cmp_patch_addr);
	*patches = outp;
	*npatches = nout;
	outp = NULL;
out:
	free(single);
	free(jumps);
	free(outp);
	return ret;
}
