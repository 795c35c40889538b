/*
 * decoder-diff: compares our x86-64 decoder with Zydis 4, instruction by
 * instruction, over every function of ELF files or over seeded random bytes.
 *
 * Per instruction it checks what the relocator relies on: validity, length,
 * the relative target (value and field), the RIP-relative displacement (its
 * offset and size) and the control-flow kind.  Zydis is the oracle, so after
 * any disagreement decoding resumes at Zydis's next instruction.  Mismatches
 * that are deliberate (where our decoder chooses differently on purpose) are
 * listed once, in intentional[], with the reason; everything else fails.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <Zydis/Zydis.h>

#include "elf/elf.h"
#include "x86/insn.h"

#define PROG "decoder-diff"
#define RANDOM_LEN 16

/* What differs, in the order checked: one kind per instruction. */
enum mismatch_kind {
	MK_OURS_REJECTS,	/* Zydis decodes it, we say invalid */
	MK_OURS_ACCEPTS,	/* we decode it, Zydis says invalid */
	MK_NODATA,		/* one side wants more bytes, the other does not */
	MK_LENGTH,
	MK_REL,			/* relative target: presence, value or field */
	MK_RIPREL,		/* [rip + disp32]: presence or field */
	MK_FLOW,
	MK__COUNT,
};

static const char *const kind_names[MK__COUNT] = {
	[MK_OURS_REJECTS] = "ours-rejects",
	[MK_OURS_ACCEPTS] = "ours-accepts",
	[MK_NODATA] = "nodata",
	[MK_LENGTH] = "length",
	[MK_REL] = "rel",
	[MK_RIPREL] = "riprel",
	[MK_FLOW] = "flow",
};

#define KIND(k) (1u << (k))
#define KIND_ANY ((1u << MK__COUNT) - 1)

/* How the opcode is encoded, read from the bytes alone (no decoder). */
enum enc_class {
	EC_LEGACY,
	EC_3DNOW,
	EC_VEX,
	EC_EVEX,
	EC_XOP,
	EC_PREFIXES,		/* nothing but prefixes in reach */
};

/* The mandatory-prefix slot: legacy 66/F3/F2, or VEX/EVEX/XOP pp. */
enum { PFX_NONE, PFX_66, PFX_F3, PFX_F2 };

struct enc_key {
	uint8_t cls;		/* enum enc_class */
	uint8_t pfx;		/* PFX_* */
	uint8_t map;		/* enum dp_insn_map numbering; 0F0F for 3DNow is map 1 */
	uint8_t opcode;
	bool opcode_known;
	uint8_t ext;		/* group opcodes: ModRM.reg + 1, else 0 */
};

#define ANY (-1)

/*
 * Differences we keep on purpose.  An entry covers a mismatch when its kind
 * bit is set, every field that is not ANY equals the bytes' encoding key, and
 * our decoder set all of our_attr.  Keep each reason specific enough that a
 * reader can check it against the manuals.  The shape of an entry:
 *   { "why", KIND(MK_LENGTH), EC_LEGACY, PFX_66, DP_MAP_1BYTE, 0xe8, ANY,
 *     DP_ATTR_VENDOR_AMBIGUOUS },
 */
struct intentional {
	const char *reason;
	unsigned int kinds;	/* KIND() bits */
	int cls;		/* enum enc_class or ANY */
	int pfx;		/* PFX_* or ANY */
	int map;		/* or ANY */
	int opcode;		/* or ANY */
	int reg;		/* ModRM.reg of a group opcode (0..7), or ANY */
	unsigned int our_attr;	/* enum dp_insn_attr bits our decoder must set */
	bool zydis_knc;		/* only when Zydis decoded a Knights Corner instruction */
};

static const struct intentional intentional[] = {
	{ "Knights Corner (Xeon Phi) encodings such as jkzd, kandn, clevict or MVEX: "
	  "Zydis 4.0 decodes them with its KNC mode off; x86-64 processors raise #UD "
	  "on them and objdump says (bad)",
	  KIND(MK_OURS_REJECTS), ANY, ANY, ANY, ANY, ANY, 0, true },
	{ NULL },		/* end */
};

#define NINTENTIONAL (sizeof(intentional) / sizeof(intentional[0]) - 1)

/* One decoder's verdict on one position. */
enum status { ST_OK, ST_NODATA, ST_INVALID };

#define FLOW_OTHER (-1)		/* Zydis: no control transfer we classify */

struct verdict {
	enum status status;
	unsigned int len;
	bool rel;
	int64_t rel_value;
	unsigned int rel_off, rel_size;
	bool riprel;
	unsigned int disp_off, disp_size;
	int flow;		/* enum dp_insn_flow, or FLOW_OTHER */
	unsigned int attr;	/* ours only */
	const char *mnemonic;
	ZyanStatus zstatus;	/* Zydis only */
	bool knc;		/* Zydis only: a Knights Corner decode */
};

/* A group of mismatches for --summary. */
struct group {
	uint32_t key;		/* 0: empty slot; packed enc_key and kind, plus 1 */
	uint64_t count;
	ZydisMnemonic mnemonics[3];
	bool more_mnemonics;
	char example[336];	/* bytes and location */
};

struct stats {
	uint64_t insns;
	uint64_t mismatches;
	uint64_t by_kind[MK__COUNT];
	uint64_t intentional[NINTENTIONAL + 1];
	uint64_t printed;
};

struct diff {
	ZydisDecoder zydis;
	unsigned long max_print;
	bool summary;
	unsigned long top;
	struct stats st;
	struct group *groups;
	size_t ngroups, groups_cap;
};

/* Where the instruction came from, formatted only when needed. */
struct where {
	const char *file;
	const struct dp_func *func;
	uint64_t off;		/* within the function */
	uint64_t index;		/* random mode: string number */
};

/* ---- classification of the raw bytes ---------------------------------- */

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
	case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
		return true;
	default:
		return false;
	}
}

/*
 * Opcodes whose ModRM.reg selects the instruction: their mismatches are
 * grouped per /reg, as each form is its own line of the opcode spec.
 */
static bool is_group_opcode(const struct enc_key *k)
{
	static const uint8_t legacy1[] = {
		0x80, 0x81, 0x82, 0x83, 0x8f, 0xc0, 0xc1, 0xc6, 0xc7, 0xd0, 0xd1, 0xd2,
		0xd3, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xf6, 0xf7, 0xfe, 0xff,
	};
	static const uint8_t legacy0f[] = {
		0x00, 0x01, 0x0d, 0x18, 0x71, 0x72, 0x73, 0xae, 0xba, 0xc7,
	};
	const uint8_t *set = NULL;
	size_t n = 0;

	switch (k->cls) {
	case EC_LEGACY:
		if (k->map == DP_MAP_1BYTE) {
			set = legacy1;
			n = sizeof(legacy1);
		} else if (k->map == DP_MAP_0F) {
			set = legacy0f;
			n = sizeof(legacy0f);
		}
		break;
	case EC_VEX:
		if (k->map == DP_MAP_0F)
			return k->opcode >= 0x71 && k->opcode <= 0x73 ? true : k->opcode == 0xae;
		return k->map == DP_MAP_0F38 && k->opcode == 0xf3;
	case EC_EVEX:
		if (k->map == DP_MAP_0F)
			return k->opcode >= 0x71 && k->opcode <= 0x73;
		return k->map == DP_MAP_0F38 && (k->opcode == 0xc6 || k->opcode == 0xc7);
	case EC_XOP:
		return (k->map == DP_MAP_XOP9 && (k->opcode == 0x01 || k->opcode == 0x02 ||
						   k->opcode == 0x12)) ||
		       (k->map == DP_MAP_XOPA && k->opcode == 0x12);
	default:
		break;
	}
	for (size_t i = 0; i < n; i++)
		if (set[i] == k->opcode)
			return true;
	return false;
}

/* Records the opcode at b[pos], and for group opcodes the ModRM.reg after it. */
static struct enc_key key_opcode(struct enc_key k, const uint8_t *b, size_t n, size_t pos)
{
	if (pos >= n)
		return k;
	k.opcode = b[pos];
	k.opcode_known = true;
	if (pos + 1 < n && is_group_opcode(&k))
		k.ext = (uint8_t)(1 + ((b[pos + 1] >> 3) & 7));
	return k;
}

/*
 * Finds the opcode the way the hardware would in 64-bit mode, without any
 * table, so that groups do not depend on the decoder under test.
 */
static struct enc_key key_of(const uint8_t *b, size_t n)
{
	struct enc_key k = { .cls = EC_PREFIXES };
	uint8_t last_rep = 0;
	bool opsize = false;
	size_t i = 0;

	while (i < n && i < DP_INSN_MAX_LEN && (is_legacy_prefix(b[i]) || (b[i] & 0xf0) == 0x40)) {
		if (b[i] == 0xf2 || b[i] == 0xf3)
			last_rep = b[i];
		else if (b[i] == 0x66)
			opsize = true;
		i++;
	}
	if (i >= n || i >= DP_INSN_MAX_LEN)
		return k;
	k.pfx = last_rep == 0xf3 ? PFX_F3 : last_rep == 0xf2 ? PFX_F2 : opsize ? PFX_66 : PFX_NONE;

	switch (b[i]) {
	case 0xc5:
		k.cls = EC_VEX;
		k.map = DP_MAP_0F;
		if (i + 1 < n)
			k.pfx = b[i + 1] & 3;
		return key_opcode(k, b, n, i + 2);
	case 0xc4:
	case 0x62:
		k.cls = b[i] == 0xc4 ? EC_VEX : EC_EVEX;
		if (i + 1 < n)
			k.map = b[i] == 0xc4 ? b[i + 1] & 0x1f : b[i + 1] & 0x07;
		if (i + 2 < n)
			k.pfx = b[i + 2] & 3;
		return key_opcode(k, b, n, i + (b[i] == 0xc4 ? 3 : 4));
	case 0x8f:
		/* XOP when the map field could not be a ModRM's /0. */
		if (i + 1 < n && (b[i + 1] & 0x1f) >= 8) {
			k.cls = EC_XOP;
			k.map = b[i + 1] & 0x1f;
			if (i + 2 < n)
				k.pfx = b[i + 2] & 3;
			return key_opcode(k, b, n, i + 3);
		}
		break;
	case 0x0f:
		k.map = DP_MAP_0F;
		if (i + 1 >= n)
			return (struct enc_key){ .cls = EC_LEGACY, .pfx = k.pfx, .map = DP_MAP_0F };
		if (b[i + 1] == 0x0f) {
			/* The 3DNow opcode is the last byte: filled in from Zydis. */
			k.cls = EC_3DNOW;
			return k;
		}
		k.cls = EC_LEGACY;
		if (b[i + 1] == 0x38 || b[i + 1] == 0x3a) {
			k.map = b[i + 1] == 0x38 ? DP_MAP_0F38 : DP_MAP_0F3A;
			return key_opcode(k, b, n, i + 2);
		}
		return key_opcode(k, b, n, i + 1);
	default:
		break;
	}
	k.cls = EC_LEGACY;
	k.map = DP_MAP_1BYTE;
	return key_opcode(k, b, n, i);
}

static uint32_t key_pack(const struct enc_key *k, enum mismatch_kind kind)
{
	return 1 + ((uint32_t)k->cls | (uint32_t)k->pfx << 3 | (uint32_t)(k->map & 0x1f) << 5 |
		    (uint32_t)k->opcode << 10 | (uint32_t)k->opcode_known << 18 |
		    (uint32_t)(k->ext & 0xf) << 19 | (uint32_t)kind << 23);
}

static struct enc_key key_unpack(uint32_t packed, enum mismatch_kind *kind)
{
	struct enc_key k;

	packed--;
	k.cls = packed & 7;
	k.pfx = (packed >> 3) & 3;
	k.map = (packed >> 5) & 0x1f;
	k.opcode = (packed >> 10) & 0xff;
	k.opcode_known = (packed >> 18) & 1;
	k.ext = (packed >> 19) & 0xf;
	*kind = (enum mismatch_kind)(packed >> 23);
	return k;
}

static const char *map_name(unsigned int map)
{
	static char buf[8];

	switch (map) {
	case DP_MAP_1BYTE:
		return "";
	case DP_MAP_0F:
		return "0f";
	case DP_MAP_0F38:
		return "0f38";
	case DP_MAP_0F3A:
		return "0f3a";
	default:
		snprintf(buf, sizeof(buf), "map%u", map);
		return buf;
	}
}

/* "66 0f38 f0", "vex.66.0f38 f7", "evex.f3.map5 2c", "xop.map9 01"... */
static void key_format(const struct enc_key *k, char *buf, size_t size)
{
	static const char *const pfx_legacy[] = { "", "66 ", "f3 ", "f2 " };
	static const char *const pfx_vex[] = { "np", "66", "f3", "f2" };
	static const char *const cls_names[] = {
		[EC_VEX] = "vex", [EC_EVEX] = "evex", [EC_XOP] = "xop",
	};
	char op[8] = "??";

	if (k->opcode_known && k->ext)
		snprintf(op, sizeof(op), "%02x /%u", k->opcode, k->ext - 1u);
	else if (k->opcode_known)
		snprintf(op, sizeof(op), "%02x", k->opcode);
	switch (k->cls) {
	case EC_LEGACY:
		snprintf(buf, size, "%s%s%s%s", pfx_legacy[k->pfx], map_name(k->map),
			 k->map ? " " : "", op);
		break;
	case EC_3DNOW:
		snprintf(buf, size, "%s0f 0f .. %s", pfx_legacy[k->pfx], op);
		break;
	case EC_VEX:
	case EC_EVEX:
	case EC_XOP:
		snprintf(buf, size, "%s.%s.%s %s", cls_names[k->cls], pfx_vex[k->pfx],
			 k->map ? map_name(k->map) : "map0", op);
		break;
	default:
		snprintf(buf, size, "prefixes only");
		break;
	}
}

/* ---- the two decoders ------------------------------------------------- */

static void ours_decode(const uint8_t *bytes, size_t avail, struct verdict *v)
{
	struct dp_insn in;
	int ret;

	memset(v, 0, sizeof(*v));
	ret = dp_insn_decode(bytes, avail, &in);
	if (ret) {
		v->status = ret == -ENODATA ? ST_NODATA : ST_INVALID;
		return;
	}
	v->status = ST_OK;
	v->len = in.len;
	v->attr = in.attr;
	v->flow = in.flow;
	v->mnemonic = in.mnemonic;
	if (in.attr & DP_ATTR_REL) {
		v->rel = true;
		v->rel_value = in.rel;
		v->rel_off = in.imm_off;
		v->rel_size = in.imm_size;
	}
	if (in.attr & DP_ATTR_RIPREL) {
		v->riprel = true;
		v->disp_off = in.disp_off;
		v->disp_size = in.disp_size;
	}
}

/* Our flow kinds as far as Zydis's mnemonic and branch type tell them. */
static int zydis_flow(const ZydisDecodedInstruction *zi, bool rel)
{
	bool far = zi->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;

	switch (zi->mnemonic) {
	case ZYDIS_MNEMONIC_JMP:
		return rel ? DP_FLOW_JMP : far ? DP_FLOW_FAR : DP_FLOW_JMP_IND;
	case ZYDIS_MNEMONIC_CALL:
		return rel ? DP_FLOW_CALL : far ? DP_FLOW_FAR : DP_FLOW_CALL_IND;
	case ZYDIS_MNEMONIC_RET:
		return far ? DP_FLOW_FAR : DP_FLOW_RET;
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
	case ZYDIS_MNEMONIC_UIRET:	/* pops rip, rflags and rsp, as iret does */
		return DP_FLOW_FAR;
	case ZYDIS_MNEMONIC_JB: case ZYDIS_MNEMONIC_JBE: case ZYDIS_MNEMONIC_JL:
	case ZYDIS_MNEMONIC_JLE: case ZYDIS_MNEMONIC_JNB: case ZYDIS_MNEMONIC_JNBE:
	case ZYDIS_MNEMONIC_JNL: case ZYDIS_MNEMONIC_JNLE: case ZYDIS_MNEMONIC_JNO:
	case ZYDIS_MNEMONIC_JNP: case ZYDIS_MNEMONIC_JNS: case ZYDIS_MNEMONIC_JNZ:
	case ZYDIS_MNEMONIC_JO: case ZYDIS_MNEMONIC_JP: case ZYDIS_MNEMONIC_JS:
	case ZYDIS_MNEMONIC_JZ:
		return DP_FLOW_JCC;
	case ZYDIS_MNEMONIC_JCXZ: case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JRCXZ:
	case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE: case ZYDIS_MNEMONIC_LOOPNE:
		return DP_FLOW_LOOP;
	case ZYDIS_MNEMONIC_XBEGIN:
		return DP_FLOW_XBEGIN;
	case ZYDIS_MNEMONIC_SYSCALL: case ZYDIS_MNEMONIC_SYSENTER:
	case ZYDIS_MNEMONIC_SYSEXIT: case ZYDIS_MNEMONIC_SYSRET:
		return DP_FLOW_SYSCALL;
	case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INT1: case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INTO:
		return DP_FLOW_INT;
	case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
		return DP_FLOW_UD;
	default:
		return FLOW_OTHER;
	}
}

/*
 * mod == 0, rm == 5 means [rip + disp32] only where the ModRM really
 * addresses memory (mov to/from control registers ignores mod, for one), so
 * the operands settle it; this is rare enough to cost nothing.
 */
static bool zydis_riprel(const ZydisDecoder *dec, const ZydisDecoderContext *ctx,
			 const ZydisDecodedInstruction *zi)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	if (!(zi->attributes & ZYDIS_ATTRIB_HAS_MODRM) || zi->raw.modrm.mod != 0 ||
	    zi->raw.modrm.rm != 5)
		return false;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeOperands(dec, ctx, zi, ops, zi->operand_count)))
		return false;
	for (unsigned int i = 0; i < zi->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    (ops[i].mem.base == ZYDIS_REGISTER_RIP || ops[i].mem.base == ZYDIS_REGISTER_EIP))
			return true;
	return false;
}

/*
 * Zydis 4.0.0 decodes Knights Corner instructions (MVEX, and VEX forms such
 * as jkzd or kandn) although ZYDIS_DECODER_MODE_KNC is off, even when turned
 * off explicitly.  Those only ever ran on Xeon Phi coprocessors; see the
 * entry of intentional[].
 */
static bool zydis_is_knc(const ZydisDecodedInstruction *zi)
{
	return zi->encoding == ZYDIS_INSTRUCTION_ENCODING_MVEX ||
	       zi->meta.isa_ext == ZYDIS_ISA_EXT_KNC || zi->meta.isa_ext == ZYDIS_ISA_EXT_KNCE ||
	       zi->meta.isa_ext == ZYDIS_ISA_EXT_KNCV;
}

static void zydis_decode(const ZydisDecoder *dec, const uint8_t *bytes, size_t avail,
			 struct verdict *v, ZydisDecodedInstruction *zi)
{
	ZydisDecoderContext ctx;
	ZyanStatus st;

	memset(v, 0, sizeof(*v));
	st = ZydisDecoderDecodeInstruction(dec, &ctx, bytes, avail, zi);
	v->zstatus = st;
	if (!ZYAN_SUCCESS(st)) {
		v->status = st == ZYDIS_STATUS_NO_MORE_DATA ? ST_NODATA : ST_INVALID;
		return;
	}
	v->mnemonic = ZydisMnemonicGetString(zi->mnemonic);
	v->knc = zydis_is_knc(zi);
	v->status = ST_OK;
	v->len = zi->length;
	for (unsigned int i = 0; i < 2; i++) {
		if (zi->raw.imm[i].is_relative) {
			v->rel = true;
			v->rel_value = zi->raw.imm[i].value.s;
			v->rel_off = zi->raw.imm[i].offset;
			v->rel_size = zi->raw.imm[i].size / 8;
			break;
		}
	}
	if (zydis_riprel(dec, &ctx, zi)) {
		v->riprel = true;
		v->disp_off = zi->raw.disp.offset;
		v->disp_size = zi->raw.disp.size / 8;
	}
	v->flow = zydis_flow(zi, v->rel);
}

static const char *zydis_status_str(ZyanStatus st)
{
	switch (st) {
	case ZYDIS_STATUS_NO_MORE_DATA:
		return "no-more-data";
	case ZYDIS_STATUS_DECODING_ERROR:
		return "decoding-error";
	case ZYDIS_STATUS_INSTRUCTION_TOO_LONG:
		return "too-long";
	case ZYDIS_STATUS_BAD_REGISTER:
		return "bad-register";
	case ZYDIS_STATUS_ILLEGAL_LOCK:
		return "illegal-lock";
	case ZYDIS_STATUS_ILLEGAL_LEGACY_PFX:
		return "illegal-legacy-pfx";
	case ZYDIS_STATUS_ILLEGAL_REX:
		return "illegal-rex";
	case ZYDIS_STATUS_INVALID_MAP:
		return "invalid-map";
	case ZYDIS_STATUS_MALFORMED_EVEX:
		return "malformed-evex";
	case ZYDIS_STATUS_MALFORMED_MVEX:
		return "malformed-mvex";
	case ZYDIS_STATUS_INVALID_MASK:
		return "invalid-mask";
	default:
		return "error";
	}
}

/* ---- comparing -------------------------------------------------------- */

/*
 * Returns the mismatch kind, or -1 when both agree.  strict: a 16-byte random
 * buffer, where "needs more bytes" can only be right if both say it; within a
 * function's bounds, failing for either reason counts as failing.
 */
static int verdicts_compare(const struct verdict *o, const struct verdict *z, bool strict)
{
	if (o->status != ST_OK || z->status != ST_OK) {
		if (o->status == z->status)
			return -1;
		if (o->status == ST_OK)
			return MK_OURS_ACCEPTS;
		if (z->status == ST_OK)
			return o->status == ST_NODATA ? MK_NODATA : MK_OURS_REJECTS;
		return strict ? MK_NODATA : -1;
	}
	if (o->len != z->len)
		return MK_LENGTH;
	if (o->rel != z->rel || (o->rel && (o->rel_value != z->rel_value ||
					    o->rel_off != z->rel_off || o->rel_size != z->rel_size)))
		return MK_REL;
	if (o->riprel != z->riprel ||
	    (o->riprel && (o->disp_off != z->disp_off || o->disp_size != z->disp_size)))
		return MK_RIPREL;
	if (z->flow == FLOW_OTHER ? (o->flow != DP_FLOW_NONE && o->flow != DP_FLOW_TRAP)
				  : o->flow != z->flow)
		return MK_FLOW;
	return -1;
}

static const char *flow_name(int flow)
{
	return flow == FLOW_OTHER ? "other" : dp_insn_flow_str((enum dp_insn_flow)flow);
}

static void verdict_format(const struct verdict *v, bool zydis, uint64_t addr,
			   char *buf, size_t size)
{
	int n = 0;

	if (v->status != ST_OK) {
		if (zydis)
			snprintf(buf, size, "invalid (%s)", zydis_status_str(v->zstatus));
		else
			snprintf(buf, size, "%s", v->status == ST_NODATA ? "nodata" : "invalid");
		return;
	}
	n = snprintf(buf, size, "%s len %u flow %s", v->mnemonic ? v->mnemonic : "?", v->len,
		     flow_name(v->flow));
	if (v->rel && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, " rel %s0x%" PRIx64 " -> 0x%" PRIx64 " @%u/%u",
			      v->rel_value < 0 ? "-" : "+",
			      v->rel_value < 0 ? -(uint64_t)v->rel_value : (uint64_t)v->rel_value,
			      addr + v->len + (uint64_t)v->rel_value, v->rel_off, v->rel_size);
	if (v->riprel && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, " riprel @%u/%u", v->disp_off, v->disp_size);
	if (!zydis && (v->attr & DP_ATTR_VENDOR_AMBIGUOUS) && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - n, " vendor-ambiguous");
}

static void where_format(const struct where *w, char *buf, size_t size)
{
	if (!w->func)
		snprintf(buf, size, "random #%" PRIu64, w->index);
	else if (w->func->name)
		snprintf(buf, size, "%s: %s+0x%" PRIx64 " [0x%" PRIx64 "]", w->file,
			 w->func->name, w->off, w->func->start + w->off);
	else
		snprintf(buf, size, "%s: func_%" PRIx64 "+0x%" PRIx64 " [0x%" PRIx64 "]", w->file,
			 w->func->start, w->off, w->func->start + w->off);
}

static void bytes_format(const uint8_t *b, size_t n, char *buf, size_t size)
{
	size_t pos = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && pos + 4 < size; i++)
		pos += (size_t)snprintf(buf + pos, size - pos, i ? " %02x" : "%02x", b[i]);
}

static const struct intentional *intentional_find(enum mismatch_kind kind,
						  const struct enc_key *k,
						  const struct verdict *o,
						  const struct verdict *z)
{
	for (const struct intentional *e = intentional; e->reason; e++) {
		if (!(e->kinds & KIND(kind)) || e->zydis_knc != z->knc)
			continue;
		if ((e->cls != ANY && e->cls != k->cls) || (e->pfx != ANY && e->pfx != k->pfx) ||
		    (e->map != ANY && e->map != k->map))
			continue;
		if (e->opcode != ANY && (!k->opcode_known || e->opcode != k->opcode))
			continue;
		if (e->reg != ANY && (!k->ext || e->reg != k->ext - 1))
			continue;
		if ((o->attr & e->our_attr) != e->our_attr)
			continue;
		return e;
	}
	return NULL;
}

static struct group *group_get(struct diff *d, uint32_t key)
{
	size_t mask, i;

	if (d->ngroups * 2 >= d->groups_cap) {
		size_t cap = d->groups_cap ? d->groups_cap * 2 : 1024;
		struct group *g = calloc(cap, sizeof(*g));

		if (!g)
			return NULL;
		for (size_t j = 0; j < d->groups_cap; j++) {
			if (!d->groups[j].key)
				continue;
			for (i = d->groups[j].key * 2654435761u & (cap - 1); g[i].key;
			     i = (i + 1) & (cap - 1))
				;
			g[i] = d->groups[j];
		}
		free(d->groups);
		d->groups = g;
		d->groups_cap = cap;
	}
	mask = d->groups_cap - 1;
	for (i = key * 2654435761u & mask; d->groups[i].key; i = (i + 1) & mask)
		if (d->groups[i].key == key)
			return &d->groups[i];
	d->groups[i].key = key;
	d->ngroups++;
	return &d->groups[i];
}

static void group_add_mnemonic(struct group *g, const struct verdict *z,
			       const ZydisDecodedInstruction *zi)
{
	if (z->status != ST_OK)
		return;
	for (unsigned int i = 0; i < 3; i++) {
		if (g->mnemonics[i] == zi->mnemonic)
			return;
		if (g->mnemonics[i] == ZYDIS_MNEMONIC_INVALID) {
			g->mnemonics[i] = zi->mnemonic;
			return;
		}
	}
	g->more_mnemonics = true;
}

/* Decodes one position with both and records any disagreement. */
static unsigned int position_check(struct diff *d, const uint8_t *bytes, size_t avail,
				   uint64_t addr, const struct where *w, bool strict)
{
	ZydisDecodedInstruction zi;
	struct verdict o, z;
	const struct intentional *e;
	struct enc_key k;
	char loc[256], hex[64], ov[160], zv[160];
	size_t shown;
	int kind;

	d->st.insns++;
	ours_decode(bytes, avail, &o);
	zydis_decode(&d->zydis, bytes, avail, &z, &zi);
	kind = verdicts_compare(&o, &z, strict);
	if (kind < 0)
		return z.status == ST_OK ? z.len : 1;

	k = key_of(bytes, avail);
	if (k.cls == EC_3DNOW && z.status == ST_OK) {
		k.opcode = zi.opcode;
		k.opcode_known = true;
	}
	e = intentional_find((enum mismatch_kind)kind, &k, &o, &z);
	if (e) {
		d->st.intentional[e - intentional]++;
		return z.status == ST_OK ? z.len : 1;
	}
	d->st.mismatches++;
	d->st.by_kind[kind]++;

	/* The instruction as the side that decoded it sees it. */
	if (o.status == ST_OK && z.status == ST_OK)
		shown = o.len > z.len ? o.len : z.len;
	else if (z.status == ST_OK)
		shown = z.len;
	else if (o.status == ST_OK)
		shown = o.len;
	else
		shown = DP_INSN_MAX_LEN;
	if (shown > avail)
		shown = avail;
	bytes_format(bytes, shown, hex, sizeof(hex));
	where_format(w, loc, sizeof(loc));
	verdict_format(&o, false, addr, ov, sizeof(ov));
	verdict_format(&z, true, addr, zv, sizeof(zv));
	if (d->st.printed < d->max_print) {
		d->st.printed++;
		printf("%s: %s: %s: ours %s | zydis %s\n", loc, kind_names[kind], hex, ov, zv);
	}
	if (d->summary) {
		struct group *g = group_get(d, key_pack(&k, (enum mismatch_kind)kind));

		if (g) {
			if (!g->count)
				snprintf(g->example, sizeof(g->example), "%s (%s)", hex, loc);
			g->count++;
			group_add_mnemonic(g, &z, &zi);
		}
	}
	return z.status == ST_OK ? z.len : 1;
}

/* ---- the two modes ---------------------------------------------------- */

/* Returns 0, or -1 when the file could not be read. */
static int file_check(struct diff *d, const char *path)
{
	const struct dp_func *funcs;
	uint64_t insns0 = d->st.insns, mism0 = d->st.mismatches;
	size_t n, skipped = 0;
	struct dp_elf *elf;
	int err;

	elf = dp_elf_open(path);
	if (!elf) {
		fprintf(stderr, PROG ": %s: %s\n", path, dp_elf_strerror(errno));
		return -1;
	}
	err = dp_elf_funcs(elf, &funcs, &n);
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", path, dp_elf_strerror(-err));
		dp_elf_close(elf);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *code = dp_elf_code(elf, funcs[i].start, funcs[i].size);
		struct where w = { .file = path, .func = &funcs[i] };

		if (!code) {
			skipped++;
			continue;
		}
		for (uint64_t off = 0; off < funcs[i].size;) {
			w.off = off;
			off += position_check(d, code + off, funcs[i].size - off,
					      funcs[i].start + off, &w, false);
		}
	}
	printf(PROG ": %s: %zu functions (%zu without code), %" PRIu64 " instructions, %"
	       PRIu64 " mismatches\n", path, n, skipped, d->st.insns - insns0,
	       d->st.mismatches - mism0);
	dp_elf_close(elf);
	return 0;
}

/* splitmix64: tiny, fast, and every seed gives a full-period stream. */
static uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static const uint8_t random_prefixes[] = {
	0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3,
	0x66, 0xf2, 0xf3,	/* the mandatory-prefix candidates, twice as often */
	0x40, 0x41, 0x44, 0x48, 0x49, 0x4c, 0x4d, 0x4f,
};

enum random_esc { ESC_0F, ESC_0F38, ESC_0F3A, ESC_3DNOW, ESC_VEX3, ESC_VEX2, ESC_EVEX, ESC_XOP };

/* Escapes by weight: the VEX and EVEX spaces are the largest. */
static const uint8_t random_escapes[16] = {
	ESC_0F, ESC_0F, ESC_0F38, ESC_0F3A, ESC_3DNOW,
	ESC_VEX3, ESC_VEX3, ESC_VEX3, ESC_VEX2, ESC_VEX2,
	ESC_EVEX, ESC_EVEX, ESC_EVEX, ESC_EVEX, ESC_XOP, ESC_XOP,
};

/*
 * Writes an escape (0F, 0F 38, 0F 3A, 0F 0F, C4, C5, 62, 8F) at b[pos].  Half
 * of the VEX/EVEX/XOP payloads get a real map, their fixed bits, and the
 * values an instruction without a third register needs (vvvv = 1111, V' = 1)
 * or without masking (z = 0, L'L below 3): random payloads are nearly all
 * invalid, and the maps behind them would go untested.
 */
static void random_escape(uint8_t *b, size_t pos, uint64_t r)
{
	static const uint8_t evex_maps[] = { 1, 2, 3, 5, 6 };
	bool shape = (r >> 4) & 1, plain = (r >> 5) & 1;
	uint64_t s = r >> 6;

	switch (random_escapes[r & 15]) {
	case ESC_0F:
		b[pos] = 0x0f;
		break;
	case ESC_0F38:
	case ESC_0F3A:
	case ESC_3DNOW:
		b[pos] = 0x0f;
		b[pos + 1] = random_escapes[r & 15] == ESC_0F38 ? 0x38 :
			     random_escapes[r & 15] == ESC_0F3A ? 0x3a : 0x0f;
		break;
	case ESC_VEX2:
		b[pos] = 0xc5;
		if (shape && plain)
			b[pos + 1] |= 0x78;
		break;
	case ESC_VEX3:
	case ESC_XOP:
		b[pos] = random_escapes[r & 15] == ESC_VEX3 ? 0xc4 : 0x8f;
		if (!shape)
			break;
		b[pos + 1] = (uint8_t)((b[pos + 1] & 0xe0) |
				       (b[pos] == 0xc4 ? 1 + s % 3 : 8 + s % 3));
		if (plain)
			b[pos + 2] |= 0x78;
		break;
	default:
		b[pos] = 0x62;
		if (!shape)
			break;
		b[pos + 1] = (uint8_t)((b[pos + 1] & 0xe0) | evex_maps[s % 5]);
		if ((s >> 3) & 3)
			b[pos + 1] |= 0x10;	/* R' = 1: no high register, 3 times in 4 */
		b[pos + 2] |= 0x04;
		if (plain) {
			b[pos + 2] |= 0x78;
			b[pos + 3] = (uint8_t)((b[pos + 3] & 0x17) | 0x08 | ((s >> 5) % 3) << 5);
		}
		break;
	}
}

/*
 * String i depends only on (seed, i): a mismatch reported as "random #i"
 * comes back with the same seed whatever N is.
 */
static void random_string(uint64_t seed, uint64_t i, uint8_t b[RANDOM_LEN])
{
	uint64_t state = seed ^ (i * 0xd1342543de82ef95ull);
	uint64_t w0 = rng_next(&state), w1 = rng_next(&state), r = rng_next(&state);
	size_t pos = 0;

	memcpy(b, &w0, 8);
	memcpy(b + 8, &w1, 8);
	switch (r & 7) {
	case 0:
	case 1:			/* 1/4: legacy and REX prefixes, half of them before an escape */
		pos = 1 + ((r >> 3) & 3);
		for (size_t j = 0; j < pos; j++)
			b[j] = random_prefixes[(r >> (5 + 5 * j)) % sizeof(random_prefixes)];
		if ((r >> 30) & 1)
			random_escape(b, pos, r >> 31);
		break;
	case 2:			/* 1/8: an escape first */
		random_escape(b, 0, r >> 3);
		break;
	default:		/* the rest: plain random bytes */
		break;
	}
}

static void random_check(struct diff *d, uint64_t count, uint64_t seed)
{
	uint8_t b[RANDOM_LEN];

	printf(PROG ": random: %" PRIu64 " strings, seed %" PRIu64 "\n", count, seed);
	for (uint64_t i = 0; i < count; i++) {
		struct where w = { .index = i };

		random_string(seed, i, b);
		position_check(d, b, RANDOM_LEN, 0, &w, true);
	}
}

/* ---- report ----------------------------------------------------------- */

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static void summary_print(struct diff *d)
{
	size_t n = 0;

	printf(PROG ": summary: mismatches by kind:");
	for (unsigned int k = 0; k < MK__COUNT; k++)
		if (d->st.by_kind[k])
			printf(" %s %" PRIu64, kind_names[k], d->st.by_kind[k]);
	printf("%s\n", d->st.mismatches ? "" : " none");
	for (size_t i = 0; i < d->groups_cap; i++)
		if (d->groups[i].key)
			d->groups[n++] = d->groups[i];
	if (n)
		qsort(d->groups, n, sizeof(*d->groups), group_cmp);
	printf(PROG ": summary: %zu groups (encoding, map, opcode, kind), top %lu:\n", n,
	       d->top < n ? d->top : (unsigned long)n);
	for (size_t i = 0; i < n && i < d->top; i++) {
		const struct group *g = &d->groups[i];
		enum mismatch_kind kind;
		struct enc_key k = key_unpack(g->key, &kind);
		char name[48], mn[64] = "";
		size_t pos = 0;

		key_format(&k, name, sizeof(name));
		for (unsigned int j = 0; j < 3 && g->mnemonics[j] != ZYDIS_MNEMONIC_INVALID; j++)
			pos += (size_t)snprintf(mn + pos, sizeof(mn) - pos, "%s%s", j ? "," : "",
						ZydisMnemonicGetString(g->mnemonics[j]));
		if (g->more_mnemonics && pos < sizeof(mn))
			snprintf(mn + pos, sizeof(mn) - pos, ",...");
		printf("%9" PRIu64 "  %-12s %-18s %-24s e.g. %s\n", g->count, kind_names[kind],
		       name, mn[0] ? mn : "-", g->example);
	}
	/* The hash table was compacted for sorting: it is not used again. */
	d->ngroups = 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " [OPTION]... FILE...\n"
		"       " PROG " [OPTION]... --random N [--seed S]\n"
		"Compares the x86-64 decoder with Zydis over every function of each ELF\n"
		"FILE, or over N random 16-byte strings.\n"
		"\n"
		"  --random N       check N random strings instead of files\n"
		"  --seed S         seed of the random strings (default: from the clock;\n"
		"                   always printed)\n"
		"  --max-print N    print at most N mismatch lines (default 50), count all\n"
		"  --summary        group mismatches by encoding, map, opcode and kind\n"
		"  --top N          groups shown by --summary (default 40)\n"
		"  --help           show this help\n"
		"\n"
		"Exit status: 0 when every difference is intentional, 1 on mismatches,\n"
		"2 on usage or input errors.\n");
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && !*end;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "random", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "max-print", required_argument, NULL, 'm' },
		{ "summary", no_argument, NULL, 'S' },
		{ "top", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct diff d = { .max_print = 50, .top = 40 };
	uint64_t count = 0, seed = 0, v;
	bool random_mode = false, seeded = false, io_error = false;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (!parse_u64(optarg, &count))
				goto bad_number;
			random_mode = true;
			break;
		case 's':
			if (!parse_u64(optarg, &seed))
				goto bad_number;
			seeded = true;
			break;
		case 'm':
			if (!parse_u64(optarg, &v))
				goto bad_number;
			d.max_print = (unsigned long)v;
			break;
		case 'S':
			d.summary = true;
			break;
		case 't':
			if (!parse_u64(optarg, &v))
				goto bad_number;
			d.top = (unsigned long)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (random_mode == (optind < argc)) {
		fprintf(stderr, PROG ": %s\n", random_mode ? "--random takes no FILE"
							   : "no FILE given");
		usage(stderr);
		return 2;
	}
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&d.zydis, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64))) {
		fprintf(stderr, PROG ": cannot initialize Zydis\n");
		return 2;
	}

	if (random_mode) {
		if (!seeded) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			seed = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		}
		random_check(&d, count, seed);
	} else {
		for (int i = optind; i < argc; i++)
			if (file_check(&d, argv[i]))
				io_error = true;
	}

	if (d.st.printed < d.st.mismatches)
		printf(PROG ": %" PRIu64 " more mismatch lines not printed (--max-print)\n",
		       d.st.mismatches - d.st.printed);
	if (d.summary)
		summary_print(&d);
	for (const struct intentional *e = intentional; e->reason; e++)
		printf("intentional: %s: %" PRIu64 "\n", e->reason,
		       d.st.intentional[e - intentional]);
	printf(PROG ": %" PRIu64 " instructions, %" PRIu64 " mismatches\n", d.st.insns,
	       d.st.mismatches);
	free(d.groups);
	if (io_error)
		return 2;
	return d.st.mismatches ? 1 : 0;

bad_number:
	fprintf(stderr, PROG ": invalid number '%s'\n", optarg);
	usage(stderr);
	return 2;
}
