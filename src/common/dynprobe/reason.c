/* Messages for enum dp_reason. */
#include "reason.h"

static const struct {
	const char *name, *text;
} reasons[DP_REASON__COUNT] = {
	[DP_REASON_NONE] = { "none", "no reason" },
	[DP_REASON_INSN_INVALID] = { "invalid", "the instruction does not decode" },
	[DP_REASON_INSN_AMBIGUOUS] = { "vendor-ambiguous",
		"Intel and AMD processors decode this instruction differently" },
	[DP_REASON_INSN_TRAP] = { "trap", "the instruction traps by design (int3, int, ud, hlt)" },
	[DP_REASON_INSN_FAR] = { "far", "far calls, jumps and returns cannot be moved" },
	[DP_REASON_INSN_XBEGIN] = { "xbegin", "xbegin's abort address cannot be moved" },
	[DP_REASON_INSN_SYSTEM] = { "system",
		"privileged and system-call instructions other than syscall cannot be moved" },
	[DP_REASON_INSN_STACK_OPERAND] = { "stack-operand",
		"a call through a stack-pointer-relative operand cannot be moved" },
	[DP_REASON_INSN_RIPREL_STACK] = { "riprel-stack",
		"a RIP-relative operand out of the trampoline's reach in an instruction that uses rsp" },
	[DP_REASON_INSN_NO_SCRATCH] = { "no-scratch",
		"a RIP-relative operand out of the trampoline's reach and no free register" },
	[DP_REASON_INSN_EIPREL] = { "eiprel",
		"an [eip + disp32] operand (67 prefix) cannot be moved" },
	[DP_REASON_SHORT] = { "short", "fewer than 5 bytes before the end of the function" },
	[DP_REASON_BRANCH_TARGET] = { "branch-target",
		"a branch target lies within the 5 bytes a jump would overwrite" },
	[DP_REASON_CALL_INSIDE] = { "call-inside",
		"a call or syscall would not be the last displaced instruction" },
	[DP_REASON_NEIGHBOUR] = { "neighbour",
		"an instruction within the 5 bytes a jump would overwrite cannot be moved" },
	[DP_REASON_INDIRECT_JUMPS] = { "indirect-jumps",
		"the function has indirect jumps whose targets are unknown" },
	[DP_REASON_UNDECODED_AFTER] = { "undecoded",
		"the bytes after the site do not decode as instructions" },
	[DP_REASON_OVERLAP] = { "overlap",
		"another probe's jump already overwrites these bytes" },
	[DP_REASON_TRAP_UNSAFE] = { "trap-unsafe",
		"no jump fits, and an int3 here could be hit by a thread that blocks SIGTRAP, "
		"which the kernel punishes by killing the process" },
	[DP_REASON_NOT_BOUNDARY] = { "not-boundary", "the address is not an instruction boundary" },
	[DP_REASON_NO_FUNCTION] = { "no-function", "the address is not inside a known function" },
	[DP_REASON_NOT_CODE] = { "not-code", "the address is not in an executable section" },
};

const char *dp_reason_str(enum dp_reason reason)
{
	return (unsigned)reason < DP_REASON__COUNT ? reasons[reason].text : "unknown reason";
}

const char *dp_reason_name(enum dp_reason reason)
{
	return (unsigned)reason < DP_REASON__COUNT ? reasons[reason].name : "unknown";
}
