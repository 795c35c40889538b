/*
 * analysis-report: what the function analysis finds in ELF objects, for
 * people tuning it: analysis time, functions and instructions, indirect
 * jumps and how many resolved as jump tables, jump-table and landing-pad
 * targets; and, with -p, how every function entry and return site would be
 * patched, as libdp-patchall.so plans them (PLT stubs left out).  Not a
 * test: it prints numbers and never fails on them.
 *
 *   analysis-report [-u] [-p [-n] [-l]] [-r N] FILE...
 *     -u    list the indirect jmps left unresolved (address and function)
 *     -p    plan every entry and return site: jumps (through hops, and
 *           redirects: branches led to the trampoline), int3s, refusals,
 *           and the reasons
 *     -n    with -p, as lttng-dynprobed plans: redirects that stand alone
 *           (DP_PLAN_ALONE: no branch led through another window)
 *     -l    with -p, list each site that gets no jump, with the
 *           instructions around it
 *     -r N  repeat the analysis N times and print the best time
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gelf.h>

#include "elf/elf.h"
#include "patch/analysis.h"
#include "patch/plan.h"
#include "x86/insn.h"

struct counts {
	size_t fns, insns, undecoded, ind, unresolved, jt_fns, jt_targets, pads, pad_fns;
	size_t rets, got, shaped, shaped_unresolved, leaving, addressed, ind_fns;
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
	c->ind_fns += !!(fn->flags & DP_FN_INDIRECT);
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		uint64_t addr = fn->start + fn->insn_off[i];
		unsigned kind = dp_object_target_kind(obj, addr);
		bool unresolved = false, shaped;
		struct dp_insn in;

		c->jt_targets += !!(kind & DP_TGT_JUMP_TABLE);
		c->pads += !!(kind & DP_TGT_LANDING_PAD);
		c->addressed += !!(kind & DP_TGT_ADDRESS);
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

/* ---- plans ------------------------------------------------------------- */

/* Whether vaddr lies in a PLT section: stubs, not functions. */
static bool in_plt(struct dp_object *obj, uint64_t vaddr)
{
	Elf *e = dp_elf_handle(dp_object_elf(obj));
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || vaddr < sh.sh_addr || vaddr - sh.sh_addr >= sh.sh_size)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		return name && (!strcmp(name, ".plt") || !strncmp(name, ".plt.", 5));
	}
	return false;
}

struct plan_point {
	uint64_t addr;
	bool entry;
	bool named;	/* of a function a symbol names: what --function '*' takes */
};

static int point_cmp(const void *a, const void *b)
{
	const struct plan_point *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return y->entry - x->entry;	/* the entry first */
}

/* Mnemonics of the instructions of fn from 2 before vaddr to 2 after. */
static void print_around(struct dp_object *obj, const struct dp_function *fn, uint64_t vaddr)
{
	const uint8_t *code = dp_elf_code(dp_object_elf(obj), fn->start, fn->size);
	long at = dp_function_insn_index(fn, vaddr);

	if (!code || at < 0)
		return;
	printf("     ");
	for (long i = at - 2; i <= at + 2; i++) {
		struct dp_insn in;
		uint32_t off;

		if (i < 0 || i >= (long)fn->ninsns)
			continue;
		off = fn->insn_off[i];
		if (dp_insn_decode(code + off, fn->size - off, &in))
			break;
		printf(" %s%s%s(%u%s)", i == at ? "[" : "", in.mnemonic ? in.mnemonic : "?",
		       i == at ? "]" : "", in.len,
		       dp_object_target_kind(obj, fn->start + off) ? ",target" : "");
	}
	printf("\n");
}

/* With -p: redirects, as libdp-patchall.so plans them; with -n, each
 * patch standing alone, as the daemon plans them. */
static bool alone;

/* Plans every entry and return site at once, as libdp-patchall.so does. */
static void report_plan(struct dp_object *obj, const struct dp_function *fns, size_t n,
			bool list)
{
	static const char *const role[2] = { "entries", "returns" };
	/* By method, then jumps through hops (HOPS). */
	enum { HOPS = DP_SITE_REDIRECT + 1 };
	unsigned count[2][HOPS + 1] = { { 0 } }, reasons[2][DP_REASON__COUNT] = { { 0 } };
	unsigned named[2] = { 0 }, named_jumps[2] = { 0 };
	struct plan_point *pts = NULL;
	struct dp_patch *plan = NULL;
	uint64_t *addrs = NULL;
	size_t np = 0, cap = 0, w = 0, nplan = 0;

	for (size_t i = 0; i < n; i++) {
		if (in_plt(obj, fns[i].start))
			continue;
		if (np + 1 + fns[i].nrets > cap) {
			struct plan_point *v;

			cap = (np + 1 + fns[i].nrets) * 2;
			v = realloc(pts, cap * sizeof(*pts));
			if (!v)
				goto out;
			pts = v;
		}
		bool is_named = fns[i].flags & DP_FN_NAMED;

		pts[np++] = (struct plan_point){ fns[i].start, true, is_named };
		for (uint32_t r = 0; r < fns[i].nrets; r++)
			pts[np++] = (struct plan_point){ fns[i].rets[r].addr, false, is_named };
	}
	if (np)
		qsort(pts, np, sizeof(*pts), point_cmp);
	/* One point per address; an entry that is also a return site counts as an entry. */
	for (size_t i = 0; i < np; i++)
		if (!w || pts[w - 1].addr != pts[i].addr)
			pts[w++] = pts[i];
	np = w;
	addrs = malloc((np ? np : 1) * sizeof(*addrs));
	if (!addrs)
		goto out;
	for (size_t i = 0; i < np; i++)
		addrs[i] = pts[i].addr;
	if (dp_plan_sites_flags(obj, addrs, np, DP_PLAN_REDIRECT | (alone ? DP_PLAN_ALONE : 0), &plan, &nplan))
		goto out;
	for (size_t i = 0; i < nplan; i++) {
		const struct dp_patch *p = &plan[i];

		for (unsigned k = 0; k < p->npoints; k++) {
			const struct plan_point *pt = &pts[p->point_ids[k]];
			int r = pt->entry ? 0 : 1;

			count[r][p->method]++;
			count[r][HOPS] += p->method == DP_SITE_JUMP && p->hop.len;
			named[r] += pt->named;
			named_jumps[r] += pt->named && (p->method == DP_SITE_JUMP ||
							p->method == DP_SITE_REDIRECT);
			if (p->method == DP_SITE_JUMP || p->method == DP_SITE_REDIRECT)
				continue;
			reasons[r][p->reason]++;
			if (!list)
				continue;
			printf("    %s %#" PRIx64 " %s (%s) in %s+%#" PRIx64 "\n",
			       pt->entry ? "entry" : "return", pt->addr,
			       dp_site_method_str(p->method), dp_reason_name(p->reason),
			       p->fn && p->fn->name ? p->fn->name : "?",
			       p->fn ? pt->addr - p->fn->start : 0);
			if (p->fn)
				print_around(obj, p->fn, pt->addr);
		}
	}
	for (int r = 0; r < 2; r++) {
		unsigned jumps = count[r][DP_SITE_JUMP] + count[r][DP_SITE_REDIRECT];
		unsigned total = jumps + count[r][DP_SITE_INT3] + count[r][DP_SITE_REFUSED];

		printf("  %s %u: jump %u (%.2f%%, through hops %u, redirected %u), int3 %u, "
		       "refused %u;", role[r], total, jumps, total ? 100.0 * jumps / total : 0.0,
		       count[r][HOPS], count[r][DP_SITE_REDIRECT], count[r][DP_SITE_INT3],
		       count[r][DP_SITE_REFUSED]);
		for (int k = 0; k < DP_REASON__COUNT; k++)
			if (reasons[r][k])
				printf(" %s %u", dp_reason_name(k), reasons[r][k]);
		printf("\n");
	}
	/* The sites `--function '*'` puts probes on: the named functions'. */
	printf("  of named functions: entries %u, jump %.2f%%; returns %u, jump %.2f%%\n",
	       named[0], named[0] ? 100.0 * named_jumps[0] / named[0] : 0.0, named[1],
	       named[1] ? 100.0 * named_jumps[1] / named[1] : 0.0);
out:
	free(pts);
	free(addrs);
	free(plan);
}

static int report(const char *path, bool list, bool plan, bool plan_list, int reps)
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
	printf("  landing pads %zu in %zu functions, labels whose address is taken %zu, "
	       "functions with indirect jmps that may go anywhere %zu\n", c.pads, c.pad_fns,
	       c.addressed, c.ind_fns);
	if (plan)
		report_plan(obj, fns, n, plan_list);
	dp_object_close(obj);
	return 0;
}

int main(int argc, char **argv)
{
	bool list = false, plan = false, plan_list = false;
	int reps = 1, opt, ret = 0;

	while ((opt = getopt(argc, argv, "upnlr:")) != -1) {
		switch (opt) {
		case 'u':
			list = true;
			break;
		case 'p':
			plan = true;
			break;
		case 'l':
			plan_list = true;
			break;
		case 'n':
			alone = true;
			break;
		case 'r':
			reps = atoi(optarg) > 0 ? atoi(optarg) : 1;
			break;
		default:
			fprintf(stderr, "usage: analysis-report [-u] [-p [-n] [-l]] [-r N] FILE...\n");
			return 2;
		}
	}
	for (int i = optind; i < argc; i++)
		ret |= report(argv[i], list, plan, plan_list, reps);
	return ret;
}
