/* call next; pop: the position-independent way to read one's own address.
 * Relocated, the pushed return address must still be the original one.
 * long dp_c_call_pop(void): the address of dp_c_call_pop + 5 */
#include "corpus.h"
FUNC(dp_c_call_pop)
	call 1f
1:	pop rax
	ret
END(dp_c_call_pop)
