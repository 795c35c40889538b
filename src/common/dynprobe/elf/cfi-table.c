/*
 * .eh_frame compiled into CFI tables (cfi-table.h): CIEs and FDEs read with
 * the bounded reader, each FDE's call frame program run once, a row emitted
 * each time the location advances, then all rows sorted and merged.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "elf/cfi-table.h"
#include "elf/ehbytes.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* remember_state nesting an FDE may use; compilers use one or two. */
#define STATE_STACK 8

enum rule {
	RULE_SAME,		/* unchanged (rbp), or not described */
	RULE_OFFSET,		/* saved at CFA + off */
	RULE_UNDEFINED,
	RULE_OTHER,		/* register, expression, val_*: not in a row */
};

enum cfa {
	CFA_REG,		/* reg + off */
	CFA_PLT,		/* the PLT expression: rsp + off, + 8 past arg */
	CFA_OTHER,		/* any other expression */
};

struct state {
	enum cfa cfa;
	uint64_t cfa_reg;
	int64_t cfa_off;
	uint8_t plt_arg;
	enum rule ra, rbp;
	int64_t ra_off, rbp_off;
};

struct cie {
	uint64_t off;		/* in the section; UINT64_MAX: none parsed */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool zaug, signal;
	const uint8_t *insns, *insns_end;
};

struct rows {
	struct dp_cfi_row *v;
	size_t n, cap;
};

/* ---- rows ------------------------------------------------------------- */

static int rows_push(struct rows *r, const struct dp_cfi_row *row)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct dp_cfi_row *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *row;
	return 0;
}

static bool fits16(int64_t v)
{
	return v > INT16_MIN && v <= INT16_MAX;
}

/* The row a state says, STOP when a row cannot say it. */
static struct dp_cfi_row state_row(const struct state *s, const struct cie *c)
{
	struct dp_cfi_row row = { .kind = DP_CFI_STOP };

	if (c->signal) {
		row.kind = DP_CFI_SIGNAL;
		return row;
	}
	if (s->ra == RULE_UNDEFINED) {
		row.kind = DP_CFI_END;
		return row;
	}
	if (s->ra != RULE_OFFSET || !fits16(s->ra_off) ||
	    s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX)
		return row;
	if (s->cfa == CFA_PLT)
		row.kind = DP_CFI_PLT;
	else if (s->cfa == CFA_REG && s->cfa_reg == REG_RSP)
		row.kind = DP_CFI_RSP;
	else if (s->cfa == CFA_REG && s->cfa_reg == REG_RBP)
		row.kind = DP_CFI_RBP;
	else
		return row;
	row.cfa_off = (int32_t)s->cfa_off;
	row.arg = s->plt_arg;
	row.ra_off = (int16_t)s->ra_off;
	if (s->rbp == RULE_OFFSET && fits16(s->rbp_off) && s->rbp_off)
		row.rbp_off = (int16_t)s->rbp_off;
	else if (s->rbp != RULE_SAME)
		row.rbp_off = DP_CFI_RBP_LOST;
	return row;
}

/* ---- the call frame program ------------------------------------------- */

/*
 * The PLT's CFA expression: rsp + N, plus 8 once the entry's push has run,
 * which the expression tells from the address's low 4 bits:
 *   breg7 N; breg16 0; lit15; and; litK; ge; lit3; shl; plus
 */
static enum cfa expr_cfa(const uint8_t *p, size_t len, int64_t *off, uint8_t *arg)
{
	struct dp_ehread r = { p, p + len, 0 };
	uint64_t n, zero;
	uint8_t op, k;

	if (dp_ehread_u8(&r, &op) || op != DW_OP_breg7 || dp_ehread_leb(&r, true, &n) ||
	    dp_ehread_u8(&r, &op) || op != DW_OP_breg16 || dp_ehread_leb(&r, true, &zero) || zero)
		return CFA_OTHER;
	if ((size_t)(r.end - r.p) != 7)
		return CFA_OTHER;
	k = r.p[2];
	if (r.p[0] != DW_OP_lit15 || r.p[1] != DW_OP_and || k < DW_OP_lit0 || k > DW_OP_lit15 ||
	    r.p[3] != DW_OP_ge || r.p[4] != DW_OP_lit3 || r.p[5] != DW_OP_shl || r.p[6] != DW_OP_plus)
		return CFA_OTHER;
	*off = (int64_t)n;
	*arg = (uint8_t)(k - DW_OP_lit0);
	return CFA_PLT;
}

static void rule_set(struct state *s, uint64_t reg, enum rule rule, int64_t off)
{
	if (reg == REG_RA) {
		s->ra = rule;
		s->ra_off = off;
	} else if (reg == REG_RBP) {
		s->rbp = rule;
		s->rbp_off = off;
	}
}

static void rule_restore(struct state *s, const struct state *init, uint64_t reg)
{
	if (reg == REG_RA) {
		s->ra = init->ra;
		s->ra_off = init->ra_off;
	} else if (reg == REG_RBP) {
		s->rbp = init->rbp;
		s->rbp_off = init->rbp_off;
	}
}

struct run {
	const struct cie *cie;
	struct state s, init;
	struct state stack[STATE_STACK];
	unsigned depth;
	/* FDE programs only (the CIE's has no locations): */
	bool fde;
	uint64_t loc, row_start, end;
	struct rows *rows;
	uint64_t base;
	const uint8_t *sec;	/* the section and its address: pc-relative reads */
	uint64_t sec_vaddr;
};

static int emit(struct run *x, uint64_t upto)
{
	struct dp_cfi_row row;

	if (upto <= x->row_start)
		return 0;
	row = state_row(&x->s, x->cie);
	row.pc = (uint32_t)(x->row_start - x->base);
	x->row_start = upto;
	return rows_push(x->rows, &row);
}

static int advance(struct run *x, uint64_t delta)
{
	if (!x->fde)
		return -EINVAL;
	x->loc += delta * x->cie->code_align;
	if (x->loc > x->end)
		x->loc = x->end;
	return emit(x, x->loc);
}

/* One instruction; -EINVAL for what this table cannot follow (the FDE
 * becomes STOP), -ENOMEM. */
static int step(struct run *x, struct dp_ehread *r, uint8_t op)
{
	const struct cie *c = x->cie;
	uint64_t reg, u, len;
	int64_t off;
	int ret = 0;

	switch (op >> 6) {
	case 1:
		return advance(x, op & 0x3f);
	case 2:
		if (dp_ehread_leb(r, false, &u))
			return -EINVAL;
		rule_set(&x->s, op & 0x3f, RULE_OFFSET, (int64_t)u * c->data_align);
		return 0;
	case 3:
		rule_restore(&x->s, &x->init, op & 0x3f);
		return 0;
	}
	switch (op) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_set_loc:
		if (!x->fde || dp_ehread_pointer(r, c->fde_enc, &u) || u < x->loc)
			return -EINVAL;
		x->loc = u > x->end ? x->end : u;
		return emit(x, x->loc);
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
		if (dp_ehread_fixed(r, op == DW_CFA_advance_loc1 ? 1 : op == DW_CFA_advance_loc2 ? 2 : 4,
				    false, &u))
			return -EINVAL;
		return advance(x, u);
	case DW_CFA_offset_extended:
	case DW_CFA_offset_extended_sf:
	case DW_CFA_GNU_negative_offset_extended:
		if (dp_ehread_leb(r, false, &reg) ||
		    dp_ehread_leb(r, op == DW_CFA_offset_extended_sf, &u))
			return -EINVAL;
		off = (int64_t)u * c->data_align;
		rule_set(&x->s, reg, RULE_OFFSET,
			 op == DW_CFA_GNU_negative_offset_extended ? -off : off);
		return 0;
	case DW_CFA_restore_extended:
		if (dp_ehread_leb(r, false, &reg))
			return -EINVAL;
		rule_restore(&x->s, &x->init, reg);
		return 0;
	case DW_CFA_undefined:
	case DW_CFA_same_value:
		if (dp_ehread_leb(r, false, &reg))
			return -EINVAL;
		rule_set(&x->s, reg, op == DW_CFA_undefined ? RULE_UNDEFINED : RULE_SAME, 0);
		return 0;
	case DW_CFA_register:
		if (dp_ehread_leb(r, false, &reg) || dp_ehread_leb(r, false, &u))
			return -EINVAL;
		rule_set(&x->s, reg, RULE_OTHER, 0);
		return 0;
	case DW_CFA_remember_state:
		if (x->depth == STATE_STACK)
			return -EINVAL;
		x->stack[x->depth++] = x->s;
		return 0;
	case DW_CFA_restore_state:
		if (!x->depth)
			return -EINVAL;
		x->s = x->stack[--x->depth];
		return 0;
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
		if (dp_ehread_leb(r, false, &reg) || dp_ehread_leb(r, op == DW_CFA_def_cfa_sf, &u))
			return -EINVAL;
		x->s.cfa = CFA_REG;
		x->s.cfa_reg = reg;
		x->s.cfa_off = op == DW_CFA_def_cfa_sf ? (int64_t)u * c->data_align : (int64_t)u;
		return 0;
	case DW_CFA_def_cfa_register:
		if (dp_ehread_leb(r, false, &reg))
			return -EINVAL;
		/* After an expression, a register rule needs its offset too. */
		if (x->s.cfa != CFA_REG)
			x->s.cfa = CFA_OTHER;
		x->s.cfa_reg = reg;
		return 0;
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
		if (dp_ehread_leb(r, op == DW_CFA_def_cfa_offset_sf, &u))
			return -EINVAL;
		x->s.cfa_off = op == DW_CFA_def_cfa_offset_sf ? (int64_t)u * c->data_align
							       : (int64_t)u;
		return 0;
	case DW_CFA_def_cfa_expression:
		if (dp_ehread_leb(r, false, &len) || len > (size_t)(r->end - r->p))
			return -EINVAL;
		x->s.cfa = expr_cfa(r->p, len, &x->s.cfa_off, &x->s.plt_arg);
		dp_ehread_skip(r, len);
		return 0;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if (dp_ehread_leb(r, false, &reg) || dp_ehread_leb(r, false, &len) ||
		    len > (size_t)(r->end - r->p))
			return -EINVAL;
		dp_ehread_skip(r, len);
		rule_set(&x->s, reg, RULE_OTHER, 0);
		return 0;
	case DW_CFA_val_offset:
	case DW_CFA_val_offset_sf:
		if (dp_ehread_leb(r, false, &reg) || dp_ehread_leb(r, op == DW_CFA_val_offset_sf, &u))
			return -EINVAL;
		rule_set(&x->s, reg, RULE_OTHER, 0);
		return 0;
	case DW_CFA_GNU_args_size:
		return dp_ehread_leb(r, false, &u) ? -EINVAL : 0;
	default:
		ret = -EINVAL;
	}
	return ret;
}

static int run_program(struct run *x, const uint8_t *p, const uint8_t *end)
{
	struct dp_ehread r = { p, end, x->sec_vaddr + (uint64_t)(p - x->sec) };

	while (r.p < r.end) {
		uint8_t op;
		int ret;

		if (dp_ehread_u8(&r, &op))
			return -EINVAL;
		ret = step(x, &r, op);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- CIEs and FDEs ----------------------------------------------------- */

/* An entry's length field: *body and *next bound its contents.  1: the
 * terminator. */
static int entry_bounds(struct dp_ehread *r, const uint8_t **next)
{
	uint64_t len;

	if (dp_ehread_fixed(r, 4, false, &len))
		return -EINVAL;
	if (len == 0xffffffff && dp_ehread_fixed(r, 8, false, &len))
		return -EINVAL;
	if (!len)
		return 1;
	if (len > (size_t)(r->end - r->p))
		return -EINVAL;
	*next = r->p + len;
	r->end = *next;
	return 0;
}

/* The CIE at p (its length field), within [sec, sec_end). */
static int cie_parse(const uint8_t *sec, const uint8_t *sec_end, uint64_t sec_vaddr,
		     const uint8_t *p, struct cie *c)
{
	struct dp_ehread r = { p, sec_end, sec_vaddr + (uint64_t)(p - sec) };
	const uint8_t *next, *aug, *aug_end = NULL;
	uint64_t id, u;
	uint8_t version, b;
	size_t auglen;

	memset(c, 0, sizeof(*c));
	c->off = (uint64_t)(p - sec);
	if (entry_bounds(&r, &next) || dp_ehread_fixed(&r, 4, false, &id) || id ||
	    dp_ehread_u8(&r, &version) || (version != 1 && version != 3))
		return -EINVAL;
	aug = r.p;
	auglen = strnlen((const char *)aug, (size_t)(r.end - r.p));
	if (auglen == (size_t)(r.end - r.p))
		return -EINVAL;
	dp_ehread_skip(&r, auglen + 1);
	if (auglen >= 2 && aug[0] == 'e' && aug[1] == 'h')
		dp_ehread_skip(&r, 8 > r.end - r.p ? (size_t)(r.end - r.p) : 8);
	if (dp_ehread_leb(&r, false, &c->code_align) ||
	    dp_ehread_leb(&r, true, (uint64_t *)&c->data_align))
		return -EINVAL;
	if (version == 1) {
		if (dp_ehread_u8(&r, &b))
			return -EINVAL;
		c->ra_reg = b;
	} else if (dp_ehread_leb(&r, false, &c->ra_reg)) {
		return -EINVAL;
	}
	c->fde_enc = DW_EH_PE_absptr;
	for (size_t i = 0; i < auglen; i++) {
		switch (aug[i]) {
		case 'z':
			if (i || dp_ehread_leb(&r, false, &u) || u > (size_t)(r.end - r.p))
				return -EINVAL;
			c->zaug = true;
			aug_end = r.p + u;
			break;
		case 'R':
			if (dp_ehread_u8(&r, &c->fde_enc))
				return -EINVAL;
			break;
		case 'L':
			if (dp_ehread_u8(&r, &b))
				return -EINVAL;
			break;
		case 'P':
			if (dp_ehread_u8(&r, &b) || dp_ehread_format(&r, b, &u))
				return -EINVAL;
			break;
		case 'S':
			c->signal = true;
			break;
		case 'B':
		case 'G':
			break;
		default:
			/* Unknown letters: only 'z' tells how to skip them. */
			if (!aug_end)
				return -EINVAL;
			i = auglen;
		}
	}
	if (aug_end)
		r.p = aug_end;
	if (c->ra_reg != REG_RA || !c->code_align)
		return -EINVAL;
	c->insns = r.p;
	c->insns_end = next;
	return 0;
}

/* The initial state a CIE's program sets up. */
static int cie_state(struct run *x)
{
	x->s = (struct state){ .cfa = CFA_OTHER, .ra = RULE_SAME, .rbp = RULE_SAME };
	x->fde = false;
	x->depth = 0;
	if (run_program(x, x->cie->insns, x->cie->insns_end))
		return -EINVAL;
	x->init = x->s;
	return 0;
}

/*
 * One FDE (its contents after the CIE pointer in r): its rows, then a STOP
 * row at its end.  A program this table cannot follow leaves the whole
 * range STOP.
 */
static int fde_compile(struct run *x, struct dp_ehread *r, struct dp_cfi_table *t,
		       struct dp_err *err)
{
	const struct cie *c = x->cie;
	uint64_t start, range, u;
	size_t first = x->rows->n;
	struct dp_cfi_row stop = { .kind = DP_CFI_STOP };
	int ret;

	if (dp_ehread_pointer(r, c->fde_enc, &start) ||
	    dp_ehread_format(r, c->fde_enc & 0x0f, &range))
		return 0;	/* not an FDE that can cover anything: ignore */
	if (!range)
		return 0;
	if (start < x->base || start + range - x->base > UINT32_MAX || start + range < start)
		return dp_err_set(err, -EINVAL, "an FDE at 0x%llx (+0x%llx) lies outside 4 GiB "
				  "of the object's base 0x%llx", (unsigned long long)start,
				  (unsigned long long)range, (unsigned long long)x->base);
	if (c->zaug) {
		if (dp_ehread_leb(r, false, &u) || u > (size_t)(r->end - r->p))
			goto failed;
		dp_ehread_skip(r, u);
	}
	x->s = x->init;
	x->depth = 0;
	x->fde = true;
	x->loc = x->row_start = start;
	x->end = start + range;
	ret = run_program(x, r->p, r->end);
	if (ret == -ENOMEM)
		return dp_err_set(err, -ENOMEM, "out of memory");
	if (ret)
		goto failed;
	if ((ret = emit(x, x->end)))
		return dp_err_set(err, ret, "out of memory");
	t->fdes++;
	goto end;
failed:
	x->rows->n = first;
	stop.pc = (uint32_t)(start - x->base);
	if (rows_push(x->rows, &stop))
		return dp_err_set(err, -ENOMEM, "out of memory");
	t->fdes_failed++;
end:
	stop.kind = DP_CFI_STOP;
	stop.pc = (uint32_t)(start + range - x->base);
	/* Marks the end: sorted before a row of another FDE at the same pc. */
	stop.arg = 1;
	if (rows_push(x->rows, &stop))
		return dp_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* By pc; at equal pcs an FDE's end marker first, so that the row of the FDE
 * starting there wins. */
static int row_cmp(const void *a, const void *b)
{
	const struct dp_cfi_row *x = a, *y = b;
	bool xe = x->kind == DP_CFI_STOP && x->arg, ye = y->kind == DP_CFI_STOP && y->arg;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	return (int)ye - (int)xe;
}

static bool row_same_rule(const struct dp_cfi_row *a, const struct dp_cfi_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->ra_off == b->ra_off &&
	       a->rbp_off == b->rbp_off && a->arg == b->arg;
}

/* Sorted, one row per pc (the last), neighbours with the same rule merged. */
static void rows_finish(struct rows *rows)
{
	size_t n = 0;

	qsort(rows->v, rows->n, sizeof(*rows->v), row_cmp);
	for (size_t i = 0; i < rows->n; i++) {
		struct dp_cfi_row row = rows->v[i];

		if (row.kind == DP_CFI_STOP)
			row.arg = 0;
		if (n && rows->v[n - 1].pc == row.pc)
			n--;
		if (n && row_same_rule(&rows->v[n - 1], &row))
			continue;
		rows->v[n++] = row;
	}
	rows->n = n;
}

/* The block index of cfi-table.h, over rows already sorted. */
static int blocks_index(struct dp_cfi_table *t, struct dp_err *err)
{
	uint32_t first = t->rows[0].pc, span = t->rows[t->n - 1].pc - first;
	struct dp_cfi_row *v = realloc(t->rows, (t->n + DP_CFI_SCAN - 1) * sizeof(*v));
	size_t r = 0;

	if (!v)
		return dp_err_set(err, -ENOMEM, "out of memory");
	t->rows = v;
	for (size_t i = t->n; i < t->n + DP_CFI_SCAN - 1; i++)
		v[i] = (struct dp_cfi_row){ .pc = UINT32_MAX, .kind = DP_CFI_STOP };
	t->first_pc = first;
	t->nblocks = ((size_t)span >> DP_CFI_BLOCK_SHIFT) + 1;
	t->blocks = malloc((t->nblocks + 1) * sizeof(*t->blocks));
	if (!t->blocks)
		return dp_err_set(err, -ENOMEM, "out of memory");
	for (size_t b = 0; b < t->nblocks; b++) {
		uint64_t at = first + ((uint64_t)b << DP_CFI_BLOCK_SHIFT);

		while (r + 1 < t->n && t->rows[r + 1].pc <= at)
			r++;
		t->blocks[b] = (uint32_t)r;
	}
	t->blocks[t->nblocks] = (uint32_t)(t->n - 1);
	return 0;
}

int dp_cfi_compile(const void *data, size_t len, uint64_t vaddr, uint64_t base,
		   struct dp_cfi_table *t, struct dp_err *err)
{
	const uint8_t *sec = data, *end = sec + len;
	struct rows rows = { 0 };
	struct cie cie = { .off = UINT64_MAX };
	bool cie_ok = false;
	struct run x = { .rows = &rows, .base = base, .sec = sec, .sec_vaddr = vaddr };
	const uint8_t *p = sec;
	int ret = 0;

	memset(t, 0, sizeof(*t));
	t->base = base;
	while (p < end) {
		struct dp_ehread r = { p, end, vaddr + (uint64_t)(p - sec) };
		const uint8_t *next, *cie_at;
		uint64_t id;

		ret = entry_bounds(&r, &next);
		if (ret == 1) {
			ret = 0;
			break;
		}
		if (ret || dp_ehread_fixed(&r, 4, false, &id)) {
			ret = dp_err_set(err, -EINVAL, "truncated .eh_frame entry at offset 0x%zx",
					 (size_t)(p - sec));
			goto out;
		}
		ret = 0;
		if (id) {
			/* An FDE: id is the distance back to its CIE from this field. */
			size_t at = (size_t)(r.p - 4 - sec);

			if (id > at)
				goto next;
			cie_at = sec + at - id;
			if (cie.off != (uint64_t)(cie_at - sec)) {
				cie_ok = !cie_parse(sec, end, vaddr, cie_at, &cie);
				cie.off = (uint64_t)(cie_at - sec);
				x.cie = &cie;
				cie_ok = cie_ok && !cie_state(&x);
			}
			if (cie_ok && (ret = fde_compile(&x, &r, t, err)))
				goto out;
			if (!cie_ok)
				t->fdes_failed++;
		}
next:
		p = next;
	}
	if (rows.n) {
		rows_finish(&rows);
		t->rows = rows.v;
		t->n = rows.n;
		rows.v = NULL;
		if (!(ret = blocks_index(t, err)))
			return 0;
	}
out:
	free(rows.v);
	free(t->rows);
	t->rows = NULL;
	t->n = 0;
	return ret;
}

void dp_cfi_table_release(struct dp_cfi_table *t)
{
	free(t->rows);
	free(t->blocks);
	memset(t, 0, sizeof(*t));
}
