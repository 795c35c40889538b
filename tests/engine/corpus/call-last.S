/* A call as the last displaced instruction: the callee must return right
 * after the patch, in the original code.  long dp_c_call_last(long x): 3x */
#include "corpus.h"
FUNC(dp_c_call_last)
	push rbx
	mov rbx, rdi
	call dp_c_helper_double
	add rax, rbx
	pop rbx
	ret
END(dp_c_call_last)
