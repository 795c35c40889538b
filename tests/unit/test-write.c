/*
 * The bytes of installed patches (patch/write.h): a jump, a jump through a
 * hop, an int3, each compared with its hand-assembled encoding, and the
 * places no plan gives refused.
 */
#include <errno.h>
#include <string.h>

#include "patch/write.h"
#include "tap.h"

static struct dp_patch_place jump(uint64_t addr, uint8_t len)
{
	return (struct dp_patch_place){ .method = DP_SITE_JUMP, .addr = addr, .len = len };
}

int main(void)
{
	struct dp_patch_place p = jump(0x401000, 7);
	struct dp_patch_bytes b;
	int ret;

	/* jmp 0x402000 from 0x401000: e9 fb 0f 00 00, then int3 int3. */
	ret = dp_patch_bytes_fill(&p, 0x402000, &b);
	tap_ok(!ret && b.site_len == 7 && b.hop_len == 0 &&
	       !memcmp(b.site, "\xe9\xfb\x0f\x00\x00\xcc\xcc", 7),
	       "a jump: jmp rel32 to the entry, int3s over the rest of the window");

	/* Backwards: jmp 0x400000 from 0x401000 is e9 fb ef ff ff. */
	p = jump(0x401000, 5);
	ret = dp_patch_bytes_fill(&p, 0x400000, &b);
	tap_ok(!ret && b.site_len == 5 && !memcmp(b.site, "\xe9\xfb\xef\xff\xff", 5),
	       "a jump backwards");

	/* Site 0x401000 (3 bytes), hop at 0x401010: eb 0e cc; hop e9 rel32. */
	p = jump(0x401000, 3);
	p.hop = 0x401010;
	p.hop_len = DP_HOP_LEN;
	ret = dp_patch_bytes_fill(&p, 0x500000, &b);
	tap_ok(!ret && b.site_len == 3 && !memcmp(b.site, "\xeb\x0e\xcc", 3) &&
	       b.hop_len == DP_HOP_LEN && !memcmp(b.hop, "\xe9\xeb\xef\x0f\x00", 5),
	       "a jump through a hop: jmp rel8 to the hop, jmp rel32 there");

	/* A hop before the site: eb 80 is the farthest back (-128). */
	p.hop = 0x401002 - 128;
	ret = dp_patch_bytes_fill(&p, 0x500000, &b);
	tap_ok(!ret && !memcmp(b.site, "\xeb\x80\xcc", 3), "a hop 128 bytes back is reached");
	p.hop--;
	ret = dp_patch_bytes_fill(&p, 0x500000, &b);
	tap_ok(ret == -ERANGE && !b.site_len && !b.hop_len,
	       "a hop 129 bytes back: -ERANGE, nothing to write (%d)", ret);

	p = jump(0x401000, 5);
	ret = dp_patch_bytes_fill(&p, 0x401005 + (1ull << 31), &b);
	tap_ok(ret == -ERANGE, "an entry beyond a rel32's reach: -ERANGE (%d)", ret);

	p = (struct dp_patch_place){ .method = DP_SITE_INT3, .addr = 0x401000, .len = 4 };
	ret = dp_patch_bytes_fill(&p, 0, &b);
	tap_ok(!ret && b.site_len == 1 && b.site[0] == 0xcc && !b.hop_len,
	       "an int3: one byte, 0xcc");

	p = jump(0x401000, 4);
	tap_ok(dp_patch_bytes_fill(&p, 0x402000, &b) == -EINVAL,
	       "a 4-byte window without a hop: -EINVAL");
	p.method = DP_SITE_REFUSED;
	tap_ok(dp_patch_bytes_fill(&p, 0x402000, &b) == -EINVAL, "a refused site: -EINVAL");
	return tap_done();
}
