/* jrcxz (rel8 only) displaced.
 * long dp_c_jrcxz(long, long, long, long n): n == 0 ? -7 : 2n */
#include "corpus.h"
FUNC(dp_c_jrcxz)
	jrcxz 1f
	lea rax, [rcx + rcx]
	ret
1:	mov rax, -7
	ret
END(dp_c_jrcxz)
