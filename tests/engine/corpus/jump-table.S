/* A switch through a table of rel32 offsets, as compilers emit it: every
 * case is an indirect branch target.
 * long dp_c_switch(unsigned long i): a value per case, -1 past the table */
#include "corpus.h"
FUNC(dp_c_switch)
	cmp rdi, 5
	ja 9f
	lea rdx, [rip + .Ltable]
	movsxd rax, dword ptr [rdx + rdi * 4]
	add rax, rdx
	jmp rax
0:	mov eax, 11
	ret
1:	mov eax, 22
	ret
2:	lea rax, [rdi * 8 + 3]
	ret
3:	mov rax, rdi
	imul rax, rax, 1001
	ret
4:	xor eax, eax
	ret
5:	mov eax, 55
	ret
9:	mov rax, -1
	ret
END(dp_c_switch)

	.section .rodata
	.p2align 2
.Ltable:
	.long 0b - .Ltable, 1b - .Ltable, 2b - .Ltable, 3b - .Ltable
	.long 4b - .Ltable, 5b - .Ltable
