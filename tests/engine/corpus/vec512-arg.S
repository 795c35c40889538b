/* A __m512i argument in zmm0, live at the entry probe.
 * int dp_c_vec512_sum(__m512i x): the sum of its sixteen int32 */
#include "corpus.h"
FUNC(dp_c_vec512_sum)
	vextracti64x4 ymm1, zmm0, 1
	vpaddd ymm0, ymm0, ymm1
	vextracti128 xmm1, ymm0, 1
	vpaddd xmm0, xmm0, xmm1
	vpshufd xmm1, xmm0, 0x4e
	vpaddd xmm0, xmm0, xmm1
	vpshufd xmm1, xmm0, 0xb1
	vpaddd xmm0, xmm0, xmm1
	vmovd eax, xmm0
	vzeroupper
	ret
END(dp_c_vec512_sum)
