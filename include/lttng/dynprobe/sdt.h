/*
 * <lttng/dynprobe/sdt.h>: statically defined probes whose disabled site is a
 * `nop; nop5` and that every SDT tracer knows.
 *
 *   #include <lttng/dynprobe/sdt.h>
 *   LTTNG_DYNPROBE_SDT(provider, name);
 *   LTTNG_DYNPROBE_SDT(provider, name, arg1, ..., arg12);
 *
 * Each use emits, at the place it stands, the 6 bytes 90 0f 1f 44 00 00 (a
 * nop, then a 5-byte nop) and describes that site in a standard SDT note:
 * section .note.stapsdt, owner "stapsdt", type 3, its descriptor the site's
 * address, the address of .stapsdt.base, a semaphore address (0: these
 * probes have none), then "provider", "name" and the argument specs, one
 * `[-]SIZE@OPERAND` per argument (`-4@%edi`, `8@$-1`, `-2@-20(%rbp)`,
 * `8@counter(%rip)`), the form <sys/sdt.h> writes.  readelf -n, gdb's `info
 * probes`, perf, bpftrace, SystemTap and `lttng list --sdt` read them as
 * they read <sys/sdt.h> probes.
 *
 * Cost while disabled: the two nops, nothing else.  No flag is loaded, no
 * branch taken, no call made: each argument is bound to the site by an
 * operand constraint ("nor": a constant, a register or a memory operand,
 * whichever the compiler already has), so the compiler keeps the values
 * where they are and the note says where that is.  An argument that must be
 * computed is computed, as with <sys/sdt.h>: pass values the code has.
 *
 * Enabling, by lttng-dynprobe: one 5-byte write, a jmp over the 5-byte nop
 * to the probe's trampoline, with the process's threads stopped; the 1-byte
 * nop stays and runs in place, the event's ip is the note's address.
 * Disabling writes the nop back.  Other tracers place their breakpoint on
 * the note's address as they always do.
 *
 * Arguments: 0 to 12, integers of any size (1, 2, 4, 8 bytes; signed ones
 * are marked `-`), enums, _Bool, pointers.  Not floating point, structures
 * or arrays (pass a pointer).  The provider and the name are identifiers,
 * as with <sys/sdt.h>.  Works in C (GNU C: gcc, clang) and C++, x86-64
 * only.
 */
#ifndef LTTNG_DYNPROBE_SDT_H
#define LTTNG_DYNPROBE_SDT_H

#if !defined(__x86_64__)
#error "<lttng/dynprobe/sdt.h> supports x86-64 only"
#endif

/* ---- the argument specs -------------------------------------------------- */

/* Size of an argument, negated when it is a signed integer. */
#ifdef __cplusplus
/* Qualifiers and references set aside; pointers and enums are unsigned. */
template <typename T> struct lttng_dynprobe_sdt_signed_ {
	static const bool value = __builtin_classify_type((T)0) == 1 && (T)-1 < (T)0;
};
template <typename T> struct lttng_dynprobe_sdt_signed_<T *> {
	static const bool value = false;
};
template <typename T> struct lttng_dynprobe_sdt_signed_<const T>
	: lttng_dynprobe_sdt_signed_<T> {};
template <typename T> struct lttng_dynprobe_sdt_signed_<volatile T>
	: lttng_dynprobe_sdt_signed_<T> {};
template <typename T> struct lttng_dynprobe_sdt_signed_<const volatile T>
	: lttng_dynprobe_sdt_signed_<T> {};
template <typename T> struct lttng_dynprobe_sdt_signed_<T &>
	: lttng_dynprobe_sdt_signed_<T> {};
#define LTTNG_DYNPROBE_SDT_SIGNED_(x) (lttng_dynprobe_sdt_signed_<__typeof__(x)>::value)
#else
#define LTTNG_DYNPROBE_SDT_SIGNED_(x) \
	(__builtin_classify_type(x) == 1 && !((__typeof__(x))0 < (__typeof__(x))-1))
#endif
#define LTTNG_DYNPROBE_SDT_SIZE_(x) \
	((int)sizeof(x) * (LTTNG_DYNPROBE_SDT_SIGNED_(x) ? -1 : 1))

/* The operands of argument n: its size and sign, its place. */
#define LTTNG_DYNPROBE_SDT_OP_(n, x) \
	[s##n] "n" (LTTNG_DYNPROBE_SDT_SIZE_(x)), [a##n] "nor" (x)
/* Its spec, as the assembler prints it: -4@%edi. */
#define LTTNG_DYNPROBE_SDT_SPEC_(n) "%c[s" #n "]@%[a" #n "]"

#define LTTNG_DYNPROBE_SDT_SPECS_0
#define LTTNG_DYNPROBE_SDT_SPECS_1 LTTNG_DYNPROBE_SDT_SPEC_(1)
#define LTTNG_DYNPROBE_SDT_SPECS_2 LTTNG_DYNPROBE_SDT_SPECS_1 " " LTTNG_DYNPROBE_SDT_SPEC_(2)
#define LTTNG_DYNPROBE_SDT_SPECS_3 LTTNG_DYNPROBE_SDT_SPECS_2 " " LTTNG_DYNPROBE_SDT_SPEC_(3)
#define LTTNG_DYNPROBE_SDT_SPECS_4 LTTNG_DYNPROBE_SDT_SPECS_3 " " LTTNG_DYNPROBE_SDT_SPEC_(4)
#define LTTNG_DYNPROBE_SDT_SPECS_5 LTTNG_DYNPROBE_SDT_SPECS_4 " " LTTNG_DYNPROBE_SDT_SPEC_(5)
#define LTTNG_DYNPROBE_SDT_SPECS_6 LTTNG_DYNPROBE_SDT_SPECS_5 " " LTTNG_DYNPROBE_SDT_SPEC_(6)
#define LTTNG_DYNPROBE_SDT_SPECS_7 LTTNG_DYNPROBE_SDT_SPECS_6 " " LTTNG_DYNPROBE_SDT_SPEC_(7)
#define LTTNG_DYNPROBE_SDT_SPECS_8 LTTNG_DYNPROBE_SDT_SPECS_7 " " LTTNG_DYNPROBE_SDT_SPEC_(8)
#define LTTNG_DYNPROBE_SDT_SPECS_9 LTTNG_DYNPROBE_SDT_SPECS_8 " " LTTNG_DYNPROBE_SDT_SPEC_(9)
#define LTTNG_DYNPROBE_SDT_SPECS_10 LTTNG_DYNPROBE_SDT_SPECS_9 " " LTTNG_DYNPROBE_SDT_SPEC_(10)
#define LTTNG_DYNPROBE_SDT_SPECS_11 LTTNG_DYNPROBE_SDT_SPECS_10 " " LTTNG_DYNPROBE_SDT_SPEC_(11)
#define LTTNG_DYNPROBE_SDT_SPECS_12 LTTNG_DYNPROBE_SDT_SPECS_11 " " LTTNG_DYNPROBE_SDT_SPEC_(12)

#define LTTNG_DYNPROBE_SDT_OPS_0()
#define LTTNG_DYNPROBE_SDT_OPS_1(a) LTTNG_DYNPROBE_SDT_OP_(1, a)
#define LTTNG_DYNPROBE_SDT_OPS_2(a, b) LTTNG_DYNPROBE_SDT_OPS_1(a), LTTNG_DYNPROBE_SDT_OP_(2, b)
#define LTTNG_DYNPROBE_SDT_OPS_3(a, b, c) \
	LTTNG_DYNPROBE_SDT_OPS_2(a, b), LTTNG_DYNPROBE_SDT_OP_(3, c)
#define LTTNG_DYNPROBE_SDT_OPS_4(a, b, c, d) \
	LTTNG_DYNPROBE_SDT_OPS_3(a, b, c), LTTNG_DYNPROBE_SDT_OP_(4, d)
#define LTTNG_DYNPROBE_SDT_OPS_5(a, b, c, d, e) \
	LTTNG_DYNPROBE_SDT_OPS_4(a, b, c, d), LTTNG_DYNPROBE_SDT_OP_(5, e)
#define LTTNG_DYNPROBE_SDT_OPS_6(a, b, c, d, e, f) \
	LTTNG_DYNPROBE_SDT_OPS_5(a, b, c, d, e), LTTNG_DYNPROBE_SDT_OP_(6, f)
#define LTTNG_DYNPROBE_SDT_OPS_7(a, b, c, d, e, f, g) \
	LTTNG_DYNPROBE_SDT_OPS_6(a, b, c, d, e, f), LTTNG_DYNPROBE_SDT_OP_(7, g)
#define LTTNG_DYNPROBE_SDT_OPS_8(a, b, c, d, e, f, g, h) \
	LTTNG_DYNPROBE_SDT_OPS_7(a, b, c, d, e, f, g), LTTNG_DYNPROBE_SDT_OP_(8, h)
#define LTTNG_DYNPROBE_SDT_OPS_9(a, b, c, d, e, f, g, h, i) \
	LTTNG_DYNPROBE_SDT_OPS_8(a, b, c, d, e, f, g, h), LTTNG_DYNPROBE_SDT_OP_(9, i)
#define LTTNG_DYNPROBE_SDT_OPS_10(a, b, c, d, e, f, g, h, i, j) \
	LTTNG_DYNPROBE_SDT_OPS_9(a, b, c, d, e, f, g, h, i), LTTNG_DYNPROBE_SDT_OP_(10, j)
#define LTTNG_DYNPROBE_SDT_OPS_11(a, b, c, d, e, f, g, h, i, j, k) \
	LTTNG_DYNPROBE_SDT_OPS_10(a, b, c, d, e, f, g, h, i, j), LTTNG_DYNPROBE_SDT_OP_(11, k)
#define LTTNG_DYNPROBE_SDT_OPS_12(a, b, c, d, e, f, g, h, i, j, k, l) \
	LTTNG_DYNPROBE_SDT_OPS_11(a, b, c, d, e, f, g, h, i, j, k), LTTNG_DYNPROBE_SDT_OP_(12, l)

/* How many arguments follow the name: 0 to 12. */
#define LTTNG_DYNPROBE_SDT_NARGS_(...) \
	LTTNG_DYNPROBE_SDT_NTH_(_, ##__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define LTTNG_DYNPROBE_SDT_NTH_(_, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n
#define LTTNG_DYNPROBE_SDT_CAT_(a, b) LTTNG_DYNPROBE_SDT_CAT2_(a, b)
#define LTTNG_DYNPROBE_SDT_CAT2_(a, b) a##b

/* ---- the site and its note ------------------------------------------------- */

/*
 * .stapsdt.base: one allocated byte, once per linked object (a COMDAT group
 * of that name, the symbol <sys/sdt.h> uses too, so that objects built with
 * either header link together).  Tools compare its address with the note's
 * copy to find how far a prelinked object moved.
 */
#define LTTNG_DYNPROBE_SDT_BASE_ASM_                                                  \
	".ifndef _.stapsdt.base\n"                                                    \
	".pushsection .stapsdt.base, \"aG\", \"progbits\", .stapsdt.base, comdat\n"   \
	".weak _.stapsdt.base\n"                                                      \
	".hidden _.stapsdt.base\n"                                                    \
	"_.stapsdt.base:\n"                                                           \
	".space 1\n"                                                                  \
	".size _.stapsdt.base, 1\n"                                                   \
	".popsection\n"                                                               \
	".endif\n"

/*
 * The site (label 990), then its note: namesz, descsz, type 3, "stapsdt",
 * then the descriptor, 4-byte aligned.  The "?" flag puts the note in the
 * COMDAT group of the code around it (an inline function of a C++ header),
 * so that the linker drops them together.
 */
#define LTTNG_DYNPROBE_SDT_ASM_(provider, name, specs)                                \
	"990:\n"                                                                      \
	".byte 0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00\n"                                  \
	".pushsection .note.stapsdt, \"?\", \"note\"\n"                                \
	".balign 4\n"                                                                 \
	".4byte 992f - 991f, 994f - 993f, 3\n"                                        \
	"991:\n"                                                                      \
	".asciz \"stapsdt\"\n"                                                        \
	"992:\n"                                                                      \
	".balign 4\n"                                                                 \
	"993:\n"                                                                      \
	".8byte 990b\n"                                                               \
	".8byte _.stapsdt.base\n"                                                     \
	".8byte 0\n"                                                                  \
	".asciz \"" #provider "\"\n"                                                  \
	".asciz \"" #name "\"\n"                                                      \
	".asciz \"" specs "\"\n"                                                      \
	"994:\n"                                                                      \
	".balign 4\n"                                                                 \
	".popsection\n"                                                               \
	LTTNG_DYNPROBE_SDT_BASE_ASM_

#define LTTNG_DYNPROBE_SDT_N_(n, provider, name, ...)                                 \
	__asm__ __volatile__(LTTNG_DYNPROBE_SDT_ASM_(provider, name,                   \
						     LTTNG_DYNPROBE_SDT_SPECS_##n)    \
			     : : LTTNG_DYNPROBE_SDT_OPS_##n(__VA_ARGS__))
#define LTTNG_DYNPROBE_SDT_X_(n, provider, name, ...) \
	LTTNG_DYNPROBE_SDT_N_(n, provider, name, ##__VA_ARGS__)

/* A probe site: provider and name (identifiers), then 0 to 12 arguments. */
#define LTTNG_DYNPROBE_SDT(provider, name, ...)                                       \
	LTTNG_DYNPROBE_SDT_X_(LTTNG_DYNPROBE_SDT_NARGS_(__VA_ARGS__), provider, name,   \
			      ##__VA_ARGS__)

#endif /* LTTNG_DYNPROBE_SDT_H */
