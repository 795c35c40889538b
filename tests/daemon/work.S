/*
 * The probed function of the daemon tests, in assembly so that its layout
 * is the same with every compiler: entry, a loop, a point in the middle
 * (dp_work_mid) where the arguments are still in rdi and rsi, and two
 * return sites (`pop; ret`, each too short for a jump of its own; the
 * second, dp_work+0x38, is a label whose address dp_work_exit_ref takes, so
 * no jump window may hold it past its first byte: it is the int3 site the
 * tests need).
 *
 *   long dp_work(long tid, long seq)
 *       mix = seq, 4 times mix = mix * 31 + tid
 *       return seq << 20 | tid << 16 | (mix & 0xffff)
 * so that a return event's value names its call.
 */
	.text
	.globl	dp_work
	.type	dp_work, @function
dp_work:
	push	%rbx
	mov	%rsi, %rax
	mov	$4, %ecx
1:	imul	$31, %rax, %rax
	add	%rdi, %rax
	dec	%ecx
	jnz	1b
	.globl	dp_work_mid
dp_work_mid:
	mov	%rax, %rbx
	and	$0xffff, %ebx
	mov	%rsi, %rax
	shl	$20, %rax
	mov	%rdi, %rdx
	shl	$16, %rdx
	or	%rdx, %rax
	or	%rbx, %rax
	test	$1, %bl
	jnz	.Ldp_work_odd
	pop	%rbx
	ret
.Ldp_work_odd:
	pop	%rbx
	ret
	.size	dp_work, .-dp_work

/* Never called: a function whose only instruction cannot be moved, for
 * the refusal of a probe site. */
	.globl	dp_never
	.type	dp_never, @function
dp_never:
	ud2
	.size	dp_never, .-dp_never

/* Never called: holds the address of dp_work's second exit, as a table of
 * a computed goto would, so that a pointer may reach it. */
	.globl	dp_work_exit_ref
	.type	dp_work_exit_ref, @function
dp_work_exit_ref:
	lea	.Ldp_work_odd(%rip), %rax
	ret
	.size	dp_work_exit_ref, .-dp_work_exit_ref

	.section .note.GNU-stack, "", @progbits
