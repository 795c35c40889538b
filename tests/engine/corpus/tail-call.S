/* A tail call: jmp to another function, a return site of this one, here in
 * the same window as the entry.  long dp_c_tail(long x): 2(x + 5) */
#include "corpus.h"
FUNC(dp_c_tail)
	lea rdi, [rdi + 5]
	jmp dp_c_helper_double
END(dp_c_tail)
