/*
 * Guarded decoding for the decoder's tests: the bytes are placed right
 * before a PROT_NONE page, so a read past the given length faults, and the
 * fault is turned into -EFAULT instead of a crash.
 */
#ifndef DP_TESTS_GUARD_H
#define DP_TESTS_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "x86/insn.h"

/* Fills struct dp_insn before each decode: a field left unset shows. */
#define GUARD_POISON 0xa5

/* Maps the guard page and catches SIGSEGV/SIGBUS.  0 or -errno. */
int guard_init(void);

/* Decodes exactly bytes[0..n) against the guard page; -EFAULT on a fault. */
int decode_guarded(const uint8_t *bytes, size_t n, struct dp_insn *insn);

#endif
