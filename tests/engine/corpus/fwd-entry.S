/* An entry whose next instruction is the head of a loop (a .cold part or a
 * static function entered at a loop: python's shape), packed against the
 * function before it and with code past a rel8's reach after: a window of
 * 5 bytes would hold the loop's head, and no hop serves the loop's jg.  The
 * window runs on over the jg instead, whose copy in the trampoline goes to
 * the head's copy.
 * long dp_c_fwd_entry(long x): x + (x - 3) + (x - 6) + ... while the term
 * before was above 3, plus 108 */
#include "corpus.h"
FUNC(dp_c_fwd_pad)
	mov rax, rdi
	.rept 35
	add rax, 3
	.endr
	ret
END(dp_c_fwd_pad)
FUNC(dp_c_fwd_entry)
	xor eax, eax
1:	add rax, rdi
	sub rdi, 3
	jg 1b
	.rept 36
	add rax, 3
	.endr
	ret
END(dp_c_fwd_entry)
	.fill 16, 1, 0xcc
