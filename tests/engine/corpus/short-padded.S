/* A function of 3 bytes followed by padding: the jump may run on into the
 * padding that nothing executes.  long dp_c_short_pad(void): 0 */
#include "corpus.h"
FUNC(dp_c_short_pad)
	xor eax, eax
	ret
END(dp_c_short_pad)
	.p2align 4, 0xcc
