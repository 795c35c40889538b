/*
 * dp_tramp_max_len() must bound every trampoline: installers size their
 * buffers with it, and a short buffer makes an install fail.  Worst cases
 * are built for each vector-save kind: many hooks, and the instructions
 * whose relocation is longest (a RIP-relative operand out of the
 * trampoline's reach, loop, a far jcc, a call through [rip] out of reach).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "patch/plan.h"
#include "patch/tramp.h"
#include "tap.h"

static void handler(void *arg, struct dp_regs *regs)
{
	(void)arg;
	(void)regs;
}

/* Worst-case instructions, all at a site far (> 4 GiB) from the trampoline. */
static const uint8_t worst[][15] = {
	{ 0x48, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x40 },	/* mov rax, [rip+0x40000000] */
	{ 0xe2, 0x10 },					/* loop +0x10 */
	{ 0x0f, 0x84, 0x00, 0x00, 0x00, 0x40 },		/* je +0x40000000 */
	{ 0x67, 0xe3, 0x10 },				/* jecxz +0x10 */
	{ 0xff, 0x15, 0x00, 0x00, 0x00, 0x40 },		/* call [rip+0x40000000] (last) */
};

int main(void)
{
	static const uint64_t site = 0x100000000000ull, tramp_at = 0x7f0000000000ull;
	static const enum dp_vec_save vecs[] = { DP_VEC_SSE, DP_VEC_AVX, DP_VEC_AVX512,
						 DP_VEC_AVX512_LOW };
	static const size_t nhooks[] = { 1, 4, DP_PATCH_MAX_POINTS };
	struct dp_window w = { .addr = site };
	struct dp_tramp_hook hooks[DP_PATCH_MAX_POINTS];

	for (size_t i = 0; i < sizeof(worst) / sizeof(worst[0]); i++) {
		struct dp_insn *in = &w.insns[w.ninsns];

		if (!tap_ok(dp_insn_decode(worst[i], sizeof(worst[i]), in) == 0,
			    "worst-case instruction %zu decodes", i))
			return tap_done();
		memcpy(w.bytes + w.len, worst[i], in->len);
		w.off[w.ninsns++] = w.len;
		w.len += in->len;
	}
	for (size_t v = 0; v < sizeof(vecs) / sizeof(vecs[0]); v++) {
		for (size_t k = 0; k < sizeof(nhooks) / sizeof(nhooks[0]); k++) {
			size_t n = nhooks[k], cap = dp_tramp_max_len(n, vecs[v]);
			uint8_t *buf = malloc(cap);
			struct dp_emit e;
			struct dp_tramp t = { 0 };
			enum dp_reason why;
			int ret;

			/* Hooks spread over the instructions, as batch planning makes them. */
			for (size_t h = 0; h < n; h++)
				hooks[h] = (struct dp_tramp_hook){
					.addr = site + w.off[h % w.ninsns], .arg = NULL,
				};
			dp_emit_init(&e, buf, cap, tramp_at);
			ret = dp_tramp_build(&e, &w, hooks, n, handler, vecs[v], &t, &why);
			tap_ok(ret == 0 && t.len <= cap,
			       "%s, %zu hooks, 5 worst-case instructions: %zu bytes within the bound %zu (%d)",
			       dp_vec_save_str(vecs[v]), n, t.len, cap, ret);
			free(buf);
		}
	}
	return tap_done();
}
