/*
 * Function analysis (src/common/dynprobe/patch/analysis.h) on real objects
 * and on the fixtures built beside this test:
 *
 *  - jump tables: every case block of the fixtures' switches (each case calls
 *    a function of its own) starts at a jump-table target, in a PIC library,
 *    a CET library (notrack jmp), a non-PIE (absolute tables) and a PIE;
 *    hand-written tables with and without a bounds check;
 *  - return sites of a hand-written function, in order and of every kind;
 *    a function with a byte that does not decode;
 *  - indirect jmps that are tail calls (through a pointer from memory, what
 *    a call returned, an argument) are not DP_FN_INDIRECT, in PIC and
 *    non-PIE fixtures alike, a computed goto and a jmp with the frame still
 *    up are, and the computed goto's labels are targets;
 *  - landing pads of a C++ try/catch and of libstdc++;
 *  - main of stripped executables (ours against the unstripped symbol, and
 *    /usr/bin/ls against its _start), deflate by name in libz;
 *  - system objects: libc, libstdc++, bash, sqlite3, gzip analyze, their
 *    table-shaped indirect jumps resolve, libc in bounded time;
 *  - corrupt input: truncated and byte-flipped copies of ELF files, each
 *    analyzed in a child process, give an error or a result, never a crash;
 *    a text file gives ENOEXEC.
 *
 * The seed of the byte flips is printed; DP_SEED=<seed> replays a run.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elf/elf.h"
#include "patch/analysis.h"
#include "patch/plan.h"
#include "x86/insn.h"
#include "tap.h"

#ifndef UNIT_BUILDDIR
#define UNIT_BUILDDIR "."
#endif

#define LIBDIR "/usr/lib/x86_64-linux-gnu"
#define FLIP_ROUNDS 120

static char *fixture(const char *name)
{
	static char buf[4][4096];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", UNIT_BUILDDIR, name);
	return buf[k];
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Opens and analyzes path; NULL (after a failed check) on error. */
static struct dp_object *object_get(const char *path)
{
	struct dp_object *obj = dp_object_open(path);
	const struct dp_function *fns;
	size_t n;
	int err;

	if (!tap_ok(obj != NULL, "open %s", path)) {
		tap_diag("%s", dp_elf_strerror(errno));
		return NULL;
	}
	err = dp_object_functions(obj, &fns, &n);
	if (!tap_ok(err == 0 && n > 0, "analyze %s: %zu functions", path, n)) {
		dp_object_close(obj);
		return NULL;
	}
	return obj;
}

static bool insn_get(struct dp_object *obj, const struct dp_function *fn, uint32_t i,
		     struct dp_insn *in)
{
	const uint8_t *code = dp_elf_code(dp_object_elf(obj), fn->start, fn->size);

	return code && i < fn->ninsns &&
	       !dp_insn_decode(code + fn->insn_off[i], fn->size - fn->insn_off[i], in);
}

static bool transfers(const struct dp_insn *in)
{
	return in->flow != DP_FLOW_NONE && in->flow != DP_FLOW_SYSCALL;
}

/*
 * True when the block holding instruction i of fn starts at a jump-table
 * target: walking back, no control transfer comes before one is found.
 */
static bool block_is_table_case(struct dp_object *obj, const struct dp_function *fn, uint32_t i)
{
	for (uint32_t k = i + 1; k-- > 0;) {
		struct dp_insn in;

		if (dp_object_target_kind(obj, fn->start + fn->insn_off[k]) & DP_TGT_JUMP_TABLE)
			return true;
		if (k == 0 || !insn_get(obj, fn, k - 1, &in) || transfers(&in))
			return false;
	}
	return false;
}

/* Every call or jmp in fn to `callee` sits in a block a table entry starts. */
static void check_cases(struct dp_object *obj, const char *path, const char *fname, int first,
			int last)
{
	const struct dp_function *fn = dp_object_function_by_name(obj, fname);
	unsigned missing = 0, found = 0;

	if (!tap_ok(fn != NULL, "%s: %s found", path, fname))
		return;
	tap_ok((fn->flags & DP_FN_JUMP_TABLE) && !(fn->flags & DP_FN_INDIRECT),
	       "%s: %s has a resolved jump table and no unresolved jmp (flags %#x)", path, fname,
	       fn->flags);
	for (int c = first; c <= last; c++) {
		char name[32];
		const struct dp_function *callee;
		unsigned sites = 0;

		snprintf(name, sizeof(name), "case_%d", c);
		callee = dp_object_function_by_name(obj, name);
		if (!callee) {
			missing++;
			continue;
		}
		for (uint32_t i = 0; i < fn->ninsns; i++) {
			struct dp_insn in;

			if (!insn_get(obj, fn, i, &in) || !(in.attr & DP_ATTR_REL) ||
			    (in.flow != DP_FLOW_CALL && in.flow != DP_FLOW_JMP) ||
			    dp_insn_target(&in, fn->start + fn->insn_off[i]) != callee->start)
				continue;
			sites++;
			if (block_is_table_case(obj, fn, i))
				found++;
			else
				tap_diag("%s: call to %s at %#" PRIx64 " is not in a table case",
					 fname, name, fn->start + fn->insn_off[i]);
		}
		if (!sites)
			missing++;
	}
	tap_ok(!missing && found == (unsigned)(last - first + 1),
	       "%s: %s: all %d case blocks are jump-table targets (%u found, %u missing)", path,
	       fname, last - first + 1, found, missing);
}

/* The instruction of fn that loads imm into eax (mov $imm,%eax), or -1. */
static long insn_mov_eax(struct dp_object *obj, const struct dp_function *fn, int64_t imm)
{
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		struct dp_insn in;

		if (insn_get(obj, fn, i, &in) && in.enc == DP_ENC_LEGACY && in.opcode == 0xb8 &&
		    in.imm == imm)
			return i;
	}
	return -1;
}

static void check_asm_tables(struct dp_object *obj, const char *path)
{
	const struct dp_function *t1 = dp_object_function_by_name(obj, "asm_table");
	const struct dp_function *t2 = dp_object_function_by_name(obj, "asm_table_nobound");
	unsigned ok1 = 0, ok2 = 0;

	if (!tap_ok(t1 && t2, "%s: hand-written table functions found", path))
		return;
	for (int k = 1; k <= 4; k++) {
		long i = insn_mov_eax(obj, t1, 0x1111 * k);
		long j = insn_mov_eax(obj, t2, 0x1111 * (k + 4));

		ok1 += i >= 0 && (dp_object_target_kind(obj, t1->start + t1->insn_off[i]) &
				  DP_TGT_JUMP_TABLE);
		ok2 += j >= 0 && (dp_object_target_kind(obj, t2->start + t2->insn_off[j]) &
				  DP_TGT_JUMP_TABLE);
	}
	tap_ok(ok1 == 4 && (t1->flags & DP_FN_JUMP_TABLE) && !(t1->flags & DP_FN_INDIRECT),
	       "%s: bounded lea-add table: 4 of 4 cases are targets (%u)", path, ok1);
	tap_ok(ok2 == 4 && (t2->flags & DP_FN_JUMP_TABLE) && !(t2->flags & DP_FN_INDIRECT),
	       "%s: unbounded notrack table: 4 of 4 cases are targets (%u)", path, ok2);
	/* The default case (xor) is reached by ja only. */
	tap_ok(!(dp_object_target_kind(obj, t1->start + t1->insn_off[t1->ninsns - 2]) &
		 DP_TGT_JUMP_TABLE) &&
	       (dp_object_target_kind(obj, t1->start + t1->insn_off[t1->ninsns - 2]) &
		DP_TGT_DIRECT),
	       "%s: asm_table's default case is a direct target, not a table entry", path);
}

static void check_rets(struct dp_object *obj, const char *path)
{
	static const uint8_t kinds[] = {
		DP_RET_TAIL_JCC, DP_RET_TAIL_JMP, DP_RET_RET, DP_RET_REP_RET, DP_RET_RET_IMM,
		DP_RET_TAIL_INDIRECT,
	};
	static const uint8_t lens[] = { 0, 0, 1, 2, 3, 2 };
	const struct dp_function *fn = dp_object_function_by_name(obj, "rets_known");
	const struct dp_function *wd = dp_object_function_by_name(obj, "with_data");
	bool same = true;

	if (!tap_ok(fn != NULL, "%s: rets_known found", path))
		return;
	same = fn->nrets == sizeof(kinds);
	for (uint32_t r = 0; same && r < fn->nrets; r++) {
		same = fn->rets[r].kind == kinds[r] && (!lens[r] || fn->rets[r].len == lens[r]) &&
		       dp_function_insn_index(fn, fn->rets[r].addr) >= 0 &&
		       (!r || fn->rets[r].addr > fn->rets[r - 1].addr);
	}
	tap_ok(same, "%s: rets_known: jcc out, jmp out, ret, rep ret, ret $8, jmp *%%rax "
	       "(%u return sites)", path, fn->nrets);
	tap_ok(fn->flags & DP_FN_INDIRECT, "%s: rets_known has an unresolved indirect jmp", path);
	/* The ret the first je reaches is a direct target. */
	tap_ok(fn->nrets >= 3 && (dp_object_target_kind(obj, fn->rets[2].addr) & DP_TGT_DIRECT),
	       "%s: rets_known's ret is a direct branch target", path);
	if (tap_ok(wd != NULL, "%s: with_data found", path))
		tap_ok((wd->flags & DP_FN_UNDECODED) && wd->ninsns == 2,
		       "%s: with_data stops at the byte that does not decode (%u insns)", path,
		       wd->ninsns);
}

/* The instruction after each call is a return target. */
static void check_return_points(struct dp_object *obj, const char *path)
{
	const struct dp_function *fn = dp_object_function_by_name(obj, "dispatch_dense");
	unsigned calls = 0, marked = 0;

	if (!fn)
		return;
	for (uint32_t i = 0; i + 1 < fn->ninsns; i++) {
		struct dp_insn in;

		if (!insn_get(obj, fn, i, &in) || in.flow != DP_FLOW_CALL)
			continue;
		calls++;
		marked += !!(dp_object_target_kind(obj, fn->start + fn->insn_off[i + 1]) &
			     DP_TGT_RETURN);
	}
	tap_ok(calls && calls == marked, "%s: %u of %u return points are targets", path, marked,
	       calls);
}

/* Whether fn has a DP_RET_TAIL_INDIRECT return site. */
static bool has_tail_indirect(const struct dp_function *fn)
{
	for (uint32_t r = 0; r < fn->nrets; r++)
		if (fn->rets[r].kind == DP_RET_TAIL_INDIRECT)
			return true;
	return false;
}

/*
 * Indirect jmps no table explains: tail calls through pointers leave their
 * function unflagged (and keep their return site), in a position-
 * independent object (its relocations and RIP-relative operands name every
 * code address it holds) and in a position-dependent executable alike
 * (there the words of its data and its instructions' immediates are read
 * too); a computed goto and a jmp through an argument with the frame still
 * up stay flagged, and the computed goto's labels are targets, its table
 * being relocated in one and plain words in the other.  A function and
 * its .cold part are walked as one: a tail call after the part came back,
 * or in the part, is known as one; a part that does arithmetic on the
 * pointer, or that something else calls, leaves the jmp flagged.  A window
 * right before such a tail call is then a jump.
 */
static void check_tail_calls(struct dp_object *obj, const char *path)
{
	static const char *const tails[] = { "tail_through_pointer", "tail_after_call", "tail_arg",
					     "parted_back", "parted_tail.cold" };
	static const char *const flagged[] = { "threaded", "tail_arg_framed", "rets_known",
					       "parted_sum", "parted_called" };
	const struct dp_function *fn;

	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		fn = dp_object_function_by_name(obj, tails[i]);
		if (!tap_ok(fn && has_tail_indirect(fn), "%s: %s found, its jmp a return site",
			    path, tails[i]))
			continue;
		tap_ok(!(fn->flags & DP_FN_INDIRECT),
		       "%s: %s: a tail call through a pointer, not flagged (flags %#x)", path,
		       tails[i], fn->flags);
	}
	for (size_t i = 0; i < sizeof(flagged) / sizeof(flagged[0]); i++) {
		fn = dp_object_function_by_name(obj, flagged[i]);
		tap_ok(fn && (fn->flags & DP_FN_INDIRECT), "%s: %s stays flagged (flags %#x)", path,
		       flagged[i], fn ? fn->flags : 0);
	}
	/* threaded's four labels: their addresses are in its table. */
	fn = dp_object_function_by_name(obj, "threaded");
	if (tap_ok(fn != NULL, "%s: threaded found", path)) {
		unsigned labels = 0;

		for (uint32_t i = 0; i < fn->ninsns; i++)
			labels += !!(dp_object_target_kind(obj, fn->start + fn->insn_off[i]) &
				     DP_TGT_ADDRESS);
		tap_ok(labels == 4, "%s: threaded's 4 labels are address targets (%u)", path,
		       labels);
	}
	fn = dp_object_function_by_name(obj, "tail_after_call");
	if (fn && fn->nrets) {
		uint64_t at = fn->rets[fn->nrets - 1].addr;
		struct dp_patch plan = { .method = DP_SITE_REFUSED };
		int err = dp_plan_site(obj, at, &plan);

		tap_ok(!err && plan.method == DP_SITE_JUMP && plan.win.addr < at,
		       "%s: tail_after_call's jmp gets a jump from a window before it (%s, %s)", path,
		       dp_site_method_str(plan.method), dp_reason_name(plan.reason));
	}
}

/*
 * A position-dependent executable's labels named only by an immediate, by
 * a data word, or by a word of .text between functions: targets, and their
 * functions' jmps may go anywhere.  A data word that lands inside an
 * instruction (held_number's mov) is a number, no target: the nop before
 * that mov gets a jump over both.
 */
static void check_held_labels(struct dp_object *obj, const char *path)
{
	static const char *const names[] = { "held_imm", "held_word", "held_text" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct dp_function *fn = dp_object_function_by_name(obj, names[i]);
		unsigned labels = 0;

		if (!tap_ok(fn != NULL, "%s: %s found", path, names[i]))
			continue;
		for (uint32_t k = 1; k < fn->ninsns; k++)
			labels += !!(dp_object_target_kind(obj, fn->start + fn->insn_off[k]) &
				     DP_TGT_ADDRESS);
		tap_ok(labels == 1, "%s: %s: its label is an address target (%u)", path, names[i],
		       labels);
		tap_ok(fn->flags & DP_FN_INDIRECT, "%s: %s: its jmp may reach it, flagged (%#x)",
		       path, names[i], fn->flags);
	}
	const struct dp_function *fn = dp_object_function_by_name(obj, "held_number");

	if (tap_ok(fn != NULL && fn->ninsns == 3, "%s: held_number found, 3 instructions",
		   path)) {
		struct dp_patch plan = { .method = DP_SITE_REFUSED };
		int err = dp_plan_site(obj, fn->start, &plan);

		tap_ok(dp_object_target_kind(obj, fn->start + 3) == 0,
		       "%s: held_number: the data word inside its mov is no target (%#x)", path,
		       dp_object_target_kind(obj, fn->start + 3));
		tap_ok(!err && plan.method == DP_SITE_JUMP && plan.win.addr == fn->start &&
		       plan.win.len == 6,
		       "%s: held_number: its nop gets a jump over the nop and the mov (%s, %s)",
		       path, dp_site_method_str(plan.method), dp_reason_name(plan.reason));
	}
}

static void check_switch_fixture(const char *name, bool pic)
{
	const char *path = fixture(name);
	struct dp_object *obj = object_get(path);

	if (!obj)
		return;
	check_cases(obj, name, "dispatch_dense", 0, 11);
	check_cases(obj, name, "dispatch_offset", 0, 11);
	check_cases(obj, name, "dispatch_tail", 0, 8);
	check_cases(obj, name, "dispatch_loop", 0, 10);
	check_asm_tables(obj, name);
	check_rets(obj, name);
	check_return_points(obj, name);
	check_tail_calls(obj, name);
	if (!pic)
		check_held_labels(obj, name);
	dp_object_close(obj);
}

/* ---- main -------------------------------------------------------------- */

static void check_stripped_main(const char *stripped, const char *plain)
{
	struct dp_object *s = object_get(fixture(stripped)), *p = object_get(fixture(plain));
	const struct dp_function *fs, *fp;

	if (s && p) {
		fs = dp_object_function_by_name(s, "main");
		fp = dp_object_function_by_name(p, "main");
		tap_ok(fs && fp && fs->start == fp->start && fs->name && !strcmp(fs->name, "main"),
		       "%s: main found at %#" PRIx64 ", the unstripped symbol says %#" PRIx64,
		       stripped, fs ? fs->start : 0, fp ? fp->start : 0);
		tap_ok(fs && !(fs->flags & DP_FN_NAMED), "%s: main is named by the analysis",
		       stripped);
	}
	dp_object_close(s);
	dp_object_close(p);
}

/*
 * The address _start loads with lea X(%rip),%rdi (48 8d 3d disp32), found
 * by byte matching: no decoder involved.
 */
static uint64_t start_rdi(struct dp_object *obj)
{
	Elf *e = dp_elf_handle(dp_object_elf(obj));
	const uint8_t *code;
	GElf_Ehdr eh;

	if (!gelf_getehdr(e, &eh) || !(code = dp_elf_code(dp_object_elf(obj), eh.e_entry, 48)))
		return 0;
	for (int k = 0; k + 7 <= 48; k++) {
		if (code[k] == 0x48 && code[k + 1] == 0x8d && code[k + 2] == 0x3d) {
			int32_t d = (int32_t)((uint32_t)code[k + 3] | (uint32_t)code[k + 4] << 8 |
					      (uint32_t)code[k + 5] << 16 |
					      (uint32_t)code[k + 6] << 24);

			return eh.e_entry + (uint64_t)k + 7 + (uint64_t)(int64_t)d;
		}
	}
	return 0;
}

static void check_ls_main(void)
{
	struct dp_object *obj = object_get("/usr/bin/ls");
	const struct dp_function *fn;
	struct dp_insn in;
	bool prologue;

	if (!obj)
		return;
	fn = dp_object_function_by_name(obj, "main");
	if (tap_ok(fn != NULL, "/usr/bin/ls: main found in a stripped PIE")) {
		prologue = insn_get(obj, fn, 0, &in) &&
			   ((in.enc == DP_ENC_LEGACY && in.map == DP_MAP_1BYTE &&
			     in.opcode >= 0x50 && in.opcode <= 0x57) ||	/* push */
			    (in.map == DP_MAP_0F && in.opcode == 0x1e) ||	/* endbr64 */
			    (in.opcode == 0x83 || in.opcode == 0x81));	/* sub rsp */
		tap_ok(prologue, "/usr/bin/ls: main at %#" PRIx64 " starts with a prologue (%s)",
		       fn->start, in.mnemonic ? in.mnemonic : "?");
		tap_ok(fn->start == start_rdi(obj),
		       "/usr/bin/ls: _start passes main's address in rdi");
	}
	dp_object_close(obj);
}

/* ---- landing pads ------------------------------------------------------ */

/* Landing-pad targets at instruction boundaries of fn. */
static unsigned pads_in(struct dp_object *obj, const struct dp_function *fn)
{
	unsigned n = 0;

	for (uint32_t i = 0; fn && i < fn->ninsns; i++)
		n += !!(dp_object_target_kind(obj, fn->start + fn->insn_off[i]) &
			DP_TGT_LANDING_PAD);
	return n;
}

static void check_eh_fixture(void)
{
	struct dp_object *obj = object_get(fixture("fixture-eh"));
	const struct dp_function *c, *cc, *g;
	unsigned pc, pg;

	if (!obj)
		return;
	c = dp_object_function_by_name(obj, "catcher");
	cc = dp_object_function_by_name(obj, "catcher.cold");
	g = dp_object_function_by_name(obj, "cleanup");
	pc = pads_in(obj, c) + pads_in(obj, cc);
	pg = pads_in(obj, g) + pads_in(obj, dp_object_function_by_name(obj, "cleanup.cold"));
	tap_ok(c && pc >= 1 && ((c->flags | (cc ? cc->flags : 0)) & DP_FN_LANDING_PADS),
	       "fixture-eh: catcher's try/catch has a landing pad (%u)", pc);
	tap_ok(g && pg >= 1, "fixture-eh: cleanup's destructor call has a landing pad (%u)", pg);
	dp_object_close(obj);
}

/* ---- whole objects ----------------------------------------------------- */

struct totals {
	unsigned ind, shaped, shaped_resolved, pads, pad_fns, tables, bad_order;
};

static bool indexed_load(const struct dp_insn *in)
{
	return in->has_modrm && in->mod != 3 && in->index != DP_REG_NONE && in->scale >= 2 &&
	       !(in->attr & DP_ATTR_RIPREL);
}

/* An indirect jmp that reads through a scaled index, or follows such a read. */
static bool table_shaped(struct dp_object *obj, const struct dp_function *fn, uint32_t i)
{
	for (uint32_t k = 0; k <= 8 && k <= i; k++) {
		struct dp_insn in;

		if (!insn_get(obj, fn, i - k, &in))
			return false;
		if (k && (in.flow == DP_FLOW_JMP || in.flow == DP_FLOW_RET ||
			  in.flow == DP_FLOW_JMP_IND))
			return false;
		if (indexed_load(&in))
			return true;
	}
	return false;
}

static void totals_of(struct dp_object *obj, struct totals *t)
{
	const struct dp_function *fns;
	size_t n;

	memset(t, 0, sizeof(*t));
	if (dp_object_functions(obj, &fns, &n))
		return;
	for (size_t f = 0; f < n; f++) {
		const struct dp_function *fn = &fns[f];

		t->pad_fns += !!(fn->flags & DP_FN_LANDING_PADS);
		t->bad_order += f && fns[f - 1].start > fn->start;
		for (uint32_t r = 1; r < fn->nrets; r++)
			t->bad_order += fn->rets[r - 1].addr >= fn->rets[r].addr;
		for (uint32_t i = 0; i < fn->ninsns; i++) {
			unsigned kind = dp_object_target_kind(obj, fn->start + fn->insn_off[i]);
			bool unresolved = false;
			struct dp_insn in;

			t->pads += !!(kind & DP_TGT_LANDING_PAD);
			t->tables += !!(kind & DP_TGT_JUMP_TABLE);
			t->bad_order += i && fn->insn_off[i - 1] >= fn->insn_off[i];
			if (!insn_get(obj, fn, i, &in) || in.flow != DP_FLOW_JMP_IND ||
			    (in.attr & DP_ATTR_RIPREL))
				continue;
			t->ind++;
			if (!table_shaped(obj, fn, i))
				continue;
			t->shaped++;
			for (uint32_t r = 0; r < fn->nrets; r++)
				unresolved |= fn->rets[r].addr == fn->start + fn->insn_off[i] &&
					      fn->rets[r].kind == DP_RET_TAIL_INDIRECT;
			t->shaped_resolved += !unresolved;
		}
	}
}

static void check_system_object(const char *path, bool timed)
{
	const struct dp_function *fns;
	struct dp_object *obj;
	struct totals t;
	uint64_t t0, ns;
	size_t n;
	int err;

	if (access(path, R_OK)) {
		tap_ok(false, "%s is readable (install it: it is part of the test)", path);
		return;
	}
	t0 = now_ns();
	obj = dp_object_open(path);
	err = obj ? dp_object_functions(obj, &fns, &n) : -errno;
	ns = now_ns() - t0;
	if (!tap_ok(!err, "%s analyzed in %.1f ms", path, ns / 1e6)) {
		dp_object_close(obj);
		return;
	}
	if (timed)
		tap_ok(ns < 2000000000u, "%s: analysis under 2 s (%.1f ms)", path, ns / 1e6);
	totals_of(obj, &t);
	tap_ok(!t.bad_order, "%s: functions, instructions and return sites ascend", path);
	tap_ok(t.shaped_resolved * 100 >= t.shaped * 95,
	       "%s: %u of %u table-shaped indirect jmps resolved (%u indirect jmps besides "
	       "the GOT's)", path, t.shaped_resolved, t.shaped, t.ind);
	tap_diag("%s: %zu functions, %u jump-table targets, %u landing pads in %u functions",
		 path, n, t.tables, t.pads, t.pad_fns);
	dp_object_close(obj);
}

static void check_libstdcxx_pads(void)
{
	struct dp_object *obj = object_get(LIBDIR "/libstdc++.so.6");
	struct totals t;

	if (!obj)
		return;
	totals_of(obj, &t);
	tap_ok(t.pads >= 1000 && t.pad_fns >= 500,
	       "libstdc++: %u landing pads at instruction boundaries, in %u functions", t.pads,
	       t.pad_fns);
	dp_object_close(obj);
}

static Elf *elf_of(struct dp_object *obj)
{
	return dp_elf_handle(dp_object_elf(obj));
}

/* A .dynsym symbol's value, read with libelf alone. */
static uint64_t dynsym_value(struct dp_object *obj, const char *name)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf_of(obj), scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 1; i < d->d_size / sizeof(Elf64_Sym); i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			s = elf_strptr(elf_of(obj), sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name))
				return sym.st_value;
		}
	}
	return 0;
}

static void check_libz(void)
{
	struct dp_object *obj = object_get(LIBDIR "/libz.so.1");
	const struct dp_function *fn;
	bool ok = true;

	if (!obj)
		return;
	fn = dp_object_function_by_name(obj, "deflate");
	if (!tap_ok(fn && fn->start == dynsym_value(obj, "deflate"),
		    "libz.so.1: deflate resolves by name to its .dynsym address"))
		goto out;
	for (uint32_t i = 0; i < fn->ninsns && ok; i++) {
		uint64_t a = fn->start + fn->insn_off[i];
		uint64_t next = i + 1 < fn->ninsns ? fn->start + fn->insn_off[i + 1] : a + 1;

		ok = dp_function_insn_index(fn, a) == (long)i &&
		     (next == a + 1 || dp_function_insn_index(fn, a + 1) == -1);
	}
	tap_ok(ok && dp_function_insn_index(fn, fn->start - 1) == -1 &&
	       dp_function_insn_index(fn, fn->start + fn->size) == -1,
	       "libz.so.1: dp_function_insn_index finds every boundary of deflate and only them");
	tap_ok(dp_object_function_at(obj, fn->start + fn->size / 2) == fn &&
	       (dp_object_target_kind(obj, fn->start) & DP_TGT_FUNCTION),
	       "libz.so.1: deflate holds its middle and its start is a function target");
	errno = 0;
	tap_ok(!dp_object_function_by_name(obj, "no_such_function_here") && errno == ENOENT,
	       "libz.so.1: an unknown name gives ENOENT");
	tap_ok(fn->nrets > 0 && fn->rets[0].addr >= fn->start &&
	       fn->rets[fn->nrets - 1].addr < fn->start + fn->size,
	       "libz.so.1: deflate's %u return sites lie inside it", fn->nrets);
out:
	dp_object_close(obj);
}

/* ---- corrupt input ----------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int file_write(const char *path, const uint8_t *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, buf, len);
	close(fd);
	return w == (ssize_t)len ? 0 : -EIO;
}

static uint8_t *file_read(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Everything a caller may ask, on an object that opened. */
static void object_exercise(const char *path)
{
	struct dp_object *obj = dp_object_open(path);
	const struct dp_function *fns;
	size_t n;

	if (!obj || dp_object_functions(obj, &fns, &n)) {
		dp_object_close(obj);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct dp_function *fn = &fns[i];

		for (uint32_t k = 0; k < fn->ninsns; k++)
			(void)dp_object_target_kind(obj, fn->start + fn->insn_off[k]);
		for (uint32_t r = 0; r < fn->nrets; r++)
			(void)dp_function_insn_index(fn, fn->rets[r].addr);
		(void)dp_object_function_at(obj, fn->start);
	}
	(void)dp_object_function_by_name(obj, "main");
	(void)dp_object_function_by_name(obj, "dispatch_dense");
	dp_object_close(obj);
}

/* Runs object_exercise in a child: true when it ended normally. */
static bool survives(const char *path)
{
	int status;
	pid_t pid = tap_fork();

	if (pid < 0)
		return false;
	if (pid == 0) {
		object_exercise(path);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void check_corrupt(const char *src, const char *tmpdir)
{
	char path[4096];
	size_t len, sizes[16], nsizes = 0;
	unsigned bad = 0, errors = 0;
	uint8_t *orig = file_read(src, &len), *buf;

	if (!tap_ok(orig != NULL && len > 4096, "read %s for corruption", src)) {
		free(orig);
		return;
	}
	snprintf(path, sizeof(path), "%s/corrupt.so", tmpdir);
	buf = malloc(len);
	static const size_t small[] = { 0, 1, 4, 16, 63, 64, 200 };

	for (size_t s = 0; s < sizeof(small) / sizeof(small[0]); s++)
		sizes[nsizes++] = small[s];
	for (size_t d = 8; d >= 2; d /= 2)
		sizes[nsizes++] = len / d;
	sizes[nsizes++] = len - 64;
	sizes[nsizes++] = len - 1;
	for (size_t s = 0; s < nsizes; s++) {
		struct dp_object *obj;

		file_write(path, orig, sizes[s]);
		if (!survives(path)) {
			bad++;
			tap_diag("%s truncated to %zu bytes crashed the analysis", src, sizes[s]);
			continue;
		}
		obj = dp_object_open(path);
		if (!obj) {
			errors++;
		} else {
			const struct dp_function *fns;
			size_t n;

			errors += dp_object_functions(obj, &fns, &n) != 0;
		}
		dp_object_close(obj);
	}
	tap_ok(!bad && errors == nsizes, "%s truncated at %zu sizes: no crash, %u errors", src,
	       nsizes, errors);

	bad = 0;
	for (unsigned round = 0; round < FLIP_ROUNDS; round++) {
		unsigned flips = 1 + (unsigned)(rng_next() % 16);

		memcpy(buf, orig, len);
		for (unsigned f = 0; f < flips; f++) {
			/* Half the flips hit the headers, where the structure lives. */
			size_t at = rng_next() & 1 ? rng_next() % 256 : rng_next() % len;

			buf[at] ^= (uint8_t)(1 + rng_next() % 255);
		}
		/* Some rounds also corrupt the section header table. */
		if (round % 4 == 3) {
			GElf_Ehdr *eh = (GElf_Ehdr *)buf;

			if (eh->e_shoff < len)
				for (unsigned f = 0; f < 8; f++)
					buf[eh->e_shoff + rng_next() % (len - eh->e_shoff)] ^=
						(uint8_t)(1 + rng_next() % 255);
		}
		file_write(path, buf, len);
		if (!survives(path)) {
			bad++;
			tap_diag("%s: flip round %u crashed the analysis", src, round);
		}
	}
	tap_ok(!bad, "%s with random bytes flipped, %u rounds: no crash", src, FLIP_ROUNDS);
	unlink(path);
	free(buf);
	free(orig);
}

/* Every byte of .eh_frame and .gcc_except_table in turn, of a small object. */
static void check_corrupt_lsda(const char *src, const char *tmpdir)
{
	char path[4096];
	size_t len;
	unsigned bad = 0, rounds = 0;
	uint8_t *orig = file_read(src, &len), *buf;
	struct dp_object *obj = dp_object_open(src);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!tap_ok(orig && obj && !elf_getshdrstrndx(elf_of(obj), &shstrndx),
		    "read %s for LSDA corruption", src)) {
		free(orig);
		dp_object_close(obj);
		return;
	}
	snprintf(path, sizeof(path), "%s/corrupt-eh", tmpdir);
	buf = malloc(len);
	while ((scn = elf_nextscn(elf_of(obj), scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(elf_of(obj), shstrndx, sh.sh_name)) ||
		    (strcmp(name, ".eh_frame") && strcmp(name, ".gcc_except_table")))
			continue;
		for (uint64_t off = 0; off < sh.sh_size && sh.sh_offset + off < len; off++) {
			memcpy(buf, orig, len);
			buf[sh.sh_offset + off] ^= (uint8_t)(rng_next() % 2 ? 0xff : 0x80);
			file_write(path, buf, len);
			rounds++;
			if (!survives(path)) {
				bad++;
				tap_diag("%s: byte %#" PRIx64 " of %s crashed the analysis", src,
					 off, name);
			}
		}
	}
	tap_ok(rounds && !bad, "%s: each byte of .eh_frame and .gcc_except_table flipped, %u "
	       "rounds: no crash", src, rounds);
	unlink(path);
	free(buf);
	free(orig);
	dp_object_close(obj);
}

static void check_not_elf(const char *tmpdir)
{
	char path[4096];
	static const char text[] = "#!/bin/sh\necho this is not an ELF object\n";

	struct dp_object *obj;
	int err;

	snprintf(path, sizeof(path), "%s/text", tmpdir);
	file_write(path, (const uint8_t *)text, sizeof(text) - 1);
	obj = dp_object_open(path);
	err = errno;
	tap_ok(!obj && err == DP_ELF_ENOTELF, "a text file gives ENOEXEC (%s)", strerror(err));
	obj = dp_object_open(tmpdir);
	err = errno;
	tap_ok(!obj && err == EISDIR, "a directory gives EISDIR (%s)", strerror(err));
	obj = dp_object_open("/nonexistent/object.so");
	err = errno;
	tap_ok(!obj && err == ENOENT, "a missing file gives ENOENT (%s)", strerror(err));
	unlink(path);
}

int main(void)
{
	char tmpdir[] = "/tmp/test-analysis.XXXXXX";
	const char *seed_env = getenv("DP_SEED");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL);

	rng_state = seed ? seed : 1;
	tap_diag("seed %" PRIu64 " (DP_SEED=%" PRIu64 " replays this run)", seed, seed);
	if (!mkdtemp(tmpdir)) {
		tap_ok(false, "temporary directory: %s", strerror(errno));
		return tap_done();
	}

	check_switch_fixture("fixture-switch.so", true);
	check_switch_fixture("fixture-switch-cet.so", true);
	check_switch_fixture("fixture-switch-nopie", false);
	check_switch_fixture("fixture-switch-pie", true);
	check_stripped_main("fixture-switch-nopie.stripped", "fixture-switch-nopie");
	check_stripped_main("fixture-switch-pie.stripped", "fixture-switch-pie");
	check_ls_main();
	check_eh_fixture();
	check_libstdcxx_pads();
	check_libz();

	check_system_object(LIBDIR "/libc.so.6", true);
	check_system_object(LIBDIR "/libstdc++.so.6", false);
	check_system_object("/usr/bin/bash", false);
	check_system_object("/usr/bin/sqlite3", false);
	check_system_object(LIBDIR "/libsqlite3.so.0", false);
	check_system_object("/usr/bin/gzip", false);

	check_not_elf(tmpdir);
	check_corrupt(fixture("fixture-switch.so"), tmpdir);
	check_corrupt(LIBDIR "/libz.so.1", tmpdir);
	check_corrupt_lsda(fixture("fixture-eh"), tmpdir);

	rmdir(tmpdir);
	return tap_done();
}
