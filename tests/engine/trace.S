/*
 * The oracle of the corpus test: runs drive(x) with the trap flag set, so
 * that every instruction it executes raises SIGTRAP and the test can count,
 * without any probe, how many times each probed address runs.
 * long dp_c_trace(long (*drive)(long), long x)
 */
#include "corpus/corpus.h"
FUNC(dp_c_trace)
	sub rsp, 8
	mov rax, rdi
	mov rdi, rsi
	pushfq
	or qword ptr [rsp], 0x100
	popfq
	call rax
	pushfq
	and qword ptr [rsp], -0x101
	popfq
	add rsp, 8
	ret
END(dp_c_trace)
