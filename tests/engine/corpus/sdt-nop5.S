/* The `nop; nop5` SDT site of newer <sys/sdt.h> and <lttng/dynprobe/sdt.h>:
 * the jump goes over the nop5 in place, the nop runs where it is, nothing
 * is displaced.  The instruction right after the nop5 is a branch target (a
 * loop head).
 *
 * dp_c_sdt_nop5: the entry's window (lea, then the nop) takes the site's
 * nop: its trampoline runs the lea and comes back to the nop5, whose jump
 * serves the site.
 * long dp_c_sdt_nop5(long n): 5n + 1 for n >= 0 (the site runs once)
 *
 * dp_c_sdt_nop5_mid: the site between ordinary instructions.
 * long dp_c_sdt_nop5_mid(long x): 2x + 9 */
#include "corpus.h"
FUNC(dp_c_sdt_nop5)
	lea rax, [rdi + rdi * 4]
SITE(dp_c_sdt_nop5_site)
	nop
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	mov rcx, rdi
1:	test rcx, rcx
	jle 2f
	dec rcx
	jmp 1b
2:	inc rax
	ret
END(dp_c_sdt_nop5)

FUNC(dp_c_sdt_nop5_mid)
	mov rax, rdi
	add rax, rdi
	add rax, 4
SITE(dp_c_sdt_nop5_mid_site)
	nop
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	add rax, 5
	ret
END(dp_c_sdt_nop5_mid)
