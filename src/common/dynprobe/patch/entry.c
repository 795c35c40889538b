/*
 * main of a stripped executable: the C runtime's _start, at the ELF entry
 * point, passes main's address in rdi to __libc_start_main.  It loads rdi
 * with `lea main(%rip),%rdi` (PIE) or `mov $main,%edi` / `mov $main,%rdi`
 * (non-PIE), then calls __libc_start_main through its GOT slot or its PLT
 * stub.  The call is only believed when a relocation names that slot
 * __libc_start_main: the entry of a shared library (libc's prints its
 * version) must not make up a main.
 */
#include <errno.h>
#include <gelf.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/analysis-internal.h"
#include "x86/insn.h"

#define ENTRY_INSNS 32		/* _start is a dozen instructions */

/* The address rdi receives from a load of a constant, if it is one. */
static bool rdi_load(const struct dp_insn *in, uint64_t addr, uint64_t *v)
{
	if (in->enc != DP_ENC_LEGACY || in->map != DP_MAP_1BYTE)
		return false;
	if (in->opcode == 0x8d && in->reg == DP_REG_RDI && (in->attr & DP_ATTR_RIPREL)) {
		*v = addr + in->len + (uint64_t)in->disp;
		return true;
	}
	if (in->opcode == 0xbf && !(in->rex & 1)) {
		*v = in->opsize == 8 ? (uint64_t)in->imm : (uint32_t)in->imm;
		return true;
	}
	if (in->opcode == 0xc7 && in->mod == 3 && in->rm == DP_REG_RDI && in->opsize != 2) {
		*v = in->opsize == 8 ? (uint64_t)in->imm : (uint32_t)in->imm;
		return true;
	}
	return false;
}

int an_entry_main(struct dp_object *obj, uint64_t *main_addr)
{
	const struct an_slot *slot;
	uint64_t pc, rdi = 0;
	bool rdi_known = false;
	struct dp_insn in;
	GElf_Ehdr eh;

	if (!gelf_getehdr(dp_elf_handle(obj->elf), &eh) || !eh.e_entry)
		return -ENOENT;
	pc = eh.e_entry;
	for (int k = 0; k < ENTRY_INSNS && an_code_insn(obj, pc, &in); k++, pc += in.len) {
		uint64_t v;

		if (rdi_load(&in, pc, &v)) {
			rdi = v;
			rdi_known = true;
			continue;
		}
		if (in.regs_written >> DP_REG_RDI & 1)
			rdi_known = false;
		if (in.flow == DP_FLOW_NONE)
			continue;
		if (in.flow == DP_FLOW_CALL_IND && (in.attr & DP_ATTR_RIPREL))
			slot = an_slot_find(obj, pc + in.len + (uint64_t)in.disp);
		else if (in.flow == DP_FLOW_CALL)
			slot = an_slot_find(obj, an_plt_slot(obj, dp_insn_target(&in, pc)));
		else
			return -ENOENT;
		/* The first call is the one: _start makes no other. */
		if (!rdi_known || !slot || strcmp(slot->name, "__libc_start_main"))
			return -ENOENT;
		*main_addr = rdi;
		return 0;
	}
	return -ENOENT;
}
