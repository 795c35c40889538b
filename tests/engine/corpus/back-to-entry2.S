/* A backward branch to entry+2: no jump may cover that byte, so the entry
 * gets an int3 (reason: branch-target).
 * long dp_c_back2(long n): n + (n - 1) + ... + 1, for n >= 1 */
#include "corpus.h"
FUNC(dp_c_back2)
	xor eax, eax
1:	add rax, rdi
	dec rdi
	jnz 1b
	ret
END(dp_c_back2)
