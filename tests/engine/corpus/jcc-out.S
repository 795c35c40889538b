/* A displaced jcc whose target lies outside the function: a conditional
 * tail call, which is also a return site.
 * long dp_c_jcc_out(long x): x < 0 ? dp_c_helper_neg(x) : x + 1 */
#include "corpus.h"
FUNC(dp_c_jcc_out)
	test rdi, rdi
	js dp_c_helper_neg
	lea rax, [rdi + 1]
	ret
END(dp_c_jcc_out)
