/*
 * Random-input sanity test for dp_insn_decode().
 *
 * Feeds biased random byte strings (prefixes, REX, the 0F/0F38/0F3A/3DNow
 * escapes, VEX/EVEX/XOP openings) and the real instructions of libc's text,
 * each placed right before a PROT_NONE page, and checks properties that hold
 * whatever the bytes: no read past `len`, only 0/-ENODATA/-EINVAL, lengths
 * and field offsets inside the buffer, determinism, and prefix closure (more
 * bytes never turn a decoded instruction into another one).
 *
 * The seed is printed; DP_SEED=<seed> replays a run, DP_SANITY_COUNT=<n>
 * changes the number of random inputs.
 */
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "x86/insn.h"
#include "tap.h"
#include "guard.h"

#define BUF_LEN 24		/* bytes generated per random input */
#define DEFAULT_COUNT 2000000
#define MAX_SHOWN 20		/* failing inputs shown per property */
#define LIBC_MAX_INSNS 400000

/* ---- properties and their failures ----------------------------------------- */

enum prop {
	P_NO_FAULT,		/* never reads outside bytes[0..len) */
	P_RESULT,		/* returns 0, -ENODATA or -EINVAL */
	P_NO_NODATA_15,		/* 15 bytes or more are never -ENODATA */
	P_EMPTY,		/* len = 0 is -ENODATA */
	P_LENGTH,		/* on success 1 <= length <= min(len, 15) */
	P_FIELDS,		/* field offsets and sizes inside the length */
	P_ATTRS,		/* attributes agree with the fields they imply */
	P_DETERMINISTIC,	/* the same bytes decode the same way twice */
	P_PREFIX_CLOSED,	/* more bytes never change a decoded length */
	P_LIBC_TRUNC,		/* libc instructions: every truncation -ENODATA */
	P__COUNT,
};

static const char *const prop_desc[P__COUNT] = {
	[P_NO_FAULT] = "no read outside the buffer",
	[P_RESULT] = "result is 0, -ENODATA or -EINVAL",
	[P_NO_NODATA_15] = "15 bytes or more never give -ENODATA",
	[P_EMPTY] = "an empty buffer gives -ENODATA",
	[P_LENGTH] = "decoded length is 1..15 and within the buffer",
	[P_FIELDS] = "modrm, disp, imm, imm2 and opcode lie inside the length",
	[P_ATTRS] = "rel, riprel, encoding and flow agree with the fields",
	[P_DETERMINISTIC] = "decoding is deterministic",
	[P_PREFIX_CLOSED] = "decoding is prefix-closed",
	[P_LIBC_TRUNC] = "every truncation of a libc instruction gives -ENODATA",
};

struct failure {
	uint8_t bytes[BUF_LEN];
	size_t n;
	char why[128];
};

static struct {
	unsigned long checks, failed;
	struct failure shown[MAX_SHOWN];
	unsigned nshown;
} props[P__COUNT];

__attribute__((format(printf, 5, 6)))
static bool prop_check(enum prop p, bool ok, const uint8_t *b, size_t n, const char *fmt, ...)
{
	struct failure *f;
	va_list ap;

	props[p].checks++;
	if (ok)
		return true;
	props[p].failed++;
	if (props[p].nshown == MAX_SHOWN)
		return false;
	f = &props[p].shown[props[p].nshown++];
	f->n = n < BUF_LEN ? n : BUF_LEN;
	memcpy(f->bytes, b, f->n);
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	return false;
}

static const char *rc_str(int rc)
{
	static char buf[4][24];
	static unsigned next;
	char *s;

	switch (rc) {
	case 0:
		return "0";
	case -ENODATA:
		return "ENODATA";
	case -EINVAL:
		return "EINVAL";
	case -EFAULT:
		return "FAULT";
	}
	s = buf[next++ % 4];
	snprintf(s, sizeof(buf[0]), "%d", rc);
	return s;
}

static bool range_ok(unsigned off, unsigned size, unsigned len)
{
	if (!size)
		return true;
	return (size == 1 || size == 2 || size == 4 || size == 8) && off + size <= len;
}

/*
 * The checks on one decode of bytes[0..n).  Returns false when the result
 * cannot be trusted for further comparisons (fault or unknown result).
 */
static bool check_single(const uint8_t *b, size_t n, int rc, const struct dp_insn *in)
{
	unsigned len = in->len;

	if (!prop_check(P_NO_FAULT, rc != -EFAULT, b, n, "read outside the %zu given bytes", n))
		return false;
	if (!prop_check(P_RESULT, rc == 0 || rc == -ENODATA || rc == -EINVAL, b, n,
			"returned %s", rc_str(rc)))
		return false;
	if (n >= DP_INSN_MAX_LEN)
		prop_check(P_NO_NODATA_15, rc != -ENODATA, b, n, "ENODATA with %zu bytes", n);
	if (n == 0)
		prop_check(P_EMPTY, rc == -ENODATA, b, n, "returned %s", rc_str(rc));
	if (rc)
		return true;

	if (!prop_check(P_LENGTH, len >= 1 && len <= DP_INSN_MAX_LEN && len <= n, b, n,
			"length %u with %zu bytes", len, n))
		return false;

	if (in->opcode_off >= len)
		prop_check(P_FIELDS, false, b, n, "opcode_off %u, length %u", in->opcode_off, len);
	else if (in->has_modrm && (in->modrm_off >= len || in->modrm_off <= in->opcode_off))
		prop_check(P_FIELDS, false, b, n, "modrm_off %u, opcode_off %u, length %u",
			   in->modrm_off, in->opcode_off, len);
	else if (in->has_sib && (!in->has_modrm || in->modrm_off + 1u >= len))
		prop_check(P_FIELDS, false, b, n, "sib without room after modrm (length %u)", len);
	else if (!range_ok(in->disp_off, in->disp_size, len) ||
		 (in->disp_size && in->disp_off <= in->opcode_off))
		prop_check(P_FIELDS, false, b, n, "disp @%u:%u, length %u",
			   in->disp_off, in->disp_size, len);
	else if (!range_ok(in->imm_off, in->imm_size, len) ||
		 (in->imm_size && in->imm_off <= in->opcode_off))
		prop_check(P_FIELDS, false, b, n, "imm @%u:%u, length %u",
			   in->imm_off, in->imm_size, len);
	else if (!range_ok(in->imm2_off, in->imm2_size, len) ||
		 (in->imm2_size && (!in->imm_size || in->imm2_off < in->imm_off + in->imm_size)))
		prop_check(P_FIELDS, false, b, n, "imm2 @%u:%u after imm @%u:%u, length %u",
			   in->imm2_off, in->imm2_size, in->imm_off, in->imm_size, len);
	else if (in->disp_size && in->imm_size && in->imm_off < in->disp_off + in->disp_size)
		prop_check(P_FIELDS, false, b, n, "imm @%u:%u overlaps disp @%u:%u",
			   in->imm_off, in->imm_size, in->disp_off, in->disp_size);
	else if (in->nprefixes > in->opcode_off)
		prop_check(P_FIELDS, false, b, n, "%u prefixes before opcode_off %u",
			   in->nprefixes, in->opcode_off);
	else
		prop_check(P_FIELDS, true, b, n, "%s", "");

	if (in->enc > DP_ENC_XOP || in->flow >= DP_FLOW__COUNT)
		prop_check(P_ATTRS, false, b, n, "enc %u, flow %u out of range", in->enc, in->flow);
	else if ((in->enc == DP_ENC_VEX || in->enc == DP_ENC_EVEX || in->enc == DP_ENC_XOP) !=
		 (in->vex_size != 0))
		prop_check(P_ATTRS, false, b, n, "enc %u with vex_size %u", in->enc, in->vex_size);
	else if ((in->attr & DP_ATTR_RIPREL) &&
		 (!in->has_modrm || in->has_sib || in->mod != 0 || (in->rm & 7) != 5 ||
		  in->disp_size != 4))
		prop_check(P_ATTRS, false, b, n, "riprel with mod %u rm %u sib %d disp size %u",
			   in->mod, in->rm, in->has_sib, in->disp_size);
	else if ((in->attr & DP_ATTR_REL) &&
		 (!in->imm_size || in->imm_size > 4 || in->rel != in->imm))
		prop_check(P_ATTRS, false, b, n, "rel %" PRId32 " with imm @%u:%u = %" PRId64,
			   in->rel, in->imm_off, in->imm_size, in->imm);
	else if ((in->attr & DP_ATTR_REL) &&
		 in->flow != DP_FLOW_JMP && in->flow != DP_FLOW_JCC && in->flow != DP_FLOW_CALL &&
		 in->flow != DP_FLOW_LOOP && in->flow != DP_FLOW_XBEGIN)
		prop_check(P_ATTRS, false, b, n, "rel attribute with flow %u", in->flow);
	else if (!(in->attr & DP_ATTR_REL) &&
		 (in->flow == DP_FLOW_JMP || in->flow == DP_FLOW_JCC || in->flow == DP_FLOW_CALL ||
		  in->flow == DP_FLOW_LOOP || in->flow == DP_FLOW_XBEGIN))
		prop_check(P_ATTRS, false, b, n, "flow %u without the rel attribute", in->flow);
	else
		prop_check(P_ATTRS, true, b, n, "%s", "");
	return true;
}

/* Two decodings of one instruction: every field the contract defines. */
static bool same_decoding(const struct dp_insn *a, const struct dp_insn *b)
{
	return a->len == b->len && a->enc == b->enc && a->map == b->map &&
	       a->opcode == b->opcode && a->opcode_off == b->opcode_off &&
	       a->nprefixes == b->nprefixes && a->prefixes == b->prefixes &&
	       a->seg == b->seg && a->rex == b->rex && a->mandatory == b->mandatory &&
	       a->vex_size == b->vex_size && a->w == b->w && a->l == b->l &&
	       a->vvvv == b->vvvv && a->aaa == b->aaa && a->evex_z == b->evex_z &&
	       a->evex_b == b->evex_b && a->has_modrm == b->has_modrm &&
	       a->has_sib == b->has_sib &&
	       (!a->has_modrm || (a->modrm_off == b->modrm_off && a->mod == b->mod &&
				  a->reg == b->reg && a->rm == b->rm)) &&
	       (!a->has_sib || (a->scale == b->scale && a->index == b->index &&
				a->base == b->base)) &&
	       a->disp_size == b->disp_size && a->imm_size == b->imm_size &&
	       a->imm2_size == b->imm2_size &&
	       (!a->disp_size || (a->disp_off == b->disp_off && a->disp == b->disp)) &&
	       (!a->imm_size || (a->imm_off == b->imm_off && a->imm == b->imm)) &&
	       (!a->imm2_size || a->imm2_off == b->imm2_off) &&
	       a->opsize == b->opsize && a->adsize == b->adsize && a->flow == b->flow &&
	       a->attr == b->attr && (!(a->attr & DP_ATTR_REL) || a->rel == b->rel) &&
	       a->regs_read == b->regs_read && a->regs_written == b->regs_written &&
	       a->mnemonic == b->mnemonic;
}

/*
 * bytes[0..ns) gave rs and bytes[0..nl) gave rl, with ns < nl.  A decoded
 * instruction stays the same with more bytes, a truncated one asks for more,
 * and invalid bytes stay invalid.
 */
static void check_pair(const uint8_t *b, size_t ns, int rs, const struct dp_insn *is,
		       size_t nl, int rl, const struct dp_insn *il)
{
	if (rs == 0)
		prop_check(P_PREFIX_CLOSED, rl == 0 && same_decoding(is, il), b, nl,
			   "%zu bytes: length %u; %zu bytes: %s (length %u)",
			   ns, is->len, nl, rc_str(rl), rl ? 0 : il->len);
	else if (rs == -EINVAL)
		prop_check(P_PREFIX_CLOSED, rl == -EINVAL, b, nl,
			   "%zu bytes: EINVAL; %zu bytes: %s (length %u)",
			   ns, nl, rc_str(rl), rl ? 0 : il->len);
	else
		prop_check(P_PREFIX_CLOSED, !(rl == 0 && il->len <= ns), b, nl,
			   "%zu bytes: ENODATA; %zu bytes: length %u", ns, nl, il->len);
}

/* ---- random inputs --------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned rnd_below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static bool chance(unsigned percent)
{
	return rnd_below(100) < percent;
}

/* A ModRM byte biased towards the forms that change the length. */
static uint8_t rnd_modrm(void)
{
	uint8_t m = rnd();

	switch (rnd_below(6)) {
	case 0:
		return (m & 0x38) | 0x05;		/* [rip + disp32] */
	case 1:
		return (m & 0xf8 & ~0xc0) | (m & 0xc0 ? 0x40 : 0) | 0x04; /* sib */
	default:
		return m;
	}
}

/* Fills b[0..BUF_LEN) with something shaped like an instruction. */
static void gen_input(uint8_t *b)
{
	static const uint8_t legacy[] = {
		0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x2e, 0x3e, 0x26, 0x36, 0x64, 0x65,
	};
	size_t n = 0;

	for (size_t i = 0; i < BUF_LEN; i++)
		b[i] = rnd();

	if (chance(40)) {
		unsigned k = 1 + rnd_below(chance(5) ? 16 : 3);

		while (k-- && n < BUF_LEN - 6)
			b[n++] = legacy[rnd_below(sizeof(legacy))];
	}
	if (chance(30))
		b[n++] = 0x40 | rnd_below(16);

	switch (rnd_below(12)) {
	case 0:
	case 1:
	case 2:
	case 3:
		n++;			/* one-byte map, random opcode */
		break;
	case 4:
		b[n++] = 0x0f;
		n++;
		break;
	case 5:
		b[n++] = 0x0f;
		b[n++] = chance(50) ? 0x38 : 0x3a;
		n++;
		break;
	case 6:
		b[n++] = 0x0f;
		b[n++] = 0x0f;		/* 3DNow: the opcode comes last */
		break;
	case 7:
		b[n++] = 0xc5;
		n += 2;
		break;
	case 8:
		b[n++] = 0xc4;
		if (chance(85))
			b[n] = (b[n] & 0xe0) | (1 + rnd_below(3));
		n += 3;
		break;
	case 9:
		b[n++] = 0x62;
		if (chance(85)) {
			static const uint8_t maps[] = { 1, 2, 3, 5, 6 };

			b[n] = (b[n] & 0xf0) | maps[rnd_below(sizeof(maps))];
			b[n + 1] |= 0x04;
		}
		n += 4;
		break;
	case 10:
		b[n++] = 0x8f;
		if (chance(70))
			b[n] = (b[n] & 0xe0) | (8 + rnd_below(3));
		n += 3;
		break;
	case 11:
		b[n++] = 0x8f;		/* pop r/m */
		b[n] = rnd_modrm() & ~0x38;
		n++;
		break;
	}
	if (n < BUF_LEN)
		b[n] = rnd_modrm();
}

static void run_random(unsigned long count)
{
	for (unsigned long i = 0; i < count; i++) {
		uint8_t b[BUF_LEN];
		struct dp_insn full, again, part;
		int rf, ra, rp;
		size_t k;

		gen_input(b);

		rf = decode_guarded(b, BUF_LEN, &full);
		if (!check_single(b, BUF_LEN, rf, &full))
			continue;
		ra = decode_guarded(b, BUF_LEN, &again);
		prop_check(P_DETERMINISTIC, ra == rf && (rf || same_decoding(&full, &again)),
			   b, BUF_LEN, "%s then %s", rc_str(rf), rc_str(ra));

		/* The edges of a decoded instruction, then a random cut. */
		if (rf == 0) {
			rp = decode_guarded(b, full.len, &part);
			if (check_single(b, full.len, rp, &part))
				check_pair(b, full.len, rp, &part, BUF_LEN, rf, &full);
			rp = decode_guarded(b, full.len - 1, &part);
			if (check_single(b, full.len - 1, rp, &part))
				check_pair(b, full.len - 1, rp, &part, BUF_LEN, rf, &full);
		}
		k = rnd_below(BUF_LEN);
		rp = decode_guarded(b, k, &part);
		if (check_single(b, k, rp, &part))
			check_pair(b, k, rp, &part, BUF_LEN, rf, &full);
	}
}

/* len = 0 and len = 1 for every first byte, against a longer buffer. */
static void run_first_bytes(void)
{
	for (unsigned first = 0; first < 256; first++) {
		for (unsigned t = 0; t < 8; t++) {
			uint8_t b[BUF_LEN];
			struct dp_insn one, zero, full;
			int r1, r0, rf;

			gen_input(b);
			b[0] = first;
			r0 = decode_guarded(b, 0, &zero);
			check_single(b, 0, r0, &zero);
			r1 = decode_guarded(b, 1, &one);
			rf = decode_guarded(b, BUF_LEN, &full);
			if (check_single(b, 1, r1, &one) && check_single(b, BUF_LEN, rf, &full))
				check_pair(b, 1, r1, &one, BUF_LEN, rf, &full);
		}
	}
}

/* ---- libc ---------------------------------------------------------------- */

struct text {
	const uint8_t *start;
	size_t size;
};

static int find_libc_text(struct dl_phdr_info *info, size_t size, void *data)
{
	struct text *t = data;

	if (!info->dlpi_name || !strstr(info->dlpi_name, "libc.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_memsz > t->size) {
			t->start = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
			t->size = ph->p_memsz;
		}
	}
	return t->size != 0;
}

/*
 * Sweeps libc's executable segment: each decoded instruction must decode the
 * same with a 15-byte window and ask for more bytes at every truncation.
 */
static void run_libc(void)
{
	struct text t = { NULL, 0 };
	unsigned long insns = 0, rejected = 0;
	size_t off = 0;

	dl_iterate_phdr(find_libc_text, &t);
	if (!tap_ok(t.size > 0, "libc's executable segment found")) {
		tap_diag("  dl_iterate_phdr saw no libc.so with an executable PT_LOAD");
		return;
	}
	while (off < t.size && insns < LIBC_MAX_INSNS) {
		size_t n = t.size - off < BUF_LEN ? t.size - off : BUF_LEN;
		uint8_t b[BUF_LEN];
		struct dp_insn full, part;
		int rf;

		memcpy(b, t.start + off, n);
		rf = decode_guarded(b, n, &full);
		if (!check_single(b, n, rf, &full) || rf) {
			rejected++;
			off++;
			continue;
		}
		insns++;
		for (size_t k = 0; k < full.len; k++) {
			int rp = decode_guarded(b, k, &part);

			if (!check_single(b, k, rp, &part))
				continue;
			prop_check(P_LIBC_TRUNC, rp == -ENODATA, b, full.len,
				   "length %u, first %zu bytes give %s", full.len, k, rc_str(rp));
			check_pair(b, k, rp, &part, n, rf, &full);
		}
		off += full.len;
	}
	tap_diag("libc sweep: %lu instructions decoded, %lu offsets rejected, %zu of %zu bytes",
		 insns, rejected, off, t.size);
}

/* ---- main ------------------------------------------------------------------ */

static uint64_t env_u64(const char *name, uint64_t dflt, bool *set)
{
	const char *s = getenv(name);
	char *end;
	uint64_t v;

	if (set)
		*set = false;
	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return dflt;
	if (set)
		*set = true;
	return v;
}

static void report(void)
{
	for (int p = 0; p < P__COUNT; p++) {
		tap_ok(props[p].failed == 0, "%s (%lu checks, %lu failed)", prop_desc[p],
		       props[p].checks, props[p].failed);
		for (unsigned i = 0; i < props[p].nshown; i++) {
			const struct failure *f = &props[p].shown[i];
			char hex[3 * BUF_LEN + 1];
			size_t used = 0;

			hex[0] = '\0';
			for (size_t j = 0; j < f->n; j++)
				used += snprintf(hex + used, sizeof(hex) - used, "%s%02x",
						 j ? " " : "", f->bytes[j]);
			tap_diag("  [%s] %s", hex[0] ? hex : "(no bytes)", f->why);
		}
	}
}

int main(void)
{
	bool seed_set;
	uint64_t seed = env_u64("DP_SEED", 0, &seed_set);
	unsigned long count = env_u64("DP_SANITY_COUNT", DEFAULT_COUNT, NULL);
	int err;

	if (!seed_set) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
		       ((uint64_t)getpid() << 32);
	}
	tap_diag("seed 0x%016" PRIx64 " (replay with DP_SEED=0x%016" PRIx64 "), %lu random inputs",
		 seed, seed, count);
	rng_state = seed;

	err = guard_init();
	if (!tap_ok(err == 0, "guard page set up")) {
		tap_diag("  %s", strerror(-err));
		return tap_done();
	}

	run_first_bytes();
	run_random(count);
	run_libc();
	report();
	tap_diag("seed was 0x%016" PRIx64, seed);
	return tap_done();
}
