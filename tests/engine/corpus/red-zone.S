/* A leaf that keeps 16 values in the red zone, [rsp-8] .. [rsp-128], across
 * a probed site: the trampoline must not write below the probed rsp.
 * long dp_c_redzone(long x): the sum of x + k for k = 0..15, plus x + 3 */
#include "corpus.h"
FUNC(dp_c_redzone)
	.irp k, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	lea rax, [rdi + \k]
	mov qword ptr [rsp - 8 - 8 * \k], rax
	.endr
SITE(dp_c_redzone_site)
	add rdi, 1
	add rdi, 2
	mov rax, rdi
	.irp k, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	add rax, qword ptr [rsp - 8 - 8 * \k]
	.endr
	ret
END(dp_c_redzone)
