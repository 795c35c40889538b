/* A function of 3 bytes followed at once by another function: 5 bytes do
 * not fit (reason: short), 2 do, and the fill after the pair takes the hop.
 * long dp_c_short_nopad(long x): (int)x;
 * long dp_c_short_next(long x): (int)x + 1 */
#include "corpus.h"
FUNC(dp_c_short_nopad)
	mov eax, edi
	ret
END(dp_c_short_nopad)
	.globl dp_c_short_next
	.type dp_c_short_next, @function
dp_c_short_next:
	lea eax, [rdi + 1]
	ret
END(dp_c_short_next)
