/*
 * What dwarf-vars.c (names, paths), dwarf-expr.c (locations) and
 * dwarf-types.c (types) share; not part of the folder's contract.
 */
#ifndef DP_DWARF_VAR_INTERNAL_H
#define DP_DWARF_VAR_INTERNAL_H

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "dwarf/dwarf-var.h"
#include "spec/value.h"

/* ---- locations (dwarf-expr.c) ---- */

enum vpart_kind {
	VPART_VALUE,		/* the ops leave the value itself */
	VPART_ADDR,		/* the ops leave the value's address */
	VPART_NONE,		/* a piece with no location: optimized out */
	VPART_BAD,		/* a piece whose location does not compile (why) */
};

/* One part of a variable's location: the whole variable, or one
 * DW_OP_piece of it (bytes off .. off+size). */
struct vpart {
	uint8_t kind;		/* enum vpart_kind */
	uint32_t off, size;	/* size 0: the whole variable (no pieces) */
	uint32_t nops;
	struct dp_value_op ops[DP_VALUE_MAX_OPS];
	char why[200];		/* VPART_BAD: the refusal */
};

#define VLOC_MAX_PARTS 8

struct vloc {
	uint32_t nparts;
	struct vpart parts[VLOC_MAX_PARTS];
};

/*
 * Where var (a DW_TAG_variable or DW_TAG_formal_parameter) lives at at->pc,
 * fn being the innermost subprogram around it (its DW_AT_frame_base).
 * -ENODATA (optimized out: err names where it is available), -EOPNOTSUPP
 * (err names the operation).  name is for messages.
 */
int vx_location(const struct dp_dwarf_at *at, Dwarf_Die *var, Dwarf_Die *fn, const char *name,
		struct vloc *out, struct dp_err *err);

/* DWARF register number -> the recipe's (spec/value.h), or -1. */
int vx_reg(unsigned dwreg);

/* Appends an op to a part: 0 or -E2BIG. */
int vx_push(struct vpart *p, uint8_t op, uint8_t arg, int64_t imm, struct dp_err *err);

/* ---- the scope index (dwarf-index.c) ----
 *
 * Each answer is the first in DIE order, as walking the units would give
 * it; for the cache's DWARF (dwarf.h) from tables built once per object
 * and CU, for any other Dwarf by those walks.
 */

/* The CU of pc: .debug_aranges, else the first CU whose ranges hold it. */
bool vi_cu_of(Dwarf *dbg, uint64_t pc, Dwarf_Die *cu);

/* The outermost scope (subprogram, lexical block or inlined copy) among
 * cu's children, through namespaces and modules, whose ranges hold pc. */
bool vi_scope_of(Dwarf *dbg, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *scope);

/* cu's first variable (or parameter) child named name. */
bool vi_cu_var(Dwarf *dbg, Dwarf_Die *cu, const char *name, Dwarf_Die *var);

/* The defined (not a declaration, a location or a constant value)
 * external variable named name of the first CU whose first variable of
 * that name is one. */
bool vi_global_var(Dwarf *dbg, const char *name, Dwarf_Die *var);

/* ---- types (dwarf-types.c) ---- */

/* The type a DIE has (DW_AT_type, through abstract origins): 0, or 1 for
 * none (void). */
int vt_type_of(Dwarf_Die *die, Dwarf_Die *type);

/* type through typedefs and qualifiers (in place). */
void vt_peel(Dwarf_Die *type);

/* What a value of a (peeled) type is recorded as. */
enum vt_kind {
	VT_INT,			/* integer, enum, bool (flags) */
	VT_FLOAT,
	VT_POINTER,
	VT_STRING_PTR,		/* char *: the string it points to */
	VT_STRING_ARRAY,	/* char[N]: the string in place */
};

/*
 * The field a scalar type records: its kind, its field description and
 * recipe flags, a string's maxlen.  -EINVAL for a struct, union or array
 * of other than chars (err: ask for a member, listing them, or an
 * element), -EOPNOTSUPP for other types.  what names the value in err.
 */
int vt_scalar(Dwarf_Die *type, const char *what, enum vt_kind *kind, struct dp_field_desc *fd,
	      uint8_t *flags, uint32_t *maxlen, struct dp_err *err);

/* A member of a (peeled) struct, union or class, anonymous members
 * searched through: its byte offset and type; for a bit-field, *bits its
 * width and *bitpos its first bit from the struct's start (little-endian
 * numbering), else *bits 0.  -EINVAL listing the members. */
int vt_member(Dwarf_Die *stype, const char *name, const char *what, uint64_t *off,
	      Dwarf_Die *mtype, uint64_t *bitpos, uint32_t *bits, struct dp_err *err);

/* The element type, its size and the element count (-1: unknown) of a
 * (peeled) one-dimensional array. */
int vt_array(Dwarf_Die *atype, Dwarf_Die *elem, uint64_t *elsize, int64_t *count,
	     struct dp_err *err);

/* The size of a pointee (peeled): 0 or -EINVAL (void, unknown size). */
int vt_size(Dwarf_Die *type, uint64_t *size);

/* A type as C spells it ("const char *", "struct req *", "int[4]"). */
void vt_name(Dwarf_Die *type, char *buf, size_t size);

#endif /* DP_DWARF_VAR_INTERNAL_H */
