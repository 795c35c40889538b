/* A long double returned in st0, live at the return probe: the trampoline
 * and the handler must leave the x87 stack alone.
 * long double dp_c_x87_twice(long double a): 2a + 1 */
#include "corpus.h"
FUNC(dp_c_x87_twice)
	fld tbyte ptr [rsp + 8]
	fadd st(0), st(0)
	fld1
	faddp st(1), st(0)
	ret
END(dp_c_x87_twice)
