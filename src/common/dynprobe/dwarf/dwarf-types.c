/*
 * DWARF types for variables by name (see dwarf-var.h): what a scalar is
 * recorded as, struct members and array elements, and types spelled as C
 * does for messages and listings.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dwarf/dwarf-var-internal.h"
#include "spec/ctx.h"

int vt_type_of(Dwarf_Die *die, Dwarf_Die *type)
{
	Dwarf_Attribute attr;

	if (!dwarf_attr_integrate(die, DW_AT_type, &attr) || !dwarf_formref_die(&attr, type))
		return 1;
	return 0;
}

void vt_peel(Dwarf_Die *type)
{
	Dwarf_Die out;

	if (dwarf_peel_type(type, &out) == 0)
		*type = out;
}

int vt_size(Dwarf_Die *type, uint64_t *size)
{
	Dwarf_Word w;

	if (dwarf_tag(type) == DW_TAG_pointer_type || dwarf_tag(type) == DW_TAG_reference_type ||
	    dwarf_tag(type) == DW_TAG_rvalue_reference_type) {
		*size = 8;
		return 0;
	}
	if (dwarf_aggregate_size(type, &w))
		return -EINVAL;
	*size = w;
	return 0;
}

static bool is_char(Dwarf_Die *t)
{
	Dwarf_Word enc, size;
	Dwarf_Attribute a;

	vt_peel(t);
	if (dwarf_tag(t) != DW_TAG_base_type || !dwarf_attr(t, DW_AT_encoding, &a) ||
	    dwarf_formudata(&a, &enc) || dwarf_aggregate_size(t, &size) || size != 1)
		return false;
	return enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char ||
	       enc == DW_ATE_signed || enc == DW_ATE_unsigned || enc == DW_ATE_UTF;
}

/* The members' names, for "has no member" and "ask for a member". */
static void member_names(Dwarf_Die *st, char *buf, size_t size, size_t *used)
{
	Dwarf_Die m;

	if (dwarf_child(st, &m))
		return;
	do {
		const char *n = dwarf_diename(&m);
		Dwarf_Die t;

		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		if (!n && !vt_type_of(&m, &t)) {
			vt_peel(&t);
			member_names(&t, buf, size, used);
			continue;
		}
		if (n && *used < size)
			*used += (size_t)snprintf(buf + *used, size - *used, "%s%s",
						  *used ? ", " : "", n);
	} while (dwarf_siblingof(&m, &m) == 0);
}

static bool is_aggregate(int tag)
{
	return tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
	       tag == DW_TAG_class_type;
}

static int base_scalar(Dwarf_Die *t, const char *what, enum vt_kind *kind,
		       struct dp_field_desc *fd, uint8_t *flags, struct dp_err *err)
{
	Dwarf_Word enc = DW_ATE_signed, size;
	Dwarf_Attribute a;

	if (dwarf_aggregate_size(t, &size))
		return dp_err_set(err, -EOPNOTSUPP, "'%s' has a type of unknown size", what);
	if (dwarf_attr(t, DW_AT_encoding, &a))
		dwarf_formudata(&a, &enc);
	if (enc == DW_ATE_float) {
		if (size != 4 && size != 8)
			return dp_err_set(err, -EOPNOTSUPP, "'%s' is a %" PRIu64 "-byte float: "
					  "only float and double can be recorded", what, size);
		*kind = VT_FLOAT;
		fd->type = DP_FT_DOUBLE;
		fd->size = (uint8_t)size;
		return 0;
	}
	if (enc != DW_ATE_signed && enc != DW_ATE_signed_char && enc != DW_ATE_unsigned &&
	    enc != DW_ATE_unsigned_char && enc != DW_ATE_boolean && enc != DW_ATE_UTF)
		return dp_err_set(err, -EOPNOTSUPP, "'%s' has a type (DWARF encoding 0x%" PRIx64
				  ") that cannot be recorded", what, enc);
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return dp_err_set(err, -EOPNOTSUPP, "'%s' is a %" PRIu64 "-byte integer: only 1, "
				  "2, 4 and 8 bytes can be recorded", what, size);
	*kind = VT_INT;
	fd->type = DP_FT_INT;
	fd->size = (uint8_t)size;
	fd->is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
	if (enc == DW_ATE_boolean)
		*flags |= DP_VALUE_BOOL;
	return 0;
}

int vt_scalar(Dwarf_Die *type, const char *what, enum vt_kind *kind, struct dp_field_desc *fd,
	      uint8_t *flags, uint32_t *maxlen, struct dp_err *err)
{
	Dwarf_Die t = *type, inner;
	char names[512];
	size_t used = 0;
	int tag;

	memset(fd, 0, sizeof(*fd));
	*flags = 0;
	*maxlen = 0;
	vt_peel(&t);
	tag = dwarf_tag(&t);
	switch (tag) {
	case DW_TAG_base_type:
		return base_scalar(&t, what, kind, fd, flags, err);
	case DW_TAG_enumeration_type: {
		Dwarf_Word size;

		if (vt_type_of(&t, &inner) == 0) {
			int ret = base_scalar(&inner, what, kind, fd, flags, err);

			*flags &= (uint8_t)~DP_VALUE_BOOL;
			return ret;
		}
		if (dwarf_aggregate_size(&t, &size) || (size != 1 && size != 2 && size != 4 &&
							size != 8))
			return dp_err_set(err, -EOPNOTSUPP, "'%s' is an enum of unknown size", what);
		*kind = VT_INT;
		*fd = (struct dp_field_desc){ .type = DP_FT_INT, .size = (uint8_t)size,
					      .is_signed = true };
		return 0;
	}
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_ptr_to_member_type:
		*fd = (struct dp_field_desc){ .type = DP_FT_INT, .size = 8, .hex = true };
		*kind = VT_POINTER;
		if (tag == DW_TAG_pointer_type && vt_type_of(&t, &inner) == 0 && is_char(&inner)) {
			*kind = VT_STRING_PTR;
			*fd = (struct dp_field_desc){ .type = DP_FT_STRING };
			*maxlen = DP_CTX_STRING_DEFAULT;
		}
		return 0;
	case DW_TAG_array_type: {
		uint64_t elsize;
		int64_t count;

		if (vt_array(&t, &inner, &elsize, &count, NULL) == 0 && is_char(&inner)) {
			*kind = VT_STRING_ARRAY;
			*fd = (struct dp_field_desc){ .type = DP_FT_STRING };
			*maxlen = count > 0 && count < DP_CTX_STRING_MAX ? (uint32_t)count
									 : DP_CTX_STRING_DEFAULT;
			return 0;
		}
		return dp_err_set(err, -EINVAL, "'%s' is an array: ask for an element (%s[0])",
				  what, what);
	}
	}
	if (is_aggregate(tag)) {
		member_names(&t, names, sizeof(names), &used);
		return dp_err_set(err, -EINVAL, "'%s' is a %s: ask for a member (%s.NAME, or "
				  "NAME->MEMBER through a pointer): %s", what,
				  tag == DW_TAG_union_type ? "union" : "struct", what,
				  used ? names : "it has none");
	}
	return dp_err_set(err, -EOPNOTSUPP, "'%s' has a type (DWARF tag 0x%x) that cannot be "
			  "recorded", what, tag);
}

/* The offset of member m: DW_AT_data_member_location as a constant (or the
 * old DW_OP_plus_uconst form). */
static int member_offset(Dwarf_Die *m, uint64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	Dwarf_Op *ops;
	size_t n;

	if (!dwarf_attr_integrate(m, DW_AT_data_member_location, &a)) {
		*off = 0;	/* a union's members */
		return 0;
	}
	if (dwarf_formudata(&a, &w) == 0) {
		*off = w;
		return 0;
	}
	if (dwarf_getlocation(&a, &ops, &n) == 0 && n == 1 && ops[0].atom == DW_OP_plus_uconst) {
		*off = ops[0].number;
		return 0;
	}
	return -EOPNOTSUPP;
}

/* Searches st (and its anonymous members) for name: 1 found, 0 not. */
static int find_member(Dwarf_Die *st, const char *name, uint64_t base, uint64_t *off,
		       Dwarf_Die *member)
{
	Dwarf_Die m;

	if (dwarf_child(st, &m))
		return 0;
	do {
		const char *n = dwarf_diename(&m);
		uint64_t o;
		Dwarf_Die t;

		if (dwarf_tag(&m) != DW_TAG_member || member_offset(&m, &o))
			continue;
		if (n && !strcmp(n, name)) {
			*off = base + o;
			*member = m;
			return 1;
		}
		if (!n && !vt_type_of(&m, &t)) {
			vt_peel(&t);
			if (is_aggregate(dwarf_tag(&t)) && find_member(&t, name, base + o, off, member))
				return 1;
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	return 0;
}

/* A bit-field's first bit from the start of its struct: DWARF 5's
 * DW_AT_data_bit_offset, or DWARF 4's DW_AT_bit_offset (counted from the
 * most significant bit of a storage unit of DW_AT_byte_size bytes at
 * DW_AT_data_member_location). */
static int bit_position(Dwarf_Die *m, uint64_t off, uint64_t bits, uint64_t *bitpos)
{
	Dwarf_Attribute a;
	Dwarf_Word w, unit;
	Dwarf_Die t;

	if (dwarf_attr_integrate(m, DW_AT_data_bit_offset, &a) && !dwarf_formudata(&a, &w)) {
		*bitpos = off * 8 + w;	/* off: where its struct starts */
		return 0;
	}
	if (!dwarf_attr_integrate(m, DW_AT_bit_offset, &a) || dwarf_formudata(&a, &w))
		return -EOPNOTSUPP;
	if (!dwarf_attr_integrate(m, DW_AT_byte_size, &a) || dwarf_formudata(&a, &unit)) {
		if (vt_type_of(m, &t) || dwarf_aggregate_size(&t, &unit))
			return -EOPNOTSUPP;
	}
	if (w + bits > unit * 8)
		return -EOPNOTSUPP;
	*bitpos = off * 8 + unit * 8 - w - bits;
	return 0;
}

int vt_member(Dwarf_Die *stype, const char *name, const char *what, uint64_t *off,
	      Dwarf_Die *mtype, uint64_t *bitpos, uint32_t *bits, struct dp_err *err)
{
	char names[512];
	size_t used = 0;
	Dwarf_Die m;

	if (!is_aggregate(dwarf_tag(stype)))
		return dp_err_set(err, -EINVAL, "'%s' is not a struct or union: it has no member "
				  "'%s'", what, name);
	if (!find_member(stype, name, 0, off, &m)) {
		member_names(stype, names, sizeof(names), &used);
		return dp_err_set(err, -EINVAL, "'%s' has no member '%s' (its members: %s)", what,
				  name, used ? names : "none");
	}
	*bits = 0;
	if (dwarf_hasattr_integrate(&m, DW_AT_bit_size)) {
		Dwarf_Attribute a;
		Dwarf_Word w;

		if (!dwarf_attr_integrate(&m, DW_AT_bit_size, &a) || dwarf_formudata(&a, &w) ||
		    w < 1 || w > 56 || bit_position(&m, *off, w, bitpos))
			return dp_err_set(err, -EOPNOTSUPP, "'%s.%s' is a bit-field whose place "
					  "cannot be read", what, name);
		*bits = (uint32_t)w;
	}
	if (vt_type_of(&m, mtype))
		return dp_err_set(err, -EINVAL, "member '%s' of '%s' has no type", name, what);
	return 0;
}

int vt_array(Dwarf_Die *atype, Dwarf_Die *elem, uint64_t *elsize, int64_t *count,
	     struct dp_err *err)
{
	Dwarf_Die sub;
	Dwarf_Attribute a;
	Dwarf_Word w;
	int nsub = 0;

	*count = -1;
	if (vt_type_of(atype, elem))
		return dp_err_set(err, -EINVAL, "an array without an element type");
	if (dwarf_child(atype, &sub) == 0) {
		do {
			if (dwarf_tag(&sub) != DW_TAG_subrange_type)
				continue;
			if (nsub++)
				continue;
			if (dwarf_attr_integrate(&sub, DW_AT_count, &a) && !dwarf_formudata(&a, &w))
				*count = (int64_t)w;
			else if (dwarf_attr_integrate(&sub, DW_AT_upper_bound, &a) &&
				 !dwarf_formudata(&a, &w))
				*count = (int64_t)w + 1;
		} while (dwarf_siblingof(&sub, &sub) == 0);
	}
	if (nsub > 1)
		return dp_err_set(err, -EOPNOTSUPP, "a multi-dimensional array: only one index "
				  "can be taken");
	if (vt_size(elem, elsize) && (vt_peel(elem), vt_size(elem, elsize)))
		return dp_err_set(err, -EOPNOTSUPP, "an array of elements of unknown size");
	return 0;
}

/* The name of a type, with what follows it (pointers, array bounds). */
void vt_name(Dwarf_Die *type, char *buf, size_t size)
{
	Dwarf_Die t = *type, inner;
	const char *n = dwarf_diename(&t), *kw = NULL;
	char sub[128];
	int64_t count;
	uint64_t elsize;

	switch (dwarf_tag(&t)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
		if (vt_type_of(&t, &inner))
			snprintf(sub, sizeof(sub), "void");
		else
			vt_name(&inner, sub, sizeof(sub));
		snprintf(buf, size, "%s %s", sub, dwarf_tag(&t) == DW_TAG_pointer_type ? "*" : "&");
		return;
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
		if (vt_type_of(&t, &inner))
			snprintf(sub, sizeof(sub), "void");
		else
			vt_name(&inner, sub, sizeof(sub));
		snprintf(buf, size, "%s %s", dwarf_tag(&t) == DW_TAG_const_type ? "const"
				: "volatile", sub);
		return;
	case DW_TAG_array_type:
		if (vt_array(&t, &inner, &elsize, &count, NULL))
			snprintf(sub, sizeof(sub), "?");
		else
			vt_name(&inner, sub, sizeof(sub));
		if (count >= 0)
			snprintf(buf, size, "%s[%" PRId64 "]", sub, count);
		else
			snprintf(buf, size, "%s[]", sub);
		return;
	case DW_TAG_structure_type: kw = "struct"; break;
	case DW_TAG_union_type: kw = "union"; break;
	case DW_TAG_enumeration_type: kw = "enum"; break;
	case DW_TAG_class_type: kw = "class"; break;
	case DW_TAG_subroutine_type: n = "function"; break;
	}
	if (kw)
		snprintf(buf, size, "%s %s", kw, n ? n : "(anonymous)");
	else
		snprintf(buf, size, "%s", n ? n : "?");
}
