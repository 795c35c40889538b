/*
 * x86-64 instruction decoder: prefixes, escape bytes, VEX/EVEX/XOP payloads,
 * form selection in the generated tables, ModRM/SIB/displacement, immediates,
 * validity rules that do not fit a table, and the register masks.
 *
 * Every byte is fetched through fetch(), which is the only place that knows
 * the buffer's bound and the 15-byte architectural limit.
 */
#include <errno.h>
#include <string.h>

#include "x86/insn.h"
#include "x86/opcodes.h"

struct cursor {
	const uint8_t *bytes;
	size_t len;
	unsigned pos;
};

/* The byte at `off`, or a negative errno: too long beats truncated. */
static int fetch(const struct cursor *c, unsigned off)
{
	if (off >= DP_INSN_MAX_LEN)
		return -EINVAL;
	if (off >= c->len)
		return -ENODATA;
	return c->bytes[off];
}

/* Little-endian signed read of `size` bytes at `off`. */
static int fetch_le(const struct cursor *c, unsigned off, unsigned size, int64_t *out)
{
	uint64_t v = 0;
	int b;

	/* The last byte first: one check covers the whole field. */
	b = fetch(c, off + size - 1);
	if (b < 0)
		return b;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)c->bytes[off + i] << (8 * i);
	if (size < 8 && (v >> (8 * size - 1)) & 1)
		v |= ~0ull << (8 * size);
	*out = (int64_t)v;
	return 0;
}

/* What the prefix and escape stage found, before a form is chosen. */
struct raw {
	unsigned tab;		/* enum dp_optable */
	uint8_t last_f2f3;
	bool rex_r, rex_x, rex_b, evex_rr;
	bool have_modrm;
	uint8_t modrm;
};

static int decode_prefixes(struct cursor *c, struct dp_insn *insn, struct raw *raw)
{
	for (;;) {
		int b = fetch(c, c->pos);

		if (b < 0)
			return b;
		switch (b) {
		case 0xf0:
			insn->prefixes |= DP_PFX_LOCK;
			break;
		case 0xf2:
			insn->prefixes |= DP_PFX_REPNE;
			raw->last_f2f3 = 0xf2;
			break;
		case 0xf3:
			insn->prefixes |= DP_PFX_REP;
			raw->last_f2f3 = 0xf3;
			break;
		case 0x66:
			insn->prefixes |= DP_PFX_OPSIZE;
			break;
		case 0x67:
			insn->prefixes |= DP_PFX_ADSIZE;
			break;
		case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
			insn->prefixes |= DP_PFX_SEG;
			insn->seg = b;
			break;
		default:
			if ((b & 0xf0) == 0x40) {
				/* Only a REX right before the opcode counts. */
				insn->rex = b;
				c->pos++;
				continue;
			}
			return 0;
		}
		insn->rex = 0;
		insn->nprefixes++;
		c->pos++;
	}
}

/* C4/C5/8F/62 payloads.  Called with c->pos on the escape byte. */
static int decode_vex(struct cursor *c, struct dp_insn *insn, struct raw *raw, int esc)
{
	int b1, b2, b3;

	/* These encodings carry their own REX and mandatory prefix bits. */
	if (insn->rex || (insn->prefixes & (DP_PFX_LOCK | DP_PFX_REP | DP_PFX_REPNE | DP_PFX_OPSIZE)))
		return -EINVAL;
	b1 = fetch(c, c->pos + 1);
	if (b1 < 0)
		return b1;

	if (esc == 0xc5) {
		insn->enc = DP_ENC_VEX;
		insn->vex_size = 2;
		raw->rex_r = !(b1 & 0x80);
		insn->vvvv = (~b1 >> 3) & 15;
		insn->l = (b1 >> 2) & 1;
		insn->mandatory = (uint8_t[]){ 0, 0x66, 0xf3, 0xf2 }[b1 & 3];
		insn->map = DP_MAP_0F;
		raw->tab = DP_TAB_V0F;
		c->pos += 2;
		return 0;
	}

	b2 = fetch(c, c->pos + 2);
	if (b2 < 0)
		return b2;
	raw->rex_r = !(b1 & 0x80);
	raw->rex_x = !(b1 & 0x40);
	raw->rex_b = !(b1 & 0x20);
	insn->w = b2 >> 7;
	insn->vvvv = (~b2 >> 3) & 15;
	insn->mandatory = (uint8_t[]){ 0, 0x66, 0xf3, 0xf2 }[b2 & 3];

	if (esc == 0x62) {
		b3 = fetch(c, c->pos + 3);
		if (b3 < 0)
			return b3;
		insn->enc = DP_ENC_EVEX;
		insn->vex_size = 4;
		/* Reserved bits: P0[3] = 0, P1[2] = 1. */
		if ((b1 & 0x08) || !(b2 & 0x04))
			return -EINVAL;
		raw->evex_rr = !(b1 & 0x10);
		insn->map = b1 & 7;
		switch (insn->map) {
		case 1: raw->tab = DP_TAB_E0F; break;
		case 2: raw->tab = DP_TAB_E0F38; break;
		case 3: raw->tab = DP_TAB_E0F3A; break;
		case 5: raw->tab = DP_TAB_EMAP5; break;
		case 6: raw->tab = DP_TAB_EMAP6; break;
		default: return -EINVAL;
		}
		insn->evex_z = b3 >> 7;
		insn->l = (b3 >> 5) & 3;
		insn->evex_b = (b3 >> 4) & 1;
		if (!(b3 & 0x08))
			insn->vvvv |= 16;
		insn->aaa = b3 & 7;
		c->pos += 4;
		return 0;
	}

	insn->l = (b2 >> 2) & 1;
	insn->vex_size = 3;
	insn->map = b1 & 0x1f;
	if (esc == 0xc4) {
		insn->enc = DP_ENC_VEX;
		if (insn->map < 1 || insn->map > 3)
			return -EINVAL;
		raw->tab = DP_TAB_V0F + insn->map - 1;
	} else {
		insn->enc = DP_ENC_XOP;
		if (insn->map < 8 || insn->map > 10)
			return -EINVAL;
		raw->tab = DP_TAB_X8 + insn->map - 8;
	}
	c->pos += 3;
	return 0;
}

/* Finds the opcode byte and its table.  Leaves c->pos after the opcode. */
static int decode_opcode(struct cursor *c, struct dp_insn *insn, struct raw *raw)
{
	int b, b1, b2;

	insn->opcode_off = c->pos;
	b = fetch(c, c->pos);
	if (b < 0)
		return b;

	if (b == 0xc4 || b == 0xc5 || b == 0x62) {
		b = decode_vex(c, insn, raw, b);
	} else if (b == 0x8f) {
		/* XOP when the map field would be 8 or more, POP otherwise. */
		b1 = fetch(c, c->pos + 1);
		if (b1 < 0)
			return b1;
		if ((b1 & 0x1f) >= 8) {
			b = decode_vex(c, insn, raw, b);
		} else {
			raw->tab = DP_TAB_1BYTE;
			insn->opcode = 0x8f;
			c->pos++;
			goto legacy;
		}
	} else if (b == 0x0f) {
		b1 = fetch(c, c->pos + 1);
		if (b1 < 0)
			return b1;
		if (b1 == 0x38 || b1 == 0x3a) {
			b2 = fetch(c, c->pos + 2);
			if (b2 < 0)
				return b2;
			insn->map = b1 == 0x38 ? DP_MAP_0F38 : DP_MAP_0F3A;
			raw->tab = b1 == 0x38 ? DP_TAB_0F38 : DP_TAB_0F3A;
			insn->opcode = b2;
			insn->opcode_off = c->pos + 2;
			c->pos += 3;
		} else if (b1 == 0x0f) {
			/* 3DNow: the opcode comes after the operands. */
			insn->enc = DP_ENC_3DNOW;
			insn->map = DP_MAP_0F;
			raw->tab = DP_TAB_3DNOW;
			c->pos += 2;
		} else {
			insn->map = DP_MAP_0F;
			raw->tab = DP_TAB_0F;
			insn->opcode = b1;
			insn->opcode_off = c->pos + 1;
			c->pos += 2;
		}
		goto legacy;
	} else {
		raw->tab = DP_TAB_1BYTE;
		insn->opcode = b;
		c->pos++;
		goto legacy;
	}
	if (b < 0)
		return b;
	/* VEX, EVEX, XOP: the opcode follows the payload. */
	insn->opcode_off = c->pos;
	b = fetch(c, c->pos);
	if (b < 0)
		return b;
	insn->opcode = b;
	c->pos++;
	return 0;

legacy:
	if (insn->rex) {
		insn->w = (insn->rex >> 3) & 1;
		raw->rex_r = insn->rex & 4;
		raw->rex_x = insn->rex & 2;
		raw->rex_b = insn->rex & 1;
	}
	/* The last F2/F3 selects the form; 66 only when neither is there. */
	if (raw->last_f2f3)
		insn->mandatory = raw->last_f2f3;
	else if (insn->prefixes & DP_PFX_OPSIZE)
		insn->mandatory = 0x66;
	return 0;
}

static bool prefix_matches(uint8_t cond, uint8_t mandatory)
{
	switch (cond) {
	case DP_PFXC_ANY: return true;
	case DP_PFXC_NONE: return mandatory == 0;
	case DP_PFXC_66: return mandatory == 0x66;
	case DP_PFXC_F3: return mandatory == 0xf3;
	case DP_PFXC_F2: return mandatory == 0xf2;
	}
	return false;
}

/* The first form of the opcode whose conditions hold, reading ModRM on demand. */
static int select_form(struct cursor *c, struct dp_insn *insn, struct raw *raw,
		       const struct dp_opform **out)
{
	unsigned key = insn->opcode;
	const struct dp_opindex *ix;
	bool vex = insn->enc == DP_ENC_VEX || insn->enc == DP_ENC_EVEX || insn->enc == DP_ENC_XOP;

	/* 90 is nop only without REX.B: 41 90 is xchg r8, rax like 91-97. */
	if (raw->tab == DP_TAB_1BYTE && key == 0x90 && raw->rex_b)
		key = 0x91;
	ix = &dp_opindex[raw->tab][key];
	for (unsigned i = 0; i < ix->count; i++) {
		const struct dp_opform *f = &dp_opforms[ix->first + i];
		unsigned mod, reg, rm;

		if (!prefix_matches(f->pfx, insn->mandatory))
			continue;
		if (f->w != DP_ANY && f->w != insn->w)
			continue;
		if (vex && f->lmask && !(f->lmask & (1u << insn->l)))
			continue;
		if (f->flags & DP_OF_MODRM) {
			if (!raw->have_modrm) {
				int b = fetch(c, c->pos);

				if (b < 0)
					return b;
				raw->modrm = b;
				raw->have_modrm = true;
			}
			mod = raw->modrm >> 6;
			reg = (raw->modrm >> 3) & 7;
			rm = raw->modrm & 7;
			if (f->mod == DP_MODC_MEM && mod == 3)
				continue;
			if (f->mod == DP_MODC_REG && mod != 3)
				continue;
			if (f->reg != DP_ANY && f->reg != reg)
				continue;
			if (f->rm != DP_ANY && f->rm != rm)
				continue;
		}
		if (!f->mnemonic)
			return -EINVAL;
		*out = f;
		return 0;
	}
	return -EINVAL;
}

/* ModRM, SIB and displacement.  c->pos is on the ModRM byte. */
static int decode_modrm(struct cursor *c, struct dp_insn *insn, const struct raw *raw,
			const struct dp_opform *f)
{
	bool vsib = f && (f->flags & DP_OF_VSIB);
	uint8_t m;
	unsigned rm3;
	int64_t disp;
	int b, ret;

	b = fetch(c, c->pos);
	if (b < 0)
		return b;
	m = b;
	insn->has_modrm = true;
	insn->modrm_off = c->pos++;
	insn->mod = (f && (f->flags & DP_OF_MODREG)) ? 3 : m >> 6;
	insn->reg = ((m >> 3) & 7) | (raw->rex_r << 3) | (raw->evex_rr << 4);
	rm3 = m & 7;
	insn->rm = rm3 | (raw->rex_b << 3);
	insn->index = insn->base = DP_REG_NONE;

	if (insn->mod == 3) {
		if (insn->enc == DP_ENC_EVEX && raw->rex_x)
			insn->rm |= 16;
		return vsib ? -EINVAL : 0;
	}
	insn->attr |= DP_ATTR_MEM;
	if (rm3 == 4) {
		unsigned index, base3;

		b = fetch(c, c->pos);
		if (b < 0)
			return b;
		insn->has_sib = true;
		insn->scale = b >> 6;
		index = ((b >> 3) & 7) | (raw->rex_x << 3);
		base3 = b & 7;
		if (vsib) {
			insn->attr |= DP_ATTR_VSIB;
			/* EVEX.V' extends a vector index to 32 registers. */
			if (insn->enc == DP_ENC_EVEX && (insn->vvvv & 16))
				index |= 16;
			insn->index = index;
		} else {
			insn->index = index == 4 ? DP_REG_NONE : index;
		}
		c->pos++;
		if (base3 == 5 && insn->mod == 0)
			insn->disp_size = 4;
		else
			insn->base = base3 | (raw->rex_b << 3);
	} else if (vsib) {
		return -EINVAL;
	} else if (rm3 == 5 && insn->mod == 0) {
		insn->attr |= DP_ATTR_RIPREL;
		insn->disp_size = 4;
	} else {
		insn->base = insn->rm;
	}
	if (insn->mod == 1)
		insn->disp_size = 1;
	else if (insn->mod == 2)
		insn->disp_size = 4;
	if (insn->disp_size) {
		insn->disp_off = c->pos;
		ret = fetch_le(c, c->pos, insn->disp_size, &disp);
		if (ret)
			return ret;
		insn->disp = disp;
		c->pos += insn->disp_size;
	}
	return 0;
}

static int decode_imm(struct cursor *c, struct dp_insn *insn, const struct dp_opform *f, unsigned k)
{
	unsigned size = 0;
	int64_t v;
	int ret;

	switch (f->imm[k]) {
	case DP_IMM_NONE: return 0;
	case DP_IMM_B: case DP_IMM_JB: size = 1; break;
	case DP_IMM_W: size = 2; break;
	case DP_IMM_D: size = 4; break;
	case DP_IMM_Z: size = insn->opsize == 2 ? 2 : 4; break;
	case DP_IMM_V: size = insn->opsize; break;
	case DP_IMM_JZ:
		/* Near branches are f64 (Intel ignores 66); xbegin is not. */
		size = insn->opsize == 2 ? 2 : 4;
		break;
	case DP_IMM_MOFFS:
		size = insn->adsize;
		ret = fetch_le(c, c->pos, size, &v);
		if (ret)
			return ret;
		insn->attr |= DP_ATTR_MOFFS | DP_ATTR_MEM;
		insn->disp_off = c->pos;
		insn->disp_size = size;
		insn->disp = v;
		c->pos += size;
		return 0;
	}
	ret = fetch_le(c, c->pos, size, &v);
	if (ret)
		return ret;
	if (k == 0) {
		insn->imm_off = c->pos;
		insn->imm_size = size;
		insn->imm = v;
	} else {
		insn->imm2_off = c->pos;
		insn->imm2_size = size;
	}
	if (f->imm[k] == DP_IMM_JB || f->imm[k] == DP_IMM_JZ) {
		insn->attr |= DP_ATTR_REL;
		insn->rel = (int32_t)v;
	}
	c->pos += size;
	return 0;
}

/* Register numbering quirk: without REX, byte registers 4-7 are ah, ch, dh, bh. */
static unsigned gpr_of(const struct dp_insn *insn, unsigned op, unsigned r)
{
	r &= 15;
	if ((op & DP_OP_BYTE) && !insn->rex && r >= 4 && r < 8)
		r -= 4;
	return r;
}

static void compute_regs(struct dp_insn *insn, const struct dp_opform *f, const struct raw *raw)
{
	uint16_t rd = f->rd, wr = f->wr;

	/* A rep prefix on a string instruction counts in rcx. */
	if ((f->flags & DP_OF_REP) && (insn->prefixes & (DP_PFX_REP | DP_PFX_REPNE))) {
		rd |= 1u << DP_REG_RCX;
		wr |= 1u << DP_REG_RCX;
	}

	for (unsigned i = 0; i < 4; i++) {
		unsigned op = f->ops[i], r;

		if (!(op & DP_OP_GPR))
			continue;
		switch (DP_OP_SRC(op)) {
		case DP_OPS_REG: r = gpr_of(insn, op, insn->reg); break;
		case DP_OPS_RM:
			if (insn->mod != 3)
				continue;
			r = gpr_of(insn, op, insn->rm);
			break;
		case DP_OPS_VVVV: r = insn->vvvv & 15; break;
		case DP_OPS_OPC: r = gpr_of(insn, op, (insn->opcode & 7) | (raw->rex_b << 3)); break;
		default: continue;
		}
		if (op & DP_OP_R)
			rd |= 1u << r;
		if (op & DP_OP_W)
			wr |= 1u << r;
	}
	if (insn->has_modrm && insn->mod != 3) {
		if (insn->base != DP_REG_NONE)
			rd |= 1u << insn->base;
		if (insn->index != DP_REG_NONE && !(insn->attr & DP_ATTR_VSIB))
			rd |= 1u << insn->index;
	}
	insn->regs_read = rd;
	insn->regs_written = wr;
}

/* True when ModRM.rm is one of the form's operands, not only a condition. */
static bool rm_is_operand(const struct dp_opform *f)
{
	for (unsigned i = 0; i < 4; i++)
		if (DP_OP_SRC(f->ops[i]) == DP_OPS_RM)
			return true;
	return false;
}

/* Rules that depend on the decoded fields rather than on the opcode alone. */
static int check_form(const struct dp_insn *insn, const struct dp_opform *f)
{
	bool vex = insn->enc == DP_ENC_VEX || insn->enc == DP_ENC_EVEX || insn->enc == DP_ENC_XOP;

	if ((insn->prefixes & DP_PFX_LOCK) && (!(f->flags & DP_OF_LOCK) || insn->mod == 3))
		return -EINVAL;
	/* An unused vvvv must be all ones (0 here); with a VSIB index,
	 * EVEX.V' is the index's top bit, not part of vvvv. */
	unsigned vvvv_mask = insn->enc == DP_ENC_EVEX && (f->flags & DP_OF_VSIB) ? 15 : 31;

	if (vex && !(f->flags & DP_OF_VVVV) && (insn->vvvv & vvvv_mask))
		return -EINVAL;
	if (f->flags & DP_OF_SREG) {
		unsigned s = (insn->reg & 7);

		if (s > 5 || ((f->flags & DP_OF_SREG_DST) && s == 1))
			return -EINVAL;
	}
	if ((f->flags & DP_OF_CREG) &&
	    !(insn->reg == 0 || insn->reg == 2 || insn->reg == 3 || insn->reg == 4 || insn->reg == 8))
		return -EINVAL;
	if ((f->flags & DP_OF_DREG) && insn->reg > 7)
		return -EINVAL;
	if ((f->flags & DP_OF_BND) && insn->reg > 3)
		return -EINVAL;
	if ((f->flags & DP_OF_NORIP) && (insn->attr & DP_ATTR_RIPREL))
		return -EINVAL;
	if ((f->flags & DP_OF_BNDRM) && insn->mod == 3 && insn->rm > 3)
		return -EINVAL;
	if ((f->flags & DP_OF_EVEX_REGK) && insn->reg > 7)
		return -EINVAL;
	if ((f->flags & DP_OF_KVVVV) && insn->vvvv > 7)
		return -EINVAL;
	if ((f->flags & DP_OF_TMM) &&
	    (insn->reg > 7 || ((f->flags & DP_OF_VVVV) && insn->vvvv > 7) ||
	     (insn->mod == 3 && rm_is_operand(f) && insn->rm > 7)))
		return -EINVAL;
	if (f->flags & DP_OF_ALLDISTINCT) {
		unsigned other = (insn->attr & DP_ATTR_VSIB) ? insn->index : insn->rm;

		if (insn->reg == other || insn->reg == insn->vvvv || other == insn->vvvv)
			return -EINVAL;
	}
	if (insn->enc == DP_ENC_EVEX)
		return dp_evex_check(insn, f);
	return 0;
}

int dp_insn_decode(const uint8_t *bytes, size_t len, struct dp_insn *insn)
{
	struct cursor c = { .bytes = bytes, .len = len, .pos = 0 };
	struct raw raw = { 0 };
	const struct dp_opform *f;
	int ret;

	memset(insn, 0, sizeof(*insn));
	insn->index = insn->base = DP_REG_NONE;

	ret = decode_prefixes(&c, insn, &raw);
	if (ret)
		return ret;
	ret = decode_opcode(&c, insn, &raw);
	if (ret)
		return ret;

	if (insn->enc == DP_ENC_3DNOW) {
		/* ModRM and displacement first, then the opcode as a trailing byte. */
		ret = decode_modrm(&c, insn, &raw, NULL);
		if (ret)
			return ret;
		ret = fetch(&c, c.pos);
		if (ret < 0)
			return ret;
		insn->opcode = ret;
		insn->imm_off = c.pos++;
		insn->imm_size = 1;
		insn->imm = insn->opcode;
		raw.have_modrm = true;
		raw.modrm = bytes[insn->modrm_off];
	}

	ret = select_form(&c, insn, &raw, &f);
	if (ret)
		return ret;

	/* A legacy 66/F2/F3 is mandatory only when it chose the form. */
	if (insn->enc == DP_ENC_LEGACY && f->pfx == DP_PFXC_ANY)
		insn->mandatory = 0;

	insn->adsize = (insn->prefixes & DP_PFX_ADSIZE) ? 4 : 8;
	if (insn->w && insn->enc != DP_ENC_EVEX && insn->enc != DP_ENC_VEX && insn->enc != DP_ENC_XOP)
		insn->opsize = 8;
	else if (f->flags & DP_OF_F64)
		insn->opsize = 8;
	else if ((insn->prefixes & DP_PFX_OPSIZE) && insn->mandatory != 0x66 &&
		 (insn->enc == DP_ENC_LEGACY || insn->enc == DP_ENC_3DNOW))
		insn->opsize = 2;
	else if (f->flags & DP_OF_D64)
		insn->opsize = 8;
	else
		insn->opsize = insn->w ? 8 : 4;

	if (insn->enc != DP_ENC_3DNOW && (f->flags & DP_OF_MODRM)) {
		ret = decode_modrm(&c, insn, &raw, f);
		if (ret)
			return ret;
	}
	for (unsigned k = 0; k < 2; k++) {
		ret = decode_imm(&c, insn, f, k);
		if (ret)
			return ret;
	}
	ret = check_form(insn, f);
	if (ret)
		return ret;

	insn->len = c.pos;
	insn->flow = f->flow;
	insn->mnemonic = f->mnemonic;
	if (f->flags & DP_OF_LOCK)
		insn->attr |= DP_ATTR_LOCK_OK;
	if (f->flags & DP_OF_PRIV)
		insn->attr |= DP_ATTR_PRIVILEGED;
	if (f->flags & DP_OF_STACK)
		insn->attr |= DP_ATTR_STACK;
	/* AMD honours 66 on near branches (16-bit operand size) unless REX.W. */
	if ((f->flags & DP_OF_AMBIG) ||
	    ((f->flags & DP_OF_F64) && (insn->prefixes & DP_PFX_OPSIZE) && !insn->w))
		insn->attr |= DP_ATTR_VENDOR_AMBIGUOUS;
	compute_regs(insn, f, &raw);
	return 0;
}

const char *dp_insn_flow_str(enum dp_insn_flow flow)
{
	static const char *const names[DP_FLOW__COUNT] = {
		[DP_FLOW_NONE] = "none", [DP_FLOW_JMP] = "jmp", [DP_FLOW_JCC] = "jcc",
		[DP_FLOW_CALL] = "call", [DP_FLOW_RET] = "ret", [DP_FLOW_LOOP] = "loop",
		[DP_FLOW_XBEGIN] = "xbegin", [DP_FLOW_JMP_IND] = "jmp-indirect",
		[DP_FLOW_CALL_IND] = "call-indirect", [DP_FLOW_FAR] = "far",
		[DP_FLOW_SYSCALL] = "syscall", [DP_FLOW_INT] = "int", [DP_FLOW_UD] = "ud",
		[DP_FLOW_TRAP] = "trap",
	};

	return (unsigned)flow < DP_FLOW__COUNT ? names[flow] : "?";
}

const char *dp_reg_str(enum dp_reg reg)
{
	static const char *const names[16] = {
		"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
	};

	return (unsigned)reg < 16 ? names[reg] : "none";
}
