/* Flags set before a probed site and read after it, DF included.
 * long dp_c_flags(long a, long b, long std): the CF PF AF ZF SF OF DF bits
 * of rflags after cmp a, b (with DF set when std & 1), plus 0x10000 when
 * a < b, all read after the site */
#include "corpus.h"
FUNC(dp_c_flags)
	test dl, 1
	jz 1f
	std
1:	cmp rdi, rsi
SITE(dp_c_flags_site)
	mov rax, rdi
	lea rdx, [rsi + 1]
	setl cl
	pushfq
	pop rax
	cld
	and eax, 0xcd5
	movzx ecx, cl
	shl ecx, 16
	or eax, ecx
	ret
END(dp_c_flags)
