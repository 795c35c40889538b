/*
 * Fixture for test-analysis: switch statements dense enough that the
 * compiler emits jump tables, every case calling a function of its own so
 * the test can find each case block from outside; plus hand-written
 * functions whose bytes are known: return sites of every kind, jump tables
 * with and without a bounds check, and a byte that does not decode.
 *
 * Built as a PIC shared library, a CET shared library (notrack jmp), and
 * (with FIXTURE_MAIN) non-PIE and PIE executables, stripped and not.
 */
#ifdef __clang__
#define NOINLINE __attribute__((noinline, used))
#else
#define NOINLINE __attribute__((noinline, noclone, used))
#endif

volatile int sink;

/* Local, so that calls reach them directly rather than through the PLT. */
#define CASE_FN(n) static NOINLINE int case_##n(int x) { sink = n; return x * 3 + n; }
CASE_FN(0) CASE_FN(1) CASE_FN(2) CASE_FN(3) CASE_FN(4) CASE_FN(5)
CASE_FN(6) CASE_FN(7) CASE_FN(8) CASE_FN(9) CASE_FN(10) CASE_FN(11)

/* Cases 0..11: the plain bounds check and table. */
NOINLINE int dispatch_dense(int x, int y)
{
	int r;

	switch (x) {
	case 0: r = case_0(y); break;
	case 1: r = case_1(y); break;
	case 2: r = case_2(y); break;
	case 3: r = case_3(y); break;
	case 4: r = case_4(y); break;
	case 5: r = case_5(y); break;
	case 6: r = case_6(y); break;
	case 7: r = case_7(y); break;
	case 8: r = case_8(y); break;
	case 9: r = case_9(y); break;
	case 10: r = case_10(y); break;
	case 11: r = case_11(y); break;
	default: r = -1; break;
	}
	return r * 2;
}

/* Cases 'a'..'l': the index is rebased (sub) before the check. */
NOINLINE int dispatch_offset(int c, int y)
{
	int r;

	switch (c) {
	case 'a': r = case_0(y); break;
	case 'b': r = case_1(y); break;
	case 'c': r = case_2(y); break;
	case 'd': r = case_3(y); break;
	case 'e': r = case_4(y); break;
	case 'f': r = case_5(y); break;
	case 'g': r = case_6(y); break;
	case 'h': r = case_7(y); break;
	case 'i': r = case_8(y); break;
	case 'j': r = case_9(y); break;
	case 'k': r = case_10(y); break;
	case 'l': r = case_11(y); break;
	default: r = 0; break;
	}
	return r + c;
}

/* Tail calls from the table: entries point at jmp instructions. */
NOINLINE int dispatch_tail(unsigned x, int y)
{
	switch (x) {
	case 0: return case_0(y);
	case 1: return case_1(y);
	case 2: return case_2(y);
	case 3: return case_3(y);
	case 4: return case_4(y);
	case 5: return case_5(y);
	case 6: return case_6(y);
	case 7: return case_7(y);
	case 8: return case_8(y);
	default: return 0;
	}
}

/* A switch in a loop over bytes: movzbl index, table base kept in a register. */
NOINLINE int dispatch_loop(const unsigned char *s, int n)
{
	int acc = 0;

	for (int i = 0; i < n; i++) {
		switch (s[i] & 15) {
		case 0: acc += case_0(acc); break;
		case 1: acc += case_1(acc); break;
		case 2: acc += case_2(acc); break;
		case 3: acc += case_3(acc); break;
		case 4: acc += case_4(acc); break;
		case 5: acc += case_5(acc); break;
		case 6: acc += case_6(acc); break;
		case 7: acc += case_7(acc); break;
		case 8: acc += case_8(acc); break;
		case 9: acc += case_9(acc); break;
		case 10: acc += case_10(acc); break;
		default: acc += case_11(acc); break;
		}
	}
	return acc;
}

/*
 * Indirect jmps that are tail calls: through a function pointer read from
 * memory, and through what a call returned once the frame is torn down
 * (pop; jmp).  In a position-independent object they leave the function
 * for good; threaded() jumps through pointers too, but to its own labels
 * (gcc's &&label), whose addresses its table holds.
 */
struct tc_ops {
	int (*fn)(int);
};
typedef int (*tc_fn)(int);

NOINLINE int tail_through_pointer(const struct tc_ops *o, int x)
{
	return o->fn(x + 1);
}

NOINLINE tc_fn tail_pick(int x)
{
	return x ? case_1 : case_2;
}

NOINLINE int tail_after_call(int x)
{
	tc_fn f = tail_pick(x);

	sink = x;
	return f(x + 1);
}

NOINLINE int threaded(const unsigned char *ops, int n, int x)
{
	static void *const labels[] = { &&op_add, &&op_mul, &&op_xor, &&op_end };
	void *code[16];
	void *const *pc = code;

	for (int i = 0; i < n && i < 15; i++)
		code[i] = labels[ops[i] & 3];
	code[n < 15 ? n : 15] = &&op_end;
	goto **pc++;
op_add:
	x += 3;
	goto **pc++;
op_mul:
	x *= 5;
	goto **pc++;
op_xor:
	x ^= 0x5a;
	goto **pc++;
op_end:
	return x;
}

/*
 * Hand-written: rets_known has, in this order, a jcc and a jmp leaving the
 * function, ret, rep ret, ret $8 and an indirect jmp that is no table.
 * tail_arg jumps to the function its first argument names, its frame
 * gone; tail_arg_framed does the same with a register still pushed, which
 * no tail call does.  The parted_* functions have a .cold part (as gcc
 * splits them): parted_back's part comes back into it before its tail call
 * through an argument, parted_tail's part makes that tail call itself;
 * parted_sum's part adds to the register it then jumps through, and
 * parted_called's part is called from elsewhere too, so that their jmps
 * may land anywhere.  asm_table is a PIC table read with the lea-add idiom
 * of hand-written code; asm_table_nobound has no bounds check and its table is followed by
 * a word that points nowhere.  with_data holds an undecodable byte (06,
 * push es, invalid in 64-bit mode) after its ret.
 */
__asm__(
	"	.text\n"
	"	.globl rets_known\n"
	"	.type rets_known, @function\n"
	"rets_known:\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	cmp $1, %edi\n"
	"	je 2f\n"
	"	cmp $2, %edi\n"
	"	je 3f\n"
	"	cmp $3, %edi\n"
	"	jne case_0\n"
	"	jmp case_1\n"
	"1:	ret\n"
	"2:	rep ret\n"
	"3:	ret $8\n"
	"	jmp *%rax\n"
	"	.size rets_known, .-rets_known\n"
	"\n"
	"	.globl tail_arg\n"
	"	.type tail_arg, @function\n"
	"tail_arg:\n"
	"	mov %rdi, %rax\n"
	"	mov %esi, %edi\n"
	"	jmp *%rax\n"
	"	.size tail_arg, .-tail_arg\n"
	"\n"
	"	.globl tail_arg_framed\n"
	"	.type tail_arg_framed, @function\n"
	"tail_arg_framed:\n"
	"	push %rbx\n"
	"	mov %rdi, %rax\n"
	"	mov %esi, %edi\n"
	"	jmp *%rax\n"
	"	.size tail_arg_framed, .-tail_arg_framed\n"
	"\n"
	"	.globl asm_table\n"
	"	.type asm_table, @function\n"
	"asm_table:\n"
	"	cmp $3, %edi\n"
	"	ja 9f\n"
	"	mov %edi, %edi\n"
	"	lea asm_tbl(%rip), %r11\n"
	"	movslq (%r11,%rdi,4), %rdx\n"
	"	lea (%r11,%rdx), %rdx\n"
	"	jmp *%rdx\n"
	"10:	mov $0x1111, %eax\n"
	"	ret\n"
	"11:	mov $0x2222, %eax\n"
	"	ret\n"
	"12:	mov $0x3333, %eax\n"
	"	ret\n"
	"13:	mov $0x4444, %eax\n"
	"	ret\n"
	"9:	xor %eax, %eax\n"
	"	ret\n"
	"	.size asm_table, .-asm_table\n"
	"\n"
	"	.globl asm_table_nobound\n"
	"	.type asm_table_nobound, @function\n"
	"asm_table_nobound:\n"
	"	and $3, %edi\n"
	"	lea asm_tbl2(%rip), %rcx\n"
	"	movslq (%rcx,%rdi,4), %rax\n"
	"	add %rcx, %rax\n"
	"	notrack jmp *%rax\n"
	"20:	mov $0x5555, %eax\n"
	"	ret\n"
	"21:	mov $0x6666, %eax\n"
	"	ret\n"
	"22:	mov $0x7777, %eax\n"
	"	ret\n"
	"23:	mov $0x8888, %eax\n"
	"	ret\n"
	"	.size asm_table_nobound, .-asm_table_nobound\n"
	"\n"
	"	.globl parted_back\n"
	"	.type parted_back, @function\n"
	"parted_back:\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"	test %esi, %esi\n"
	"	js parted_back.cold\n"
	"30:	mov %esi, %edi\n"
	"	mov %rbx, %rax\n"
	"	pop %rbx\n"
	"	jmp *%rax\n"
	"	.size parted_back, .-parted_back\n"
	"	.type parted_back.cold, @function\n"
	"parted_back.cold:\n"
	"	neg %esi\n"
	"	jmp 30b\n"
	"	.size parted_back.cold, .-parted_back.cold\n"
	"\n"
	"	.globl parted_tail\n"
	"	.type parted_tail, @function\n"
	"parted_tail:\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"	test %esi, %esi\n"
	"	js parted_tail.cold\n"
	"	xor %eax, %eax\n"
	"	pop %rbx\n"
	"	ret\n"
	"	.size parted_tail, .-parted_tail\n"
	"	.type parted_tail.cold, @function\n"
	"parted_tail.cold:\n"
	"	mov %rbx, %rax\n"
	"	pop %rbx\n"
	"	jmp *%rax\n"
	"	.size parted_tail.cold, .-parted_tail.cold\n"
	"\n"
	"	.globl parted_sum\n"
	"	.type parted_sum, @function\n"
	"parted_sum:\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"	test %esi, %esi\n"
	"	js parted_sum.cold\n"
	"31:	mov %rbx, %rax\n"
	"	pop %rbx\n"
	"	jmp *%rax\n"
	"	.size parted_sum, .-parted_sum\n"
	"	.type parted_sum.cold, @function\n"
	"parted_sum.cold:\n"
	"	add $16, %rbx\n"
	"	jmp 31b\n"
	"	.size parted_sum.cold, .-parted_sum.cold\n"
	"\n"
	"	.globl parted_called\n"
	"	.type parted_called, @function\n"
	"parted_called:\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"	test %esi, %esi\n"
	"	js parted_called.cold\n"
	"32:	mov %rbx, %rax\n"
	"	pop %rbx\n"
	"	jmp *%rax\n"
	"	.size parted_called, .-parted_called\n"
	"	.type parted_called.cold, @function\n"
	"parted_called.cold:\n"
	"	neg %esi\n"
	"	jmp 32b\n"
	"	.size parted_called.cold, .-parted_called.cold\n"
	"	.globl calls_a_part\n"
	"	.type calls_a_part, @function\n"
	"calls_a_part:\n"
	"	call parted_called.cold\n"
	"	ret\n"
	"	.size calls_a_part, .-calls_a_part\n"
	"\n"
	"	.globl with_data\n"
	"	.type with_data, @function\n"
	"with_data:\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"	.byte 0x06\n"
	"	nop\n"
	"	.size with_data, .-with_data\n"
	"\n"
	"	.section .rodata\n"
	"	.balign 4\n"
	"asm_tbl:\n"
	"	.long 10b - asm_tbl, 11b - asm_tbl, 12b - asm_tbl, 13b - asm_tbl\n"
	"asm_tbl2:\n"
	"	.long 20b - asm_tbl2, 21b - asm_tbl2, 22b - asm_tbl2, 23b - asm_tbl2\n"
	"	.long 0x7ffffff0\n"
	"	.text\n");

#if !defined(__PIC__) && !defined(__PIE__)
/*
 * Position-dependent only: labels whose addresses no relocation shows.
 * held_imm names its label in an immediate (mov $label), held_word in a
 * data word at an offset that is a multiple of 4 but not of 8, held_text
 * in a word of .text that no function holds; each then jumps through a
 * pointer read from memory, which looks like a tail call but may reach
 * that label.  held_number is an SDT-like nop and a mov whose middle a data
 * word names: a number that looks like an address, no label.
 */
__asm__(
	"	.text\n"
	"	.globl held_imm\n"
	"	.type held_imm, @function\n"
	"held_imm:\n"
	"	mov $1f, %ecx\n"
	"	mov %rcx, (%rdi)\n"
	"	mov (%rsi), %rax\n"
	"	jmp *%rax\n"
	"1:	mov $1, %eax\n"
	"	ret\n"
	"	.size held_imm, .-held_imm\n"
	"\n"
	"	.globl held_word\n"
	"	.type held_word, @function\n"
	"held_word:\n"
	"	mov (%rsi), %rax\n"
	"	jmp *%rax\n"
	"2:	mov $2, %eax\n"
	"	ret\n"
	"	.size held_word, .-held_word\n"
	"\n"
	"	.data\n"
	"	.balign 8\n"
	"	.long 0\n"
	"held_word_label:\n"
	"	.quad 2b\n"
	"	.text\n"
	"	.globl held_text\n"
	"	.type held_text, @function\n"
	"held_text:\n"
	"	mov (%rsi), %rax\n"
	"	jmp *%rax\n"
	"3:	mov $3, %eax\n"
	"	ret\n"
	"	.size held_text, .-held_text\n"
	"	.balign 8\n"
	"	.quad 3b\n"
	"	.globl held_number\n"
	"	.type held_number, @function\n"
	"held_number:\n"
	"	nop\n"
	"	mov $0x12345678, %eax\n"
	"	ret\n"
	"	.size held_number, .-held_number\n"
	"	.data\n"
	"	.balign 8\n"
	"	.quad held_number + 3\n"
	"	.text\n");
#endif

#ifdef FIXTURE_MAIN
int rets_known(int x);
int asm_table(int x);
int asm_table_nobound(int x);
int with_data(void);

int main(int argc, char **argv)
{
	int r = dispatch_dense(argc, 1) + dispatch_offset(argv[0][0], 2) +
		dispatch_tail((unsigned)argc, 3) +
		dispatch_loop((const unsigned char *)argv[0], argc);

	static const struct tc_ops ops = { case_3 };

	r += asm_table(argc) + asm_table_nobound(argc) + with_data();
	r += tail_through_pointer(&ops, argc) + tail_after_call(argc) +
	     threaded((const unsigned char *)argv[0], argc, argc);
	return r & 1;
}
#endif
