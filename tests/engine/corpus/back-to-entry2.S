/* A backward branch to entry+2: no 5-byte jump may cover that byte, but the
 * 2-byte xor alone takes a jmp rel8 to a hop in the fill between functions.
 * long dp_c_back2(long n): n + (n - 1) + ... + 1, for n >= 1 */
#include "corpus.h"
FUNC(dp_c_back2)
	xor eax, eax
1:	add rax, rdi
	dec rdi
	jnz 1b
	ret
END(dp_c_back2)
