/* loop (rel8 only, no rel32 form) displaced: it must be expanded through a
 * local label.  long dp_c_loop(long, long, long, long n): n - 1 != 0 ?
 * n - 1 + 100 : -1 (n in rcx, the fourth argument) */
#include "corpus.h"
FUNC(dp_c_loop)
	loop 1f
	mov rax, -1
	ret
1:	lea rax, [rcx + 100]
	ret
END(dp_c_loop)
