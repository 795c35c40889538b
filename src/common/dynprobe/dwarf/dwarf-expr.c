/*
 * DWARF location expressions into value recipe ops (see dwarf-var.h for
 * what compiles): the entry of a location list for the site's PC, the
 * frame base of DW_OP_fbreg (the CFA from the object's CFI at that PC),
 * pieces kept apart so that a member can be taken from one of them.
 */
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf-var-internal.h"
#include "spec/ctx.h"

/* DWARF's x86-64 numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 (0-15),
 * the return address (16), xmm0-15 (17-32); ours is the hardware order. */
static const int8_t gpr_map[16] = { 0, 2, 1, 3, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15 };

int vx_reg(unsigned dwreg)
{
	if (dwreg < 16)
		return gpr_map[dwreg];
	if (dwreg >= 17 && dwreg <= 32)
		return DP_VALUE_XMM0 + (int)(dwreg - 17);
	return -1;
}

int vx_push(struct vpart *p, uint8_t op, uint8_t arg, int64_t imm, struct dp_err *err)
{
	if (p->nops >= DP_VALUE_MAX_OPS)
		return dp_err_set(err, -E2BIG, "its location takes more than %d steps",
				  DP_VALUE_MAX_OPS);
	p->ops[p->nops++] = (struct dp_value_op){ .op = op, .arg = arg, .imm = imm };
	return 0;
}

static const char *op_name(unsigned atom)
{
	switch (atom) {
	case DW_OP_entry_value: case DW_OP_GNU_entry_value:
		return "DW_OP_entry_value (its value on entry, gone here)";
	case DW_OP_implicit_pointer: case DW_OP_GNU_implicit_pointer:
		return "DW_OP_implicit_pointer (a pointer the compiler removed)";
	case DW_OP_GNU_parameter_ref:
		return "DW_OP_GNU_parameter_ref";
	case DW_OP_regval_type: case DW_OP_GNU_regval_type:
	case DW_OP_deref_type: case DW_OP_GNU_deref_type:
		return "a typed DWARF stack operation";
	}
	return NULL;
}

static int unsupported(unsigned atom, struct dp_err *err)
{
	const char *n = op_name(atom);

	if (n)
		return dp_err_set(err, -EOPNOTSUPP, "its location uses %s, which cannot be read "
				  "at a probe", n);
	return dp_err_set(err, -EOPNOTSUPP, "its location uses DWARF operation 0x%x, which "
			  "cannot be read at a probe", atom);
}

/* The CFA at at->pc as register + offset, from .eh_frame (else
 * .debug_frame). */
static int cfa_rule(const struct dp_dwarf_at *at, uint8_t *reg, int64_t *off,
		    struct dp_err *err)
{
	Dwarf_CFI *cfis[2] = { at->elf ? dwarf_getcfi_elf(at->elf) : NULL, dwarf_getcfi(at->dbg) };
	int ret = -ENOENT;

	for (int i = 0; i < 2 && ret == -ENOENT; i++) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Op *ops;
		size_t nops;

		if (!cfis[i] || dwarf_cfi_addrframe(cfis[i], at->pc, &frame))
			continue;
		if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 &&
		    (ops[0].atom == DW_OP_bregx ||
		     (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31))) {
			unsigned dw = ops[0].atom == DW_OP_bregx ? (unsigned)ops[0].number
								 : (unsigned)(ops[0].atom - DW_OP_breg0);
			int r = vx_reg(dw);

			*off = ops[0].atom == DW_OP_bregx ? (int64_t)ops[0].number2
							  : (int64_t)ops[0].number;
			if (r >= 0 && r < 16) {
				*reg = (uint8_t)r;
				ret = 0;
			} else {
				ret = -EOPNOTSUPP;
			}
		} else {
			ret = -EOPNOTSUPP;
		}
		free(frame);
	}
	if (cfis[0])
		dwarf_cfi_end(cfis[0]);
	if (ret == -ENOENT)
		return dp_err_set(err, -EOPNOTSUPP, "its frame base is the CFA and no call frame "
				  "information covers 0x%" PRIx64, at->pc);
	if (ret)
		return dp_err_set(err, -EOPNOTSUPP, "its frame base is the CFA and the CFA at "
				  "0x%" PRIx64 " is not a register plus an offset", at->pc);
	return 0;
}

/* Whether elf is an executable (ET_EXEC, or ET_DYN marked DF_1_PIE): its
 * TLS block is the first, at a fixed offset below the thread pointer. */
static bool is_executable(Elf *elf, size_t nph)
{
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh))
		return false;
	if (eh.e_type == ET_EXEC)
		return true;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		GElf_Dyn dyn;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_DYNAMIC)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_DYN);
		for (int k = 0; d && gelf_getdyn(d, k, &dyn); k++)
			if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
				return true;
	}
	return false;
}

/*
 * Where an executable's TLS block starts below the thread pointer (fs_base
 * on x86-64, TLS variant II): the loader places the executable's block first,
 * its size rounded up to its alignment (the first byte's misalignment kept).
 * A shared library's block is placed at run time: -EOPNOTSUPP.
 */
static int exe_tls_offset(Elf *elf, uint64_t *off)
{
	size_t nph = 0;

	if (!elf || elf_getphdrnum(elf, &nph) || !is_executable(elf, nph))
		return -EOPNOTSUPP;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t align, first;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_TLS)
			continue;
		align = ph.p_align ? ph.p_align : 1;
		if (align & (align - 1))
			return -EOPNOTSUPP;
		first = -ph.p_vaddr & (align - 1);
		*off = ((ph.p_memsz - first + align - 1) & ~(align - 1)) + first;
		return 0;
	}
	return -EOPNOTSUPP;
}

/* DW_OP_form_tls_address after a constant: that offset in the executable's
 * TLS block, from fs_base. */
static int tls_address(const struct dp_dwarf_at *at, struct vpart *p, struct dp_err *err)
{
	struct dp_value_op *last = p->nops ? &p->ops[p->nops - 1] : NULL;
	uint64_t off;

	if (!last || last->op != DP_VOP_CONST || exe_tls_offset(at->elf, &off))
		return dp_err_set(err, -EOPNOTSUPP, "it is a thread-local variable of a shared "
				  "library (only an executable's can be read at a probe)");
	*last = (struct dp_value_op){ .op = DP_VOP_REG, .arg = DP_CTX_REG_FS_BASE,
				      .imm = last->imm - (int64_t)off };
	return 0;
}

/* Pushes the frame base of fn (DW_AT_frame_base) at at->pc plus off. */
static int frame_base(const struct dp_dwarf_at *at, Dwarf_Die *fn, int64_t off, struct vpart *p,
		      struct dp_err *err)
{
	Dwarf_Attribute attr;
	Dwarf_Op *ops;
	size_t nops;
	uint8_t reg;
	int64_t cfa;
	int ret;

	if (!fn || !dwarf_attr_integrate(fn, DW_AT_frame_base, &attr) ||
	    dwarf_getlocation_addr(&attr, at->pc, &ops, &nops, 1) != 1 || nops != 1)
		return dp_err_set(err, -EOPNOTSUPP, "its location is relative to a frame base "
				  "that is not known at 0x%" PRIx64, at->pc);
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		ret = cfa_rule(at, &reg, &cfa, err);
		return ret ? ret : vx_push(p, DP_VOP_REG, reg, cfa + off, err);
	}
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg15)
		return vx_push(p, DP_VOP_REG, (uint8_t)vx_reg(ops[0].atom - DW_OP_breg0),
			       (int64_t)ops[0].number + off, err);
	if (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg15)
		return vx_push(p, DP_VOP_REG, (uint8_t)vx_reg(ops[0].atom - DW_OP_reg0), off, err);
	return unsupported(ops[0].atom, err);
}

/* Little-endian bytes of an implicit value or a block constant. */
static int block_const(const Dwarf_Block *b, struct vpart *p, struct dp_err *err)
{
	uint64_t v = 0;

	if (b->length > 8)
		return dp_err_set(err, -EOPNOTSUPP, "its value is a constant of %zu bytes (at "
				  "most 8 can be recorded)", (size_t)b->length);
	memcpy(&v, b->data, b->length);
	p->kind = VPART_VALUE;
	return vx_push(p, DP_VOP_CONST, 0, (int64_t)v, err);
}

/* Closes the part being built at a DW_OP_piece (or the end). */
static int end_part(struct vloc *out, struct vpart *p, bool any, uint32_t *off, uint64_t size,
		    struct dp_err *err)
{
	if (out->nparts >= VLOC_MAX_PARTS)
		return dp_err_set(err, -EOPNOTSUPP, "its location has more than %d pieces",
				  VLOC_MAX_PARTS);
	if (!any)
		p->kind = VPART_NONE;
	else if (p->kind == VPART_BAD)
		p->nops = 0;
	p->off = *off;
	p->size = (uint32_t)size;
	*off += (uint32_t)size;
	out->parts[out->nparts++] = *p;
	memset(p, 0, sizeof(*p));
	p->kind = VPART_ADDR;
	return 0;
}

/* DW_OP_and with a constant of low bits (2^n - 1) just before: what
 * compilers write to truncate a register to a narrow type (clang's bool),
 * the recipe's BITS n. */
static int and_mask(struct vpart *p, struct dp_err *err)
{
	struct dp_value_op *last = p->nops ? &p->ops[p->nops - 1] : NULL;
	uint64_t m = last ? (uint64_t)last->imm : 0;
	unsigned n = 0;

	if (!last || last->op != DP_VOP_CONST || p->nops < 2 || !m || (m & (m + 1)))
		return unsupported(DW_OP_and, err);
	while (n < 64 && (m >> n) & 1)
		n++;
	if (n == 64) {
		p->nops--;	/* and with all ones */
		return 0;
	}
	*last = (struct dp_value_op){ .op = DP_VOP_BITS, .arg = (uint8_t)n, .imm = 0 };
	return 0;
}

/* DW_OP_convert to an integer base type: truncated to its size, extended
 * as it is signed or not (the generic type, offset 0: nothing to do). */
static int convert(Dwarf_Attribute *attr, const Dwarf_Op *op, struct vpart *p,
		   struct dp_err *err)
{
	Dwarf_Word enc, size;
	Dwarf_Attribute a;
	Dwarf_Die t;

	if (!op->number)
		return 0;
	if (dwarf_getlocation_die(attr, op, &t) || dwarf_tag(&t) != DW_TAG_base_type ||
	    !dwarf_attr(&t, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc) ||
	    dwarf_aggregate_size(&t, &size) || size < 1 || size > 8 || enc == DW_ATE_float)
		return unsupported(op->atom, err);
	if (size == 8)
		return 0;
	return vx_push(p, DP_VOP_BITS, (uint8_t)(size * 8),
		       enc == DW_ATE_signed || enc == DW_ATE_signed_char, err);
}

/* One operation of an expression into p (a register op sets p->kind). */
static int one_op(const struct dp_dwarf_at *at, Dwarf_Attribute *attr, Dwarf_Die *fn,
		  const Dwarf_Op *op, struct vpart *p, struct dp_err *err)
{
	unsigned a = op->atom;
	Dwarf_Block b;

	if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
		int r = vx_reg(a - DW_OP_reg0);

		if (r < 0)
			return unsupported(a, err);
		p->kind = VPART_VALUE;
		return vx_push(p, DP_VOP_REG, (uint8_t)r, 0, err);
	}
	if (a == DW_OP_regx) {
		int r = vx_reg((unsigned)op->number);

		if (r < 0)
			return unsupported(a, err);
		p->kind = VPART_VALUE;
		return vx_push(p, DP_VOP_REG, (uint8_t)r, 0, err);
	}
	if ((a >= DW_OP_breg0 && a <= DW_OP_breg31) || a == DW_OP_bregx) {
		int r = vx_reg(a == DW_OP_bregx ? (unsigned)op->number : a - DW_OP_breg0);
		int64_t off = a == DW_OP_bregx ? (int64_t)op->number2 : (int64_t)op->number;

		if (r < 0 || r >= DP_VALUE_XMM0)
			return unsupported(a, err);
		return vx_push(p, DP_VOP_REG, (uint8_t)r, off, err);
	}
	if (a >= DW_OP_lit0 && a <= DW_OP_lit31)
		return vx_push(p, DP_VOP_CONST, 0, a - DW_OP_lit0, err);
	switch (a) {
	case DW_OP_fbreg:
		return frame_base(at, fn, (int64_t)op->number, p, err);
	case DW_OP_call_frame_cfa: {
		uint8_t reg;
		int64_t off;
		int ret = cfa_rule(at, &reg, &off, err);

		return ret ? ret : vx_push(p, DP_VOP_REG, reg, off, err);
	}
	case DW_OP_addr:
		return vx_push(p, DP_VOP_CONST, 0, (int64_t)(op->number + at->bias), err);
	case DW_OP_addrx:
	case DW_OP_GNU_addr_index:
	case DW_OP_constx:
	case DW_OP_GNU_const_index: {
		/* An entry of .debug_addr (DWARF 5, split DWARF): an address is
		 * relocated like DW_OP_addr, a constant is not. */
		Dwarf_Attribute r;
		Dwarf_Addr v;

		if (dwarf_getlocation_attr(attr, op, &r) || dwarf_formaddr(&r, &v))
			return unsupported(a, err);
		if (a == DW_OP_addrx || a == DW_OP_GNU_addr_index)
			v += at->bias;
		return vx_push(p, DP_VOP_CONST, 0, (int64_t)v, err);
	}
	case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u: case DW_OP_const8u:
	case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s: case DW_OP_const8s:
	case DW_OP_constu: case DW_OP_consts:
		return vx_push(p, DP_VOP_CONST, 0, (int64_t)op->number, err);
	case DW_OP_plus_uconst:
		return vx_push(p, DP_VOP_ADDC, 0, (int64_t)op->number, err);
	case DW_OP_plus:
		return vx_push(p, DP_VOP_ADD, 0, 0, err);
	case DW_OP_deref:
		return vx_push(p, DP_VOP_DEREF, 8, 0, err);
	case DW_OP_deref_size:
		if (op->number != 1 && op->number != 2 && op->number != 4 && op->number != 8)
			return unsupported(a, err);
		return vx_push(p, DP_VOP_DEREF, (uint8_t)op->number, 0, err);
	case DW_OP_and:
		return and_mask(p, err);
	case DW_OP_mul:
		/* By a constant just pushed: the recipe's MULC. */
		if (p->nops < 2 || p->ops[p->nops - 1].op != DP_VOP_CONST)
			return unsupported(a, err);
		p->ops[p->nops - 1].op = DP_VOP_MULC;
		return 0;
	case DW_OP_convert:
	case DW_OP_GNU_convert:
		return convert(attr, op, p, err);
	case DW_OP_stack_value:
		p->kind = VPART_VALUE;
		return 0;
	case DW_OP_form_tls_address:
	case DW_OP_GNU_push_tls_address:
		return tls_address(at, p, err);
	case DW_OP_implicit_value:
		if (dwarf_getlocation_implicit_value(attr, op, &b))
			return unsupported(a, err);
		return block_const(&b, p, err);
	}
	return unsupported(a, err);
}

static int compile_expr(const struct dp_dwarf_at *at, Dwarf_Attribute *attr, Dwarf_Die *fn,
			const Dwarf_Op *ops, size_t nops, struct vloc *out, struct dp_err *err)
{
	struct vpart p = { .kind = VPART_ADDR };
	uint32_t off = 0;
	bool any = false, final = false;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < nops; i++) {
		bool has_piece = false;

		for (size_t k = i; k < nops && !has_piece; k++)
			has_piece = ops[k].atom == DW_OP_piece;
		if (ops[i].atom == DW_OP_piece) {
			ret = end_part(out, &p, any, &off, ops[i].number, err);
			any = final = false;
		} else if (ops[i].atom == DW_OP_bit_piece) {
			return dp_err_set(err, -EOPNOTSUPP, "its location is made of bit pieces");
		} else if (p.kind == VPART_BAD) {
			continue;	/* the rest of a piece that does not compile */
		} else {
			/* After a register or a stack value, only a piece may follow. */
			ret = final ? unsupported(ops[i].atom, err)
				    : one_op(at, attr, fn, &ops[i], &p, err);
			any = true;
			final = (ops[i].atom >= DW_OP_reg0 && ops[i].atom <= DW_OP_reg31) ||
				ops[i].atom == DW_OP_regx || ops[i].atom == DW_OP_stack_value ||
				ops[i].atom == DW_OP_implicit_value;
			/* A piece that does not compile fails only what reads it
			 * (another member may be in a piece that does). */
			if (ret && ret != -E2BIG && has_piece) {
				p.kind = VPART_BAD;
				snprintf(p.why, sizeof(p.why), "%.199s", err ? err->msg : "");
				ret = 0;
			}
		}
		if (ret)
			return ret;
	}
	if (any || !out->nparts) {
		if (!any)
			return -ENODATA;	/* an empty expression */
		if (out->nparts)	/* ops after the last piece */
			return dp_err_set(err, -EOPNOTSUPP, "its location has operations after "
					  "its last piece");
		p.off = 0;
		p.size = 0;
		out->parts[out->nparts++] = p;
	}
	return 0;
}

/* "0x1130-0x1142, 0x1150-0x1160" (at most a few) where attr has a location. */
static void ranges_text(Dwarf_Attribute *attr, char *buf, size_t size)
{
	Dwarf_Addr base, start, end;
	Dwarf_Op *expr;
	size_t len, n = 0, used = 0;
	ptrdiff_t off = 0;

	buf[0] = '\0';
	while ((off = dwarf_getlocations(attr, off, &base, &start, &end, &expr, &len)) > 0) {
		if (!len)
			continue;
		if (n++ == 6) {
			snprintf(buf + used, size - used, ", ...");
			return;
		}
		used += (size_t)snprintf(buf + used, size - used, "%s0x%" PRIx64 "-0x%" PRIx64,
					 n > 1 ? ", " : "", start, end);
		if (used >= size)
			return;
	}
}

static int const_value(Dwarf_Attribute *attr, struct vloc *out, struct dp_err *err)
{
	struct vpart *p = &out->parts[0];
	Dwarf_Sword s;
	Dwarf_Block b;

	memset(out, 0, sizeof(*out));
	out->nparts = 1;
	p->kind = VPART_VALUE;
	if (dwarf_formblock(attr, &b) == 0)
		return block_const(&b, p, err);
	if (dwarf_formsdata(attr, &s) == 0)
		return vx_push(p, DP_VOP_CONST, 0, (int64_t)s, err);
	return dp_err_set(err, -EOPNOTSUPP, "its constant value has a form that cannot be read");
}

int vx_location(const struct dp_dwarf_at *at, Dwarf_Die *var, Dwarf_Die *fn, const char *name,
		struct vloc *out, struct dp_err *err)
{
	Dwarf_Attribute attr;
	Dwarf_Op *ops;
	size_t nops;
	char where[200];
	int n, ret;

	if (dwarf_attr_integrate(var, DW_AT_const_value, &attr))
		return const_value(&attr, out, err);
	if (!dwarf_attr(var, DW_AT_location, &attr))
		return dp_err_set(err, -ENODATA, "'%s' is optimized out: it has no location "
				  "anywhere", name);
	n = dwarf_getlocation_addr(&attr, at->pc, &ops, &nops, 1);
	if (n < 0)
		return dp_err_set(err, -EOPNOTSUPP, "the location of '%s' cannot be read: %s",
				  name, dwarf_errmsg(-1));
	ret = n == 0 ? -ENODATA : compile_expr(at, &attr, fn, ops, nops, out, err);
	if (ret == -ENODATA) {
		ranges_text(&attr, where, sizeof(where));
		if (where[0])
			return dp_err_set(err, -ENODATA, "'%s' is optimized out at 0x%" PRIx64
					  ": it has a location only at %s", name, at->pc, where);
		return dp_err_set(err, -ENODATA, "'%s' is optimized out: it has no location "
				  "anywhere", name);
	}
	if (ret)
		dp_err_prefix(err, "'%s' at 0x%" PRIx64 ": ", name, at->pc);
	return ret;
}
