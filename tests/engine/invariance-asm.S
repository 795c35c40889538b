/*
 * The invariance test's machine: loads the whole state from a block, runs a
 * probed instruction, stores the whole state to another block.  Between the
 * load and the store, nothing but the probed instruction and flag-neutral
 * moves run, so two runs from the same block give identical blocks unless a
 * probe changed something.
 *
 *   void dp_inv_run_nop(const void *in, void *out, int kind)  site: 5-byte nop
 *   void dp_inv_run_rip(const void *in, void *out, int kind)  site: lea r11, [rip + x]
 *
 * kind: INV_KIND_* (which vector registers exist).  The sites are the
 * global labels dp_inv_site_nop and dp_inv_site_rip.
 *
 * Built a second time with INV_NO_EVEX into inv-lean.so, an object with no
 * instruction naming zmm16-31 or k0-7 (kind AVX512 runs as AVX there), for
 * the trampolines that leave those out (DP_VEC_AVX512_LOW); the executable's
 * copy has dp_inv_lean_wrap too, which holds zmm0-31 and k1 around a call
 * into it.
 */
#include "corpus/corpus.h"
#include "invariance.h"

	.bss
	.p2align 3
inv_out:	.zero 8
inv_kind:	.zero 8
inv_scratch:	.zero 8
	.data
	.p2align 3
	.globl dp_inv_data
dp_inv_data:	.quad 0x0123456789abcdef
sane_mxcsr:	.long 0x1f80
sane_fcw:	.short 0x037f

.macro INV_RUN name, site
FUNC(\name)
	push rbx
	push rbp
	push r12
	push r13
	push r14
	push r15
	sub rsp, 8
	mov qword ptr [rip + inv_out], rsi
	mov dword ptr [rip + inv_kind], edx
	mov rax, rdi

	/* Vector and control state. */
	cmp edx, INV_KIND_AVX512
	je 3f
	cmp edx, INV_KIND_AVX
	je 2f
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu xmm\i, xmmword ptr [rax + INV_VEC + 64 * \i]
	.endr
	jmp 4f
2:	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu ymm\i, ymmword ptr [rax + INV_VEC + 64 * \i]
	.endr
	jmp 4f
3:
#ifdef INV_NO_EVEX
	jmp 2b
#else
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 zmm\i, zmmword ptr [rax + INV_VEC + 64 * \i]
	.endr
	.irp i, 0,1,2,3,4,5,6,7
	kmovq k\i, qword ptr [rax + INV_K + 8 * \i]
	.endr
#endif
4:	ldmxcsr dword ptr [rax + INV_MXCSR]
	fninit
	fld tbyte ptr [rax + INV_X87 + 32]
	fld tbyte ptr [rax + INV_X87 + 16]
	fld tbyte ptr [rax + INV_X87]
	fldcw word ptr [rax + INV_FCW]

	/* rflags (through the stack, before the red zone is filled), the
	 * red zone, then the general registers, rax last. */
	push qword ptr [rax + INV_RFLAGS]
	popfq
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	mov rcx, qword ptr [rax + INV_RZ + 8 * \i]
	mov qword ptr [rsp - 128 + 8 * \i], rcx
	.endr
	mov rcx, qword ptr [rax + 8]
	mov rdx, qword ptr [rax + 16]
	mov rbx, qword ptr [rax + 24]
	mov rbp, qword ptr [rax + 40]
	mov rsi, qword ptr [rax + 48]
	mov rdi, qword ptr [rax + 56]
	mov r8, qword ptr [rax + 64]
	mov r9, qword ptr [rax + 72]
	mov r10, qword ptr [rax + 80]
	mov r11, qword ptr [rax + 88]
	mov r12, qword ptr [rax + 96]
	mov r13, qword ptr [rax + 104]
	mov r14, qword ptr [rax + 112]
	mov r15, qword ptr [rax + 120]
	mov rax, qword ptr [rax]

	\site

	/* Everything back out, in an order that changes nothing not yet
	 * stored: rax through memory, the red zone before any push. */
	mov qword ptr [rip + inv_scratch], rax
	mov rax, qword ptr [rip + inv_out]
	mov qword ptr [rax + 8], rcx
	mov qword ptr [rax + 16], rdx
	mov qword ptr [rax + 24], rbx
	mov qword ptr [rax + 32], rsp
	mov qword ptr [rax + 40], rbp
	mov qword ptr [rax + 48], rsi
	mov qword ptr [rax + 56], rdi
	mov qword ptr [rax + 64], r8
	mov qword ptr [rax + 72], r9
	mov qword ptr [rax + 80], r10
	mov qword ptr [rax + 88], r11
	mov qword ptr [rax + 96], r12
	mov qword ptr [rax + 104], r13
	mov qword ptr [rax + 112], r14
	mov qword ptr [rax + 120], r15
	mov rcx, qword ptr [rip + inv_scratch]
	mov qword ptr [rax], rcx
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	mov rcx, qword ptr [rsp - 128 + 8 * \i]
	mov qword ptr [rax + INV_RZ + 8 * \i], rcx
	.endr
	pushfq
	pop rcx
	mov qword ptr [rax + INV_RFLAGS], rcx
	stmxcsr dword ptr [rax + INV_MXCSR]
	fnstcw word ptr [rax + INV_FCW]
	fnstsw word ptr [rax + INV_FSW]
	fstp tbyte ptr [rax + INV_X87]
	fstp tbyte ptr [rax + INV_X87 + 16]
	fstp tbyte ptr [rax + INV_X87 + 32]
	mov ecx, dword ptr [rip + inv_kind]
	cmp ecx, INV_KIND_AVX512
	je 7f
	cmp ecx, INV_KIND_AVX
	je 6f
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu xmmword ptr [rax + INV_VEC + 64 * \i], xmm\i
	.endr
	jmp 8f
6:	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu ymmword ptr [rax + INV_VEC + 64 * \i], ymm\i
	.endr
	vzeroupper
	jmp 8f
7:
#ifdef INV_NO_EVEX
	jmp 6b
#else
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 zmmword ptr [rax + INV_VEC + 64 * \i], zmm\i
	.endr
	.irp i, 0,1,2,3,4,5,6,7
	kmovq qword ptr [rax + INV_K + 8 * \i], k\i
	.endr
	vzeroupper
#endif

	/* What the C caller expects back. */
8:	cld
	ldmxcsr dword ptr [rip + sane_mxcsr]
	fldcw word ptr [rip + sane_fcw]
	add rsp, 8
	pop r15
	pop r14
	pop r13
	pop r12
	pop rbp
	pop rbx
	ret
END(\name)
.endm

.macro SITE_NOP
SITE(dp_inv_site_nop)
	nop dword ptr [rax + rax + 0]
.endm

.macro SITE_RIP
SITE(dp_inv_site_rip)
	lea r11, [rip + dp_inv_data]
.endm

/*
 * A 2-byte nop that only a jmp rel32 reaches, a branch target right after
 * it and no fill in a rel8's reach: no window or hop fits, a redirect does.
 * The site is 7 bytes past the label (no symbol on it: a label whose
 * address the program takes is a target of its own kind).
 */
.macro SITE_REDIRECT
SITE(dp_inv_site_redirect_jmp)
	.byte 0xe9
	.long 1f - (. + 4)
	.byte 0xeb
	.byte 2f - (. + 1)	/* never runs: makes 2 a target */
1:	xchg ax, ax
2:
.endm

/*
 * A 2-byte nop that a jmp rel32 reaches and that the instruction before it
 * would fall into (it never runs), a branch target right after it: its
 * window must start before it and hold it past its first byte, the jmp led
 * into the trampoline.  The site is 11 bytes past the label.
 */
.macro SITE_LED
SITE(dp_inv_site_led_jmp)
	.byte 0xe9
	.long 1f - (. + 4)
	.byte 0xeb
	.byte 2f - (. + 1)	/* never runs: makes 2 a target */
	.byte 0x4d, 0x8d, 0x5b, 0x00	/* lea r11, [r11 + 0]: never runs */
1:	xchg ax, ax
2:
.endm

INV_RUN dp_inv_run_nop, SITE_NOP
INV_RUN dp_inv_run_rip, SITE_RIP
#ifndef INV_NO_EVEX
INV_RUN dp_inv_run_redirect, SITE_REDIRECT
INV_RUN dp_inv_run_led, SITE_LED

/*
 * void dp_inv_lean_wrap(void (*run)(const void *, void *, int), const void *in,
 *                       void *out, const void *zin, void *zout)
 * Loads zmm0-31 and k1 from zin (32 slots of 64 bytes, then k1), calls
 * run(in, out, INV_KIND_SSE) (legacy SSE moves only: bits 128-511 of
 * zmm0-15 pass through it untouched), and stores zmm0-31 and k1 to zout.
 */
FUNC(dp_inv_lean_wrap)
	push rbx
	push r12
	push r13
	mov rbx, rcx
	mov r12, r8
	mov rax, rdi
	mov rdi, rsi
	mov rsi, rdx
	mov edx, INV_KIND_SSE
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 zmm\i, zmmword ptr [rbx + 64 * \i]
	.endr
	kmovq k1, qword ptr [rbx + 64 * 32]
	call rax
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 zmmword ptr [r12 + 64 * \i], zmm\i
	.endr
	kmovq qword ptr [r12 + 64 * 32], k1
	vzeroupper
	pop r13
	pop r12
	pop rbx
	ret
END(dp_inv_lean_wrap)
#endif
