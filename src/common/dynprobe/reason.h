/*
 * Why a probe site is installed with int3 instead of a jump, or refused:
 * one typed reason per cause, shared by the relocator and the planner, each
 * with a message for users (dp_reason_str).
 */
#ifndef DP_REASON_H
#define DP_REASON_H

enum dp_reason {
	DP_REASON_NONE = 0,

	/* An instruction that cannot be moved (the relocator's answers). */
	DP_REASON_INSN_INVALID,		/* does not decode */
	DP_REASON_INSN_AMBIGUOUS,	/* Intel and AMD decode it differently */
	DP_REASON_INSN_TRAP,		/* int3, int n, int1, ud0/1/2, hlt */
	DP_REASON_INSN_FAR,		/* far call, jump or return, iret */
	DP_REASON_INSN_XBEGIN,		/* its abort address would move */
	DP_REASON_INSN_SYSTEM,		/* privileged, or sysenter/sysexit/sysret */
	DP_REASON_INSN_STACK_OPERAND,	/* call through [rsp + x] */
	DP_REASON_INSN_RIPREL_STACK,	/* RIP-relative out of reach and uses rsp */
	DP_REASON_INSN_NO_SCRATCH,	/* RIP-relative out of reach, no free register */
	DP_REASON_INSN_EIPREL,		/* [eip + disp32]: wraps at 4 GiB */

	/* A jump does not fit: the site gets an int3 (the planner's answers). */
	DP_REASON_SHORT,		/* fewer than 5 bytes before the function ends */
	DP_REASON_BRANCH_TARGET,	/* a later byte of the 5 is a branch target */
	DP_REASON_CALL_INSIDE,		/* a call or syscall would not be last */
	DP_REASON_NEIGHBOUR,		/* a neighbouring instruction cannot move */
	DP_REASON_INDIRECT_JUMPS,	/* the function has unresolved indirect jumps */
	DP_REASON_UNDECODED_AFTER,	/* bytes after the site did not decode */
	DP_REASON_OVERLAP,		/* another probe's jump overwrites these bytes */

	/* Nothing can be placed (the planner's refusals). */
	DP_REASON_NOT_BOUNDARY,		/* not an instruction boundary */
	DP_REASON_NO_FUNCTION,		/* not inside a known function */
	DP_REASON_NOT_CODE,		/* not in an executable section */
	DP_REASON_TRAP_UNSAFE,		/* int3 only, and it could meet a thread
					   blocking SIGTRAP */

	DP_REASON__COUNT,
};

const char *dp_reason_str(enum dp_reason reason);
/* A short identifier (for reports and tests): "branch-target", ... */
const char *dp_reason_name(enum dp_reason reason);

#endif /* DP_REASON_H */
