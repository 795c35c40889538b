/*
 * Specs: what users type to name dynamic probes, parsed and checked before
 * any session, daemon or process is touched.  The CLI and lttng-dynprobed
 * both read user input through this file, so that a location, an event name
 * or a context type means the same thing everywhere.
 *
 *   location   ADDR | SYMBOL | SYMBOL+OFFSET | PATTERN | FILE:LINE
 *              numbers: octal 0NNN, decimal, hex 0xNNN (no sign);
 *              ADDR is a virtual address of the ELF file (as nm prints it);
 *              SYMBOL, a symbol (C, or mangled C++/Rust) or a C++ or Rust
 *              name as written: "shop::Cart::add" (every overload, every
 *              constructor variant), "shop::Cart::add(int)" (one), a
 *              template's arguments, "operator+=", "~Cart"; a name with
 *              "::", "(", "<", "~" or "operator" is such a name, any other
 *              takes C symbol characters only.  The offset of a name is
 *              its last "+NUMBER" ("operator+=" has none).
 *              PATTERN, a shell pattern (* ? [...]) of function names,
 *              matched against symbols and demangled names, for
 *              --function only: every function it matches.  A C++ name
 *              that exactly names functions means them even when it
 *              holds * or [ (operator*, f(char*))
 *              FILE:LINE, a source line (--probe only; from DWARF,
 *              spec-dwarf.c): FILE is a basename, any path suffix of a
 *              compilation unit's file name, or an absolute path; LINE a
 *              decimal number.  A location whose text after its last ':'
 *              is all digits (and not after "::") is one.
 *   event      NAME -> dynprobe:NAME; PROVIDER:EVENT is kept;
 *              --function gives NAME_entry and NAME_return
 *   context    regs | reg:NAME | TYPE:NAME:ADDR | string:NAME:ADDR[:MAX] |
 *              backtrace[:DEPTH][:fp|:cfi|:libunwind] | retval: a dynamic context;
 *              anything else is a standard LTTng context type
 *
 * Contexts have their own header, spec/ctx.h (included here): the one
 * parser of their grammar, which the CLI runs to check what users type and
 * lttng-dynprobed runs again with the symbols of the probed object.
 * Statically defined probes (SDT) have theirs, spec/sdt.h: their notes'
 * argument specs and PROVIDER:NAME patterns.
 *
 * Every function returning int gives 0 or -errno and, on failure, a one-line
 * message in err->msg for users: what was wrong and what would be right,
 * without the "Error: " prefix.
 */
#ifndef DP_SPEC_H
#define DP_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "spec/ctx.h"

#define DP_SPEC_SYMBOL_MAX 512		/* as DP_CLIENT_LOCATION_MAX */
#define DP_SPEC_EVENT_MAX 128		/* provider:event, with its suffix */
#define DP_SPEC_PROVIDER_DEFAULT "dynprobe"

/*
 * A number as a whole string: "0x1f", "017", "42".  -EINVAL for a string
 * that is not one (the message names the bad digit and the base it was
 * read in), -ERANGE above 2^64 - 1.
 */
int dp_spec_number(const char *s, uint64_t *out, struct dp_err *err);

enum dp_loc_kind {
	DP_LOC_ADDR,		/* an address of the file */
	DP_LOC_SYMBOL,		/* a function's name, plus an offset (maybe 0) */
	DP_LOC_LINE,		/* a source line: FILE (in symbol) and line */
};

struct dp_location {
	enum dp_loc_kind kind;
	char symbol[DP_SPEC_SYMBOL_MAX];	/* DP_LOC_SYMBOL */
	uint64_t addr;				/* DP_LOC_ADDR */
	uint64_t offset;			/* DP_LOC_SYMBOL */
	bool has_offset;			/* "foo+0" was written as such */
	bool pattern;				/* symbol is a shell pattern */
	bool source;				/* symbol is a C++ or Rust name as written
						 * ("shop::Cart::add(int)"), not a symbol */
	uint32_t line;				/* DP_LOC_LINE */
};

/* Parses ADDR | SYMBOL | SYMBOL+OFFSET | PATTERN.  -EINVAL or -ERANGE. */
int dp_spec_location_parse(const char *s, struct dp_location *loc, struct dp_err *err);

/* The location as users write it ("foo+0x6", "0x401136"); snprintf's return. */
int dp_spec_location_format(const struct dp_location *loc, char *buf, size_t size);

/*
 * Stock LTTng's SDT form of --userspace-probe: "sdt:PATH:PROVIDER:NAME"
 * (a ':' in PATH written "\:"), PROVIDER:NAME into probe.  0, or -EINVAL /
 * -ENAMETOOLONG with the expected form in err.
 */
int dp_spec_sdt_probe_parse(const char *s, char *path, size_t path_size, char *probe,
			    size_t probe_size, struct dp_err *err);

/*
 * LTTng's own spelling of a userspace probe, "elf:PATH:SYMBOL" (SYMBOL may
 * carry +OFFSET here).  The first two colons separate: PATH holds none,
 * SYMBOL may ("elf:/bin/app:shop::Cart::add").  PATH is copied into path (-ENAMETOOLONG if it does
 * not fit).  "sdt:..." is refused (-ENOTSUP): dp_spec_sdt_probe_parse reads it.
 */
int dp_spec_userspace_probe_parse(const char *s, char *path, size_t path_size,
				  struct dp_location *loc, struct dp_err *err);

/*
 * The full event name of a user's NAME, with a suffix ("" or "_entry",
 * "_return") appended to its event part: "aname" -> "dynprobe:aname",
 * "app:main" + "_entry" -> "app:main_entry".  Provider and event are C
 * identifiers; no wildcard (a dynamic event has one exact name).  -EINVAL,
 * or -ENAMETOOLONG past DP_SPEC_EVENT_MAX - 1 bytes.
 */
int dp_spec_event_name(const char *name, const char *suffix, char *out, size_t size,
		       struct dp_err *err);

/*
 * A NAME for a probe that has none (lttng trace): the symbol, with the
 * offset in hex after an underscore ("foo_6" for foo+0x6), or "addr_401136".
 * Characters a C identifier does not allow become '_'.  A pattern keeps
 * only its identifier characters ("dp_fn_1???" -> "dp_fn_1", "*" ->
 * "functions").  A C++ or Rust name: its words joined by '_', runs of
 * other characters one '_' ("shop::Cart::add" -> "shop_Cart_add",
 * "shop::Cart::add(int)" -> "shop_Cart_add_int", "f()" -> "f_void"),
 * '~' as "dtor_", an operator's symbols as words ("operator+=" ->
 * "operator_plus_eq"); a source line: FILE's basename and the line
 * ("sched.c:42" -> "sched_c_42"); past DP_SPEC_EVENT_MAX, cut and ended with 8 hex
 * digits of a hash of the whole name, so distinct names stay distinct.
 */
int dp_spec_location_event_name(const struct dp_location *loc, char *out, size_t size);

/*
 * Resolution against an ELF object (spec-resolve.c).  The address in the
 * file of a location: a symbol is found by dp_object_function_by_name (so
 * "main" works in a stripped executable), an address by the function that
 * contains it.  The address must be an instruction boundary of that
 * function.  -ENOENT (no such function: the message suggests close names),
 * -ERANGE (an offset past the function's end), -EINVAL (inside an
 * instruction: the message shows the neighbouring boundaries; or a data
 * symbol), or the analysis' -errno.  *fn may be NULL.
 */
struct dp_object;
struct dp_function;
int dp_spec_location_resolve(struct dp_object *obj, const char *path,
			     const struct dp_location *loc, uint64_t *vaddr,
			     const struct dp_function **fn, struct dp_err *err);

/*
 * The functions a --function location names, each once (aliases of one
 * function count once), ascending by address, without the .cold parts of
 * functions: every function a PATTERN matches; every function a C++ or
 * Rust name means (all overloads of "shop::Cart::add", all variants of a
 * constructor); or the one function of a symbol, an address or a name
 * with an offset, as dp_spec_function_entry.  *fns is malloc'd (free()
 * it), *n at least 1.  -ENOENT when none matches (the message says so,
 * with close names), -ENOMEM, or the errors of dp_spec_function_entry.
 */
int dp_spec_functions_match(struct dp_object *obj, const char *path,
			    const struct dp_location *loc, const struct dp_function ***fns,
			    size_t *n, struct dp_err *err);

/*
 * The function a location names, without checking the instruction boundary
 * (any address inside it will do; a symbol's offset is not looked at).
 * -ENOENT (no such function, or an address outside every function: the
 * message suggests close names, or says the address is not code), -EINVAL
 * (a symbol that is data, not code; a C++ name that means several
 * functions: the message lists them), or the analysis' -errno.
 */
int dp_spec_function_find(struct dp_object *obj, const char *path,
			  const struct dp_location *loc, const struct dp_function **fn,
			  struct dp_err *err);

/*
 * The function a --function location names: as dp_spec_location_resolve,
 * and the location must be the function's first byte (-EINVAL otherwise).
 */
int dp_spec_function_entry(struct dp_object *obj, const char *path,
			   const struct dp_location *loc, const struct dp_function **fn,
			   struct dp_err *err);

/*
 * Any symbol of the object by name, functions and data (.symtab, then
 * .dynsym): its value in the file and whether it lies in code.  For context
 * addresses, and to tell "data, not a function" from "unknown".  0 or
 * -ENOENT.
 */
int dp_spec_symbol_find(struct dp_object *obj, const char *name, uint64_t *value, bool *code);

/*
 * Whether a return site of fn (one of fn->rets) leaves it: not a jump into
 * fn's own .cold part (gcc's hot/cold split), where fn goes on: a probe on
 * such a conditional jump would fire on every pass, taken or not, and a
 * throw from the cold part is no return.  --function puts return probes
 * only on the sites that leave (a return from inside the .cold part itself
 * is not probed: rare, gcc moves unlikely paths there).
 */
struct dp_ret_site;
bool dp_spec_return_leaves(struct dp_object *obj, const struct dp_function *fn,
			   const struct dp_ret_site *r);

/* How users see a function: its name (C++ and Rust names demangled, with
 * their parameter lists), or "the function at 0xADDR". */
int dp_spec_function_format(const struct dp_function *fn, char *buf, size_t size);

/* Source-level locations from DWARF (spec-dwarf.c): source lines and
 * inlined copies. */
#include "spec/spec-dwarf.h"

#endif /* DP_SPEC_H */
