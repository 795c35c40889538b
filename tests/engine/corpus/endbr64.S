/* endbr64 first: it must stay where indirect branches land; the probe goes
 * after it.  long dp_c_endbr(long x): 3(x + 7) */
#include "corpus.h"
FUNC(dp_c_endbr)
	endbr64
	lea rax, [rdi + 7]
	imul rax, rax, 3
	ret
END(dp_c_endbr)
