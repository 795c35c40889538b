/*
 * The bytes of an installed patch (see write.h).
 */
#include <errno.h>
#include <string.h>

#include "patch/write.h"
#include "x86/emit.h"

enum jump { NONE, REL8, REL32 };

/* A jmp to `target` at `at` (or none), then int3s up to `len` bytes: 0 or
 * the emitter's error. */
static int jump_fill(uint8_t *buf, size_t len, uint64_t at, enum jump jump, uint64_t target)
{
	struct dp_emit e;

	dp_emit_init(&e, buf, len, at);
	if (jump == REL8)
		dp_emit_jmp_rel8(&e, target);
	else if (jump == REL32)
		dp_emit_jmp_rel32(&e, target);
	dp_emit_int3(&e, len - e.len);
	return dp_emit_finish(&e);
}

int dp_patch_bytes_fill(const struct dp_patch_place *place, uint64_t entry,
			struct dp_patch_bytes *out)
{
	bool hop = place->method == DP_SITE_JUMP && place->hop_len;
	size_t need = hop ? DP_HOP_SITE_LEN : DP_HOP_LEN;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!place->len || place->len > DP_WINDOW_MAX_LEN)
		return -EINVAL;
	if (place->method == DP_SITE_INT3) {
		out->site_len = 1;
		return jump_fill(out->site, 1, place->addr, NONE, 0);
	}
	if (place->method == DP_SITE_REDIRECT) {
		if (!place->hop_len)
			return 0;
		if (place->hop_len != DP_HOP_LEN)
			return -EINVAL;
		out->hop_len = DP_HOP_LEN;
		return jump_fill(out->hop, DP_HOP_LEN, place->hop, REL32, entry);
	}
	if (place->method != DP_SITE_JUMP || place->len < need ||
	    (hop && place->hop_len != DP_HOP_LEN))
		return -EINVAL;
	if (hop) {
		ret = jump_fill(out->hop, DP_HOP_LEN, place->hop, REL32, entry);
		if (ret)
			return ret;
		out->hop_len = DP_HOP_LEN;
	}
	ret = jump_fill(out->site, place->len, place->addr, hop ? REL8 : REL32,
			hop ? place->hop : entry);
	if (ret) {
		memset(out, 0, sizeof(*out));
		return ret;
	}
	out->site_len = place->len;
	return 0;
}

int dp_redirect_bytes(const struct dp_redirect *r, uint64_t branch, uint64_t target,
		      uint8_t out[4])
{
	int64_t d = (int64_t)(target - (branch + r->len));

	if ((r->disp_len != 1 && r->disp_len != 4) || r->disp_off + r->disp_len != r->len)
		return -EINVAL;
	if (r->disp_len == 1 ? d < INT8_MIN || d > INT8_MAX : d < INT32_MIN || d > INT32_MAX)
		return -ERANGE;
	for (unsigned b = 0; b < r->disp_len; b++)
		out[b] = (uint8_t)((uint64_t)d >> (8 * b));
	return 0;
}

int dp_hop_bytes(uint64_t hop, uint64_t target, uint8_t out[DP_HOP_LEN])
{
	return jump_fill(out, DP_HOP_LEN, hop, REL32, target);
}
