/*
 * Field descriptions: the name and type of one payload field of a dynamic
 * event, as contexts lay them out (spec/ctx.h) and the agent registers them
 * with lttng-ust.  The bounds are lttng-ust's.
 */
#ifndef DP_SPEC_FIELD_H
#define DP_SPEC_FIELD_H

#include <stdbool.h>
#include <stdint.h>

#define DP_NAME_MAX 128		/* provider:event, as lttng-ust allows */
#define DP_FIELD_NAME_MAX 64

enum dp_ftype {
	DP_FT_INT,		/* integer of size 1, 2, 4 or 8 bytes */
	DP_FT_STRING,		/* recorded as a CTF string (UTF-8) */
	DP_FT_SEQ_U64,		/* sequence of u64 (length field u32 before it) */
	DP_FT_DOUBLE,		/* IEEE double */
};

struct dp_field_desc {
	char name[DP_FIELD_NAME_MAX];	/* a C identifier; a sequence S also
					 * gets a field "_S_length" before it */
	uint8_t type;		/* enum dp_ftype */
	uint8_t size;		/* DP_FT_INT: 1, 2, 4 or 8 (ignored otherwise) */
	bool is_signed;		/* DP_FT_INT (ignored otherwise) */
	bool hex;		/* DP_FT_INT and DP_FT_SEQ_U64: shown in base 16
				 * (ignored otherwise) */
};

#endif /* DP_SPEC_FIELD_H */
