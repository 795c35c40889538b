/*
 * The characters of what users type, shared by spec/'s parsers (not part of
 * the folder's contract): C identifiers, and the symbols compilers and
 * linkers make (foo.cold, foo.part.0, memcpy@@GLIBC_2.14, $x).
 */
#ifndef DP_SPEC_CHARS_H
#define DP_SPEC_CHARS_H

#include <stdbool.h>

static inline bool ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static inline bool ident_char(char c)
{
	return ident_start(c) || (c >= '0' && c <= '9');
}

static inline bool symbol_char(char c)
{
	return ident_char(c) || c == '.' || c == '@' || c == '$';
}

#endif /* DP_SPEC_CHARS_H */
