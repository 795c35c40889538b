/*
 * analysis-report: what the function analysis finds in ELF objects, for
 * people tuning it: analysis time, functions and instructions, indirect
 * jumps and how many resolved as jump tables, jump-table and landing-pad
 * targets.  Not a test: it prints numbers and never fails on them.
 *
 *   analysis-report [-u] [-r N] FILE...
 *     -u    list the indirect jmps left unresolved (address and function)
 *     -r N  repeat the analysis N times and print the best time
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dynprobe/elf/elf.h"
#include "dynprobe/patch/analysis.h"
#include "dynprobe/x86/insn.h"

struct counts {
	size_t fns, insns, undecoded, ind, unresolved, jt_fns, jt_targets, pads, pad_fns;
	size_t rets, got, shaped, shaped_unresolved, leaving;
};

/* A load through a scaled index: what a table read looks like. */
static bool indexed_load(const struct dp_insn *in)
{
	return in->has_modrm && in->mod != 3 && in->index != DP_REG_NONE && in->scale >= 2 &&
	       !(in->attr & DP_ATTR_RIPREL);
}

/*
 * Whether the indirect jmp at index i looks like a jump table to a reader
 * who knows nothing of the resolver: it reads memory through a scaled index
 * itself, or one of the few instructions before it does.
 */
static bool table_shaped(const uint8_t *code, const struct dp_function *fn, uint32_t i)
{
	for (uint32_t k = 0; k <= 8 && k <= i; k++) {
		uint32_t off = fn->insn_off[i - k];
		struct dp_insn in;

		if (dp_insn_decode(code + off, fn->size - off, &in))
			return false;
		if (k && (in.flow == DP_FLOW_JMP || in.flow == DP_FLOW_RET ||
			  in.flow == DP_FLOW_JMP_IND))
			return false;
		if (indexed_load(&in))
			return true;
	}
	return false;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count_function(struct dp_object *obj, const struct dp_function *fn, bool list,
			   struct counts *c)
{
	const uint8_t *code = dp_elf_code(dp_object_elf(obj), fn->start, fn->size);

	c->insns += fn->ninsns;
	c->rets += fn->nrets;
	c->undecoded += !!(fn->flags & DP_FN_UNDECODED);
	c->jt_fns += !!(fn->flags & DP_FN_JUMP_TABLE);
	c->pad_fns += !!(fn->flags & DP_FN_LANDING_PADS);
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		uint64_t addr = fn->start + fn->insn_off[i];
		unsigned kind = dp_object_target_kind(obj, addr);
		bool unresolved = false, shaped;
		struct dp_insn in;

		c->jt_targets += !!(kind & DP_TGT_JUMP_TABLE);
		c->pads += !!(kind & DP_TGT_LANDING_PAD);
		if (!code ||
		    dp_insn_decode(code + fn->insn_off[i], fn->size - fn->insn_off[i], &in) ||
		    in.flow != DP_FLOW_JMP_IND)
			continue;
		c->ind++;
		for (uint32_t r = 0; r < fn->nrets; r++)
			if (fn->rets[r].addr == addr && fn->rets[r].kind == DP_RET_TAIL_INDIRECT)
				unresolved = true;
			else if (fn->rets[r].addr == addr && fn->rets[r].kind == DP_RET_TAIL_TABLE)
				c->leaving++;
		c->unresolved += unresolved;
		if (in.attr & DP_ATTR_RIPREL) {
			c->got++;
			continue;
		}
		shaped = table_shaped(code, fn, i);
		c->shaped += shaped;
		c->shaped_unresolved += shaped && unresolved;
		if (list && unresolved)
			printf("  unresolved %s%#" PRIx64 " in %s+%#" PRIx64 "\n",
			       shaped ? "table-shaped " : "", addr, fn->name ? fn->name : "?",
			       addr - fn->start);
	}
}

static int report(const char *path, bool list, int reps)
{
	uint64_t best = UINT64_MAX;
	const struct dp_function *fns;
	struct dp_object *obj = NULL;
	struct counts c = { 0 };
	size_t n;
	int err;

	for (int r = 0; r < reps; r++) {
		uint64_t t0;

		dp_object_close(obj);
		t0 = now_ns();
		obj = dp_object_open(path);
		if (!obj) {
			fprintf(stderr, "%s: %s\n", path, dp_elf_strerror(errno));
			return 1;
		}
		err = dp_object_functions(obj, &fns, &n);
		if (err) {
			fprintf(stderr, "%s: %s\n", path, dp_elf_strerror(-err));
			dp_object_close(obj);
			return 1;
		}
		if (now_ns() - t0 < best)
			best = now_ns() - t0;
	}
	c.fns = n;
	for (size_t i = 0; i < n; i++)
		count_function(obj, &fns[i], list, &c);
	printf("%s: %.1f ms, %zu functions, %zu insns, %zu undecoded fns, %zu return sites\n",
	       path, best / 1e6, c.fns, c.insns, c.undecoded, c.rets);
	printf("  indirect jmps %zu: through the GOT %zu, resolved as tables %zu, table-shaped %zu "
	       "of which unresolved %zu\n", c.ind, c.got, c.ind - c.unresolved, c.shaped,
	       c.shaped_unresolved);
	printf("  functions with tables %zu, table targets %zu, tables leading out %zu\n",
	       c.jt_fns, c.jt_targets, c.leaving);
	printf("  landing pads %zu in %zu functions\n", c.pads, c.pad_fns);
	dp_object_close(obj);
	return 0;
}

int main(int argc, char **argv)
{
	bool list = false;
	int reps = 1, opt, ret = 0;

	while ((opt = getopt(argc, argv, "ur:")) != -1) {
		switch (opt) {
		case 'u':
			list = true;
			break;
		case 'r':
			reps = atoi(optarg) > 0 ? atoi(optarg) : 1;
			break;
		default:
			fprintf(stderr, "usage: analysis-report [-u] [-r N] FILE...\n");
			return 2;
		}
	}
	for (int i = optind; i < argc; i++)
		ret |= report(argv[i], list, reps);
	return ret;
}
