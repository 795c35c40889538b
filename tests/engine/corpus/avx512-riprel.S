/* An EVEX-encoded AVX-512 instruction with a RIP-relative operand first.
 * __m512i dp_c_avx512_riprel(__m512i x): x + {1..16} as sixteen int32 */
#include "corpus.h"
FUNC(dp_c_avx512_riprel)
	vpaddd zmm0, zmm0, zmmword ptr [rip + k16]
	ret
END(dp_c_avx512_riprel)

	.section .rodata
	.p2align 6
k16:
	.long 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
