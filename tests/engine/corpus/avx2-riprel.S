/* A VEX-encoded AVX2 instruction with a RIP-relative operand first.
 * __m256i dp_c_avx2_riprel(__m256i x): x + {1..8} as eight int32 */
#include "corpus.h"
FUNC(dp_c_avx2_riprel)
	vpaddd ymm0, ymm0, ymmword ptr [rip + k8]
	ret
END(dp_c_avx2_riprel)

	.section .rodata
	.p2align 5
k8:
	.long 1, 2, 3, 4, 5, 6, 7, 8
