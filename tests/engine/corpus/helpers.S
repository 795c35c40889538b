/* Callees of the other corpus functions, in their own file so that branches
 * to them are rel32 with a link-time displacement. */
#include "corpus.h"
/* long dp_c_helper_double(long x): 2x */
FUNC(dp_c_helper_double)
	lea rax, [rdi + rdi]
	ret
END(dp_c_helper_double)

/* long dp_c_helper_neg(long x): -x * 1000 */
FUNC(dp_c_helper_neg)
	imul rax, rdi, -1000
	ret
END(dp_c_helper_neg)
