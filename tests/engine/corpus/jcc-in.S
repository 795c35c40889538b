/* A jcc rel8 displaced with the window, its target further on in the
 * function: it must become a rel32 to the original target.
 * long dp_c_jcc_in(long x): x < 0 ? 3 - x : 2x */
#include "corpus.h"
FUNC(dp_c_jcc_in)
	test rdi, rdi
	js 1f
	lea rax, [rdi + rdi]
	ret
1:	neg rdi
	lea rax, [rdi + 3]
	ret
END(dp_c_jcc_in)
