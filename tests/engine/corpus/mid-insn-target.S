/* A branch into the middle of the first instruction: the loop jumps past
 * the lock prefix of `lock inc` (to entry+1, a plain inc).  Only the
 * window's first byte may be a branch target, so the entry gets an int3
 * (reason: branch-target), even though entry+1 is no instruction start.
 * long dp_c_midlock(long *p, long n): adds n to *p (n >= 1), returns *p */
#include "corpus.h"
FUNC(dp_c_midlock)
	lock inc qword ptr [rdi]
	mov rax, [rdi]
	dec rsi
	jz 2f
	jmp dp_c_midlock + 1
2:	ret
END(dp_c_midlock)
