/* A return site whose window cannot reach 5 bytes: `xor eax, eax; ret` lies
 * between two branch targets.  Two bytes fit: the patch is a jmp rel8 to a
 * jmp rel32 written in the int3 fill between functions (a hop).  The site
 * label marks the xor, the window's first instruction.
 * long dp_c_hop_near(long x): 0 for 0, 7 for 1, 2x otherwise */
#include "corpus.h"
FUNC(dp_c_hop_near)
	test rdi, rdi
	jz 1f
	cmp rdi, 1
	je 2f
	lea rax, [rdi + rdi]
	ret
1:
SITE(dp_c_hop_near_site)
	xor eax, eax
	ret
2:	mov eax, 7
	ret
END(dp_c_hop_near)
	.fill 16, 1, 0xcc
