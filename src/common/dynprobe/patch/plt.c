/*
 * Calls to imported functions and calls that do not return.
 *
 * A call reaches an imported function through a GOT slot, directly
 * (call *slot(%rip), -fno-plt) or through a PLT stub (endbr64; bnd jmp
 * *slot(%rip)); the dynamic relocation of the slot names the function.
 *
 * The backward walks of the jump-table resolver must not believe that
 * control falls through a call to a function that never returns: gcc puts
 * unrelated code right after `call __assert_fail`, and a path through it
 * would bring in register values that never reach the jump.  Imported
 * functions are known by name; a function of the object never returns when
 * it decodes completely and has no return site at all.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/analysis-internal.h"
#include "sorted.h"

#define STUB_INSNS 3		/* endbr64; bnd jmp *slot(%rip) */

/* C and C++ runtime functions that never return. */
static const char *const noreturn_names[] = {
	"abort", "exit", "_exit", "_Exit", "quick_exit", "__assert_fail",
	"__assert_perror_fail", "__assert", "__stack_chk_fail", "__chk_fail",
	"__fortify_fail", "__libc_fatal", "err", "errx", "verr", "verrx",
	"longjmp", "_longjmp", "siglongjmp", "__longjmp_chk", "pthread_exit",
	"__cxa_throw", "__cxa_rethrow", "__cxa_bad_cast", "__cxa_bad_typeid",
	"__cxa_pure_virtual", "__cxa_deleted_virtual", "__cxa_call_unexpected",
	"__cxa_throw_bad_array_new_length", "_Unwind_Resume", "_ZSt9terminatev",
};

static bool name_noreturn(const char *name)
{
	for (size_t i = 0; i < sizeof(noreturn_names) / sizeof(noreturn_names[0]); i++)
		if (!strcmp(name, noreturn_names[i]))
			return true;
	/* std::__throw_bad_alloc() and its kin. */
	return !strncmp(name, "_ZSt", 4) && strstr(name, "__throw_");
}

static int slot_cmp(const void *a, const void *b)
{
	const struct an_slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int an_slots_load(struct dp_object *obj)
{
	Elf *e = dp_elf_handle(obj->elf);
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *data, *syms;
		Elf_Scn *symscn;
		GElf_Shdr sh, ssh;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    sh.sh_entsize != sizeof(Elf64_Rela))
			continue;
		data = elf_getdata(scn, NULL);
		symscn = elf_getscn(e, sh.sh_link);
		if (!data || !symscn || !gelf_getshdr(symscn, &ssh) ||
		    (ssh.sh_type != SHT_DYNSYM && ssh.sh_type != SHT_SYMTAB) ||
		    !(syms = elf_getdata(symscn, NULL)))
			continue;
		n = data->d_size / sizeof(Elf64_Rela);
		for (size_t i = 0; i < n; i++) {
			unsigned type;
			const char *name;
			GElf_Rela rela;
			GElf_Sym sym;

			if (!gelf_getrela(data, (int)i, &rela))
				break;
			type = (unsigned)GELF_R_TYPE(rela.r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			if (!gelf_getsym(syms, (int)GELF_R_SYM(rela.r_info), &sym))
				continue;
			name = elf_strptr(e, ssh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (DP_ARRAY_RESERVE(obj->slots, cap, obj->nslots, 64))
				return -ENOMEM;
			obj->slots[obj->nslots].addr = rela.r_offset;
			obj->slots[obj->nslots].name = name;
			obj->slots[obj->nslots++].noreturn = name_noreturn(name);
		}
	}
	if (obj->nslots)
		qsort(obj->slots, obj->nslots, sizeof(*obj->slots), slot_cmp);
	return 0;
}

const struct an_slot *an_slot_find(const struct dp_object *obj, uint64_t addr)
{
	size_t lo = DP_BOUND(obj->slots, obj->nslots, addr, addr, DP_BOUND_LOWER);

	return lo < obj->nslots && obj->slots[lo].addr == addr ? &obj->slots[lo] : NULL;
}

bool an_code_insn(const struct dp_object *obj, uint64_t vaddr, struct dp_insn *in)
{
	const struct an_scn *s = an_scn_find(obj, vaddr);

	if (!s || !s->exec)
		return false;
	return !dp_insn_decode(s->data + (vaddr - s->addr), s->addr + s->size - vaddr, in);
}

uint64_t an_plt_slot(const struct dp_object *obj, uint64_t stub)
{
	struct dp_insn in;

	for (int k = 0; k < STUB_INSNS && an_code_insn(obj, stub, &in); k++) {
		if (in.flow == DP_FLOW_JMP_IND && (in.attr & DP_ATTR_RIPREL))
			return stub + in.len + (uint64_t)in.disp;
		if (in.flow != DP_FLOW_NONE)
			return 0;
		stub += in.len;
	}
	return 0;
}

bool an_call_noreturn(const struct dp_object *obj, const struct dp_insn *in, uint64_t addr)
{
	const struct an_slot *slot = NULL;
	const struct dp_function *fn;
	uint64_t target;

	if (in->flow == DP_FLOW_CALL_IND && (in->attr & DP_ATTR_RIPREL)) {
		slot = an_slot_find(obj, addr + in->len + (uint64_t)in->disp);
		return slot && slot->noreturn;
	}
	if (in->flow != DP_FLOW_CALL || !obj->fn_noreturn)
		return false;
	target = dp_insn_target(in, addr);
	fn = an_function_starting(obj, target, 0);
	/* A symbol says what the target is; an FDE may cover a whole .plt. */
	if (fn && (fn->name || obj->fn_noreturn[fn - obj->fns]))
		return obj->fn_noreturn[fn - obj->fns];
	slot = an_slot_find(obj, an_plt_slot(obj, target));
	return slot && slot->noreturn;
}
