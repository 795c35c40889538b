/*
 * Whether an object's code can touch the AVX-512-only state (analysis.h,
 * dp_object_evex_free): one pass over every executable byte, the functions'
 * instructions as the analysis decoded them, the bytes between functions
 * decoded linearly from where each gap starts.
 *
 * Registers zmm16-31 (and their xmm/ymm views) are named only by EVEX
 * instructions; the mask registers k0-7 only by EVEX instructions and the
 * VEX-encoded mask instructions (0F 41-4B, 0F 90-93, 0F 98-99, 0F3A 30-33).
 * The xsave family reads and writes every state component: counted too, so
 * that code saving or switching whole register states is never assumed not
 * to care.  Anything that does not decode makes the answer "not free".
 */
#include <errno.h>

#include "elf/elf.h"
#include "patch/analysis-internal.h"
#include "x86/insn.h"

/* Whether one decoded instruction names zmm16-31, k0-7 or the whole state. */
static bool insn_evex(const struct dp_insn *in)
{
	if (in->enc == DP_ENC_EVEX)
		return true;
	if (in->enc == DP_ENC_VEX) {
		if (in->map == DP_MAP_0F)
			return (in->opcode >= 0x41 && in->opcode <= 0x4b) ||
			       (in->opcode >= 0x90 && in->opcode <= 0x93) ||
			       in->opcode == 0x98 || in->opcode == 0x99;
		if (in->map == DP_MAP_0F3A)
			return in->opcode >= 0x30 && in->opcode <= 0x33;
		return false;
	}
	if (in->enc != DP_ENC_LEGACY || in->map != DP_MAP_0F || !in->has_modrm || in->mod == 3)
		return false;
	/* xsave, xrstor, xsaveopt (0F AE /4 /5 /6); xrstors, xsavec, xsaves
	 * (0F C7 /3 /4 /5). */
	if (in->opcode == 0xae)
		return (in->reg & 7) >= 4 && (in->reg & 7) <= 6;
	if (in->opcode == 0xc7)
		return (in->reg & 7) >= 3 && (in->reg & 7) <= 5;
	return false;
}

/*
 * Whether the instruction starting at b (avail bytes) may be one insn_evex()
 * counts: its first byte after the legacy and REX prefixes is 62, C4 or C5
 * (EVEX, VEX), or 0F followed by AE or C7.  A cheap filter before decoding.
 */
static bool maybe_evex(const uint8_t *b, size_t avail)
{
	size_t i = 0;

	while (i < avail && (b[i] == 0xf0 || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x2e ||
			     b[i] == 0x36 || b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x64 ||
			     b[i] == 0x65 || b[i] == 0x66 || b[i] == 0x67))
		i++;
	if (i < avail && (b[i] & 0xf0) == 0x40)
		i++;
	if (i >= avail)
		return true;
	if (b[i] == 0x62 || b[i] == 0xc4 || b[i] == 0xc5)
		return true;
	return b[i] == 0x0f && (i + 1 >= avail || b[i + 1] == 0xae || b[i + 1] == 0xc7);
}

/* 1 when [addr, end) decodes linearly with nothing of the kind, else 0. */
static int range_free(struct dp_object *obj, uint64_t addr, uint64_t end)
{
	while (addr < end) {
		size_t avail = end - addr > DP_INSN_MAX_LEN ? DP_INSN_MAX_LEN : end - addr;
		const uint8_t *b = dp_elf_code(obj->elf, addr, avail);
		struct dp_insn in;

		if (!b || dp_insn_decode(b, avail, &in) || insn_evex(&in))
			return 0;
		addr += in.len;
	}
	return 1;
}

/* 1 when the function's instructions are free of it; *end gets where they
 * stop.  0 for an undecoded function. */
static int function_free(struct dp_object *obj, const struct dp_function *fn, uint64_t *end)
{
	*end = fn->start;
	if (fn->flags & DP_FN_UNDECODED)
		return 0;
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		uint64_t a = fn->start + fn->insn_off[i];
		uint64_t lim = fn->start + fn->size;
		size_t avail = lim - a > DP_INSN_MAX_LEN ? DP_INSN_MAX_LEN : lim - a;
		const uint8_t *b = dp_elf_code(obj->elf, a, avail);
		struct dp_insn in;

		if (!b)
			return 0;
		/* The analysis decoded these already: decode again only what
		 * may count, and the last one for where they end. */
		if (!maybe_evex(b, avail) && i + 1 < fn->ninsns)
			continue;
		if (dp_insn_decode(b, avail, &in) || insn_evex(&in))
			return 0;
		*end = a + in.len;
	}
	return 1;
}

static int scan(struct dp_object *obj)
{
	const struct dp_function *fns;
	size_t nfns, f = 0;
	int ret = dp_object_functions(obj, &fns, &nfns);

	if (ret)
		return ret;
	for (size_t s = 0; s < obj->nscns; s++) {
		const struct an_scn *scn = &obj->scns[s];
		uint64_t pos = scn->addr, end = scn->addr + scn->size;

		if (!scn->exec)
			continue;
		while (f < nfns && fns[f].start < pos)
			f++;
		for (; f < nfns && fns[f].start < end; f++) {
			uint64_t fn_end;

			/* Nested or overlapping ranges are decoded on their own. */
			if (fns[f].start > pos && !range_free(obj, pos, fns[f].start))
				return 0;
			if (!function_free(obj, &fns[f], &fn_end))
				return 0;
			if (fn_end > pos)
				pos = fn_end;
		}
		if (pos < end && !range_free(obj, pos, end))
			return 0;
	}
	return 1;
}

int dp_object_evex_free(struct dp_object *obj)
{
	if (!obj->evex_known) {
		int ret = scan(obj);

		if (ret < 0)
			return ret;
		obj->evex_free = ret == 1;
		obj->evex_known = true;
	}
	return obj->evex_free;
}
