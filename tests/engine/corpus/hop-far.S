/* The shape of hop-near.S with no fill within a rel8's reach: 144 bytes of
 * code on either side of the site.  The site keeps an int3 (reason:
 * branch-target, why 5 bytes did not fit).
 * long dp_c_hop_far(long x): 0 for 0, 1 + 48 * 0x1234 for 1,
 * x + 24 * 0x1234 otherwise */
#include "corpus.h"
FUNC(dp_c_hop_far)
	mov rax, rdi
	.rept 24
	add rax, 0x1234
	.endr
	test rdi, rdi
	jz 1f
	cmp rdi, 1
	je 2f
	ret
1:
SITE(dp_c_hop_far_site)
	xor eax, eax
	ret
2:
	.rept 24
	add rax, 0x1234
	.endr
	ret
END(dp_c_hop_far)
