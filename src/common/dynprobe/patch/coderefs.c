/*
 * Code addresses the object holds as values: those RIP-relative operands
 * name (the sweep pushes them as it decodes) and those the dynamic
 * relocations store (read here, once per object).  In a position-
 * independent object a code address held in data needs a relocation and
 * code makes one with a RIP-relative operand, so these are all the labels
 * whose address is taken: every one inside a function becomes a
 * DP_TGT_ADDRESS target, and tailcall.c asks whether a function has any.
 * In an executable that is not position-independent, data may hold code
 * addresses without a relocation and code may make one with an immediate:
 * the set is not complete there (code_refs_known).
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/analysis-internal.h"
#include "sorted.h"

#ifndef SHT_RELR
#define SHT_RELR 19
#endif

static bool in_code(const struct dp_object *obj, uint64_t addr)
{
	const struct an_scn *s = an_scn_find(obj, addr);

	return s && s->exec;
}

int an_code_ref_push(struct dp_object *obj, uint64_t addr)
{
	struct an_keys *k = &obj->code_refs;

	if (!in_code(obj, addr))
		return 0;
	if (DP_ARRAY_RESERVE(k->v, k->cap, k->n, 64))
		return -ENOMEM;
	k->v[k->n++] = addr;
	return 0;
}

/* The value a RELA entry stores, when it is an address of the object. */
static bool rela_value(Elf_Data *syms, const GElf_Rela *r, uint64_t *to)
{
	GElf_Sym sym;

	switch (GELF_R_TYPE(r->r_info)) {
	case R_X86_64_RELATIVE:
	case R_X86_64_IRELATIVE:
		*to = (uint64_t)r->r_addend;
		return true;
	case R_X86_64_64:
	case R_X86_64_GLOB_DAT:
	case R_X86_64_JUMP_SLOT:
		if (!syms || !gelf_getsym(syms, (int)GELF_R_SYM(r->r_info), &sym) ||
		    sym.st_shndx == SHN_UNDEF)
			return false;
		*to = sym.st_value + (uint64_t)r->r_addend;
		return true;
	default:
		return false;
	}
}

static int rela_scan(struct dp_object *obj, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	Elf_Data *syms = sh->sh_link ? elf_getdata(elf_getscn(e, sh->sh_link), NULL) : NULL;
	size_t n = data && sh->sh_entsize ? data->d_size / sh->sh_entsize : 0;

	for (size_t i = 0; i < n; i++) {
		GElf_Rela r;
		uint64_t to;
		int err;

		if (!gelf_getrela(data, (int)i, &r))
			return -EINVAL;
		if (rela_value(syms, &r, &to) && (err = an_code_ref_push(obj, to)))
			return err;
	}
	return 0;
}

/* The word a RELR entry relocates holds its addend: the address. */
static int relr_word(struct dp_object *obj, uint64_t where)
{
	const uint8_t *p = dp_elf_bytes(obj->elf, where, 8);
	uint64_t v = 0;

	if (!p)
		return 0;	/* in .bss or beyond the file: nothing stored there */
	for (unsigned b = 0; b < 8; b++)
		v |= (uint64_t)p[b] << (8 * b);
	return an_code_ref_push(obj, v);
}

/* SHT_RELR: an address, then bitmaps of the 63 words that follow it. */
static int relr_scan(struct dp_object *obj, Elf_Scn *scn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = data ? data->d_size / 8 : 0;
	uint64_t where = 0;
	int err;

	for (size_t i = 0; i < n; i++) {
		uint64_t entry;

		memcpy(&entry, (const uint8_t *)data->d_buf + 8 * i, 8);
		if (!(entry & 1)) {
			err = relr_word(obj, entry);
			if (err)
				return err;
			where = entry + 8;
			continue;
		}
		for (unsigned bit = 1; bit < 64; bit++)
			if ((entry >> bit & 1) && (err = relr_word(obj, where + 8 * (bit - 1))))
				return err;
		where += 63 * 8;
	}
	return 0;
}

/* Whether relocations of this section apply to nothing the program loads
 * (a debugging section's, kept by --emit-relocs). */
static bool relocates_unloaded(Elf *e, const GElf_Shdr *sh)
{
	GElf_Shdr target;

	return sh->sh_info && gelf_getshdr(elf_getscn(e, sh->sh_info), &target) &&
	       !(target.sh_flags & SHF_ALLOC);
}

/*
 * Reads the relocations, and sets code_refs_known: whether the set can be
 * complete, in a position-independent object all of whose relocations
 * could be read.
 */
static int code_refs_relocs(struct dp_object *obj)
{
	Elf *e = dp_elf_handle(obj->elf);
	Elf_Scn *scn = NULL;
	int err = 0;

	obj->code_refs_known = dp_elf_type(obj->elf) == DP_ELF_DYN;
	while (!err && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || relocates_unloaded(e, &sh))
			continue;
		if (sh.sh_type == SHT_RELA)
			err = rela_scan(obj, e, scn, &sh);
		else if (sh.sh_type == SHT_RELR)
			err = relr_scan(obj, scn);
		else if (sh.sh_type == SHT_REL)
			obj->code_refs_known = false;	/* addends in place: not for x86-64 */
	}
	/* A malformed table leaves addresses unknown: no tail call is trusted. */
	if (err == -EINVAL) {
		obj->code_refs_known = false;
		err = 0;
	}
	return err;
}

int an_keys_sort_unique(struct an_keys *k)
{
	size_t w = 0;
	int err = an_u64_sort(k->v, k->n);

	if (err)
		return err;
	for (size_t i = 0; i < k->n; i++)
		if (!w || k->v[w - 1] != k->v[i])
			k->v[w++] = k->v[i];
	k->n = w;
	return 0;
}

int an_code_refs_collect(struct dp_object *obj)
{
	int err = code_refs_relocs(obj);

	if (!err)
		err = an_keys_sort_unique(&obj->code_refs);
	/* A label whose address is taken is where control may come by a
	 * pointer: as much a target as a jump table's entry. */
	for (size_t i = 0; i < obj->code_refs.n && !err; i++) {
		uint64_t a = obj->code_refs.v[i];
		const struct dp_function *fn = an_function_at(obj, a);

		if (fn && a != fn->start)
			err = an_keys_push(&obj->keys, a, DP_TGT_ADDRESS);
	}
	return err;
}

bool an_code_named_inside(const struct dp_object *obj, const struct dp_function *fn)
{
	const struct an_keys *k = &obj->code_refs;
	uint64_t end = fn->start + fn->size;
	size_t lo;

	if (!obj->code_refs_known)
		return true;
	lo = DP_BOUND_KEYS(k->v, k->n, fn->start, DP_BOUND_UPPER);
	/* Another function's start inside this range (nested symbols, an
	 * alias entry) is entered as a function, not as a label of this one. */
	for (; lo < k->n && k->v[lo] < end; lo++)
		if (!an_function_starting(obj, k->v[lo], 0))
			return true;
	return false;
}
