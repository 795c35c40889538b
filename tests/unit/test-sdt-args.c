/*
 * SDT argument specs (spec/sdt.h): every operand form <sys/sdt.h> lets the
 * assembler write, each compared with its fields and its described form,
 * and malformed specs refused with the spec and what was expected.
 */
#include <errno.h>
#include <string.h>

#include "spec/sdt.h"
#include "tap.h"

struct good {
	const char *arg;
	const char *shown;	/* dp_spec_sdt_arg_format */
	enum dp_sdt_arg_kind kind;
	uint8_t size;
	bool is_signed, is_float;
};

static const struct good goods[] = {
	{ "-4@%edi", "int32 rdi (low 4 bytes)", DP_SDT_ARG_REG, 4, true, false },
	{ "4@%edi", "uint32 rdi (low 4 bytes)", DP_SDT_ARG_REG, 4, false, false },
	{ "8@%rax", "uint64 rax", DP_SDT_ARG_REG, 8, false, false },
	{ "-8@%rax", "int64 rax", DP_SDT_ARG_REG, 8, true, false },
	{ "2@%ax", "uint16 rax (low 2 bytes)", DP_SDT_ARG_REG, 2, false, false },
	{ "-2@%si", "int16 rsi (low 2 bytes)", DP_SDT_ARG_REG, 2, true, false },
	{ "1@%al", "uint8 rax (low 1 bytes)", DP_SDT_ARG_REG, 1, false, false },
	{ "-1@%sil", "int8 rsi (low 1 bytes)", DP_SDT_ARG_REG, 1, true, false },
	{ "1@%dil", "uint8 rdi (low 1 bytes)", DP_SDT_ARG_REG, 1, false, false },
	{ "1@%bpl", "uint8 rbp (low 1 bytes)", DP_SDT_ARG_REG, 1, false, false },
	{ "1@%spl", "uint8 rsp (low 1 bytes)", DP_SDT_ARG_REG, 1, false, false },
	{ "1@%ah", "uint8 rax bits 8-15", DP_SDT_ARG_REG, 1, false, false },
	{ "8@%r8", "uint64 r8", DP_SDT_ARG_REG, 8, false, false },
	{ "-4@%r9d", "int32 r9 (low 4 bytes)", DP_SDT_ARG_REG, 4, true, false },
	{ "2@%r10w", "uint16 r10 (low 2 bytes)", DP_SDT_ARG_REG, 2, false, false },
	{ "-1@%r15b", "int8 r15 (low 1 bytes)", DP_SDT_ARG_REG, 1, true, false },
	{ "4@%rdx", "uint32 rdx", DP_SDT_ARG_REG, 4, false, false },
	{ "8f@%xmm0", "double xmm0", DP_SDT_ARG_REG, 8, true, true },
	{ "4f@%xmm15", "float xmm15", DP_SDT_ARG_REG, 4, true, true },
	{ "8@%xmm1", "double xmm1", DP_SDT_ARG_REG, 8, true, true },
	{ "8@$5", "uint64 $5", DP_SDT_ARG_IMM, 8, false, false },
	{ "-4@$-1", "int32 $-1", DP_SDT_ARG_IMM, 4, true, false },
	{ "8@$0x10", "uint64 $16", DP_SDT_ARG_IMM, 8, false, false },
	{ "8@-8(%rbp)", "uint64 [rbp-0x8]", DP_SDT_ARG_MEM, 8, false, false },
	{ "-4@-20(%rbp)", "int32 [rbp-0x14]", DP_SDT_ARG_MEM, 4, true, false },
	{ "8@(%rsp)", "uint64 [rsp]", DP_SDT_ARG_MEM, 8, false, false },
	{ "8@16(%rsp)", "uint64 [rsp+0x10]", DP_SDT_ARG_MEM, 8, false, false },
	{ "8@(%rax,%rdx,8)", "uint64 [rax+rdx*8]", DP_SDT_ARG_MEM, 8, false, false },
	{ "4@12(%rax,%rdx,4)", "uint32 [rax+rdx*4+0xc]", DP_SDT_ARG_MEM, 4, false, false },
	{ "4@(%rax,%r12)", "uint32 [rax+r12*1]", DP_SDT_ARG_MEM, 4, false, false },
	{ "4@(,%rcx,2)", "uint32 [rcx*2]", DP_SDT_ARG_MEM, 4, false, false },
	{ "-4@counter+40(%rip)", "int32 [rip: counter+0x28]", DP_SDT_ARG_MEM, 4, true, false },
	{ "8@24+mp_(%rip)", "uint64 [rip: mp_+0x18]", DP_SDT_ARG_MEM, 8, false, false },
	{ "8@mp_-8(%rip)", "uint64 [rip: mp_-0x8]", DP_SDT_ARG_MEM, 8, false, false },
	{ "4@counter(%rip)", "uint32 [rip: counter]", DP_SDT_ARG_MEM, 4, false, false },
	{ "8@.LC0(%rip)", "uint64 [rip: .LC0]", DP_SDT_ARG_MEM, 8, false, false },
	{ "8f@-16(%rbp)", "double [rbp-0x10]", DP_SDT_ARG_MEM, 8, true, true },
	{ "4f@x(%rip)", "float [rip: x]", DP_SDT_ARG_MEM, 4, true, true },
	/* Old notes: no SIZE@, the register's width. */
	{ "%eax", "uint32 rax (low 4 bytes)", DP_SDT_ARG_REG, 4, false, false },
	{ "%rsi", "uint64 rsi", DP_SDT_ARG_REG, 8, false, false },
	{ "-8(%rbp)", "uint64 [rbp-0x8]", DP_SDT_ARG_MEM, 8, false, false },
	{ "$7", "uint64 $7", DP_SDT_ARG_IMM, 8, false, false },
};

struct bad {
	const char *spec;
	const char *words;	/* in the message */
};

static const struct bad bads[] = {
	{ "-4@%edj", "unknown register 'edj'" },
	{ "3@%eax", "size 3 is not 1, 2, 4 or 8" },
	{ "16@%rax", "size 16 is not 1, 2, 4 or 8" },
	{ "2f@%xmm0", "a float of 2 bytes" },
	{ "8@%eax", "8 bytes from a 4-byte register view" },
	{ "8@$", "expected an integer after '$'" },
	{ "8@$x", "expected an integer after '$'" },
	{ "8@-8(%ebp)", "unknown address register 'ebp'" },
	{ "8@-8(%rbp", "expected ',' or ')'" },
	{ "8@(%rax,%rdx,3)", "expected a scale of 1, 2, 4 or 8" },
	{ "8@(%rax,%rsp,2)", "%rsp cannot be an index register" },
	{ "8@(%rip,%rax,2)", "%rip takes no index register" },
	{ "8@x(%rip", "expected ',' or ')'" },
	{ "8@()", "expected a base register" },
	{ "8@%xmm16", "unknown register 'xmm16'" },
	{ "8@%rax)", "unexpected ')' after the operand" },
	{ "8@", "expected '$INT', '%REG'" },
	{ "8@foo", "expected '$INT', '%REG'" },
	{ "8@%rflags", "unknown register 'rflags'" },
	{ "8@$99999999999999999999", "expected an integer after '$'" },
	{ "1@%rax 2@%rax 3@%rax", "argument 3 '3@%rax'" },
	{ "%rax %rax %rax %rax %rax %rax %rax %rax %rax %rax %rax %rax %rax", "more than 12 arguments" },
};

int main(void)
{
	struct dp_sdt_args args;
	struct dp_err err = DP_ERR_INIT;
	char shown[128];

	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		const struct dp_sdt_arg *a = &args.v[0];
		int r = dp_spec_sdt_args_parse(g->arg, &args, &err);

		if (r) {
			tap_ok(false, "'%s' parses: %s", g->arg, dp_err_str(&err));
			continue;
		}
		dp_spec_sdt_arg_format(a, shown, sizeof(shown));
		tap_ok(args.n == 1 && a->kind == g->kind && a->size == g->size &&
		       a->is_signed == g->is_signed && a->is_float == g->is_float &&
		       !strcmp(shown, g->shown), "'%s' is %s (got %s)", g->arg, g->shown, shown);
	}

	/* Fields of the forms the listing cannot show whole. */
	dp_spec_sdt_args_parse("-4@counter+40(%rip) 4@12(%rax,%rdx,4) -1@%ah", &args, &err);
	tap_ok(args.n == 3 && args.v[0].base == DP_CTX_REG_RIP && args.v[0].disp == 40 &&
	       !strcmp(args.v[0].symbol, "counter") && args.v[0].index == DP_SDT_REG_NONE,
	       "a %%rip operand keeps its symbol and offset");
	tap_ok(args.v[1].base == 0 && args.v[1].index == 2 && args.v[1].scale == 4 &&
	       args.v[1].disp == 12 && !args.v[1].symbol[0],
	       "base, index, scale and displacement");
	tap_ok(args.v[2].reg == 0 && args.v[2].reg_width == 1 && args.v[2].reg_shift == 8,
	       "%%ah: rax's second byte");
	tap_ok(!dp_spec_sdt_args_parse("", &args, &err) && args.n == 0, "an empty spec: none");
	tap_ok(!dp_spec_sdt_args_parse("  -4@%edi\t8@%rsi  ", &args, &err) && args.n == 2,
	       "blanks and tabs around arguments");
	tap_ok(!dp_spec_sdt_args_parse("-8@$-9223372036854775808 8@$0xffffffffffffffff",
				       &args, &err) && args.v[0].imm == INT64_MIN &&
	       args.v[1].imm == -1, "the extreme constants");
	tap_ok(!dp_spec_sdt_args_parse("1@%al 2@%ax 4@%eax 8@%rax 1@%bl 2@%bx 4@%ebx 8@%rbx "
				       "1@%cl 2@%cx 4@%ecx 8@%rcx", &args, &err) && args.n == 12,
	       "twelve arguments, the most <sys/sdt.h> writes");

	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct bad *b = &bads[i];
		char spec[160];
		int r;

		dp_err_clear(&err);
		r = dp_spec_sdt_args_parse(b->spec, &args, &err);
		snprintf(spec, sizeof(spec), "argument spec '%s': ", b->spec);
		tap_ok(r == -EINVAL && !strncmp(err.msg, spec, strlen(spec)) &&
		       strstr(err.msg, b->words), "'%s' refused: %s", b->spec, err.msg);
	}
	return tap_done();
}
