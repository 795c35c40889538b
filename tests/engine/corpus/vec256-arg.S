/* A __m256i argument in ymm0, live at the entry probe: the handler must not
 * see or leave a different upper half.
 * int dp_c_vec256_sum(__m256i x): the sum of its eight int32 */
#include "corpus.h"
FUNC(dp_c_vec256_sum)
	vextracti128 xmm1, ymm0, 1
	vpaddd xmm0, xmm0, xmm1
	vpshufd xmm1, xmm0, 0x4e
	vpaddd xmm0, xmm0, xmm1
	vpshufd xmm1, xmm0, 0xb1
	vpaddd xmm0, xmm0, xmm1
	vmovd eax, xmm0
	vzeroupper
	ret
END(dp_c_vec256_sum)
