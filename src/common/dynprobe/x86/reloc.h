/*
 * Relocation of one instruction: rewrites it so that, run at the emitter's
 * current address instead of `orig`, it does exactly what it did at `orig`.
 *
 *  - RIP-relative operands: the disp32 re-aimed at the same address; out of
 *    reach, the operand goes through a scratch register the instruction does
 *    not use, with the stack moved past the red zone while it is borrowed.
 *  - jmp/jcc rel8/rel32: rel32 to the original target, or an absolute jump.
 *  - loop/loope/loopne/jrcxz (rel8 only): through a local label.
 *  - call rel32 / call r/m: push of the original return address, then a jump,
 *    so the callee returns right after the original call (and `call next;
 *    pop` still sees the original address).
 *  - everything else that is position-independent: copied as it is.
 * What must not move is refused with a typed reason (reason.h).
 */
#ifndef DP_X86_RELOC_H
#define DP_X86_RELOC_H

#include <stdint.h>

#include "reason.h"
#include "x86/emit.h"
#include "x86/insn.h"

/*
 * Whether the instruction may be displaced at all, and whether it may only be
 * the last one of a window (calls and syscall: a return or a restarted
 * syscall must land after the patch).  Returns DP_REASON_NONE when it can.
 */
enum dp_reason dp_reloc_check(const struct dp_insn *insn, bool *last_only);

/*
 * Emits the relocated instruction.  Returns 0, -ENOTSUP with *why set when
 * the instruction cannot move, or the emitter's error (-ENOSPC, ...).
 */
int dp_reloc_insn(struct dp_emit *e, const struct dp_insn *insn, const uint8_t *bytes,
		  uint64_t orig, enum dp_reason *why);

/*
 * A jmp or jcc (rel8 or rel32) whose target is moved too, into code the
 * emitter binds to `label`: the same branch, with a rel32, to the label.
 * -ENOTSUP for any other instruction.
 */
int dp_reloc_branch_label(struct dp_emit *e, const struct dp_insn *insn, int label);

#endif /* DP_X86_RELOC_H */
