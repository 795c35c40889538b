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
 * the sweep pushes every immediate and absolute displacement that lands in
 * code, and the words of its data are read here (data_words_scan), which
 * completes the set there too.  code_refs_known is false only when a
 * relocation table could not be read.
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

int an_table_note(struct dp_object *obj, uint64_t lo, uint64_t hi)
{
	if (DP_ARRAY_RESERVE(obj->tables, obj->tables_cap, obj->ntables, 16))
		return -ENOMEM;
	obj->tables[obj->ntables].lo = lo;
	obj->tables[obj->ntables++].hi = hi;
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct an_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts the tables and merges those that overlap (one table, several jmps). */
static void tables_merge(struct dp_object *obj)
{
	size_t w = 0;

	if (obj->ntables > 1)
		qsort(obj->tables, obj->ntables, sizeof(*obj->tables), range_cmp);
	for (size_t i = 0; i < obj->ntables; i++) {
		if (w && obj->tables[i].lo <= obj->tables[w - 1].hi) {
			if (obj->tables[i].hi > obj->tables[w - 1].hi)
				obj->tables[w - 1].hi = obj->tables[i].hi;
			continue;
		}
		obj->tables[w++] = obj->tables[i];
	}
	obj->ntables = w;
}

/* Whether a resolved table holds [a, a + n) whole. */
static bool in_table(const struct dp_object *obj, uint64_t a, unsigned n)
{
	size_t k = DP_BOUND(obj->tables, obj->ntables, lo, a, DP_BOUND_UPPER);

	return k && a + n <= obj->tables[k - 1].hi;
}

/* The end of the function whose instructions all decoded that holds addr,
 * or 0 when none does. */
static uint64_t decoded_end(const struct dp_object *obj, uint64_t addr)
{
	const struct dp_function *fn = an_function_at(obj, addr);

	return fn && !(fn->flags & DP_FN_UNDECODED) ? fn->start + fn->size : 0;
}

/*
 * Code addresses held as plain words in the data of an executable that is
 * not position-independent: a link-time pointer needs no relocation there.
 * Every 8-byte word at every 4-byte aligned offset of every allocated
 * section is read (the ABI aligns pointers to 8; packed structures to 4
 * are covered too), in code only where no function that decoded whole
 * lies, and each that lands in code counts: a superset, since a number may
 * look like an address.  But not one that lands inside an instruction of
 * a function that decoded whole: no label is there, and a number is what
 * it is (python3.11's "ABC" read as 0x434241, inside the jmp after its
 * python:line SDT nop, cost that site its jump).  Left out: the
 * dynamic linker's and the unwinder's tables, and the entries of jump
 * tables the resolver read, whose every destination is a target already.  Not seen: a code
 * address stored in 4 bytes, or at an offset not a multiple of 4 (no
 * compiler emits either for a label; analysis.h says so).  In a position-
 * independent object such words need relocations, which are read instead.
 */
/* Whether addr lies inside an instruction (not at its start) of a function
 * whose bytes all decoded. */
static bool inside_insn(const struct dp_object *obj, uint64_t addr)
{
	const struct dp_function *fn = an_function_at(obj, addr);

	return fn && !(fn->flags & DP_FN_UNDECODED) && dp_function_insn_index(fn, addr) < 0;
}

static int data_words_scan(struct dp_object *obj)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	int err = 0;

	tables_merge(obj);
	for (size_t i = 0; i < obj->nscns; i++) {
		const struct an_scn *s = &obj->scns[i];

		if (!s->exec)
			continue;
		if (s->addr < lo)
			lo = s->addr;
		if (s->addr + s->size > hi)
			hi = s->addr + s->size;
	}
	for (size_t i = 0; i < obj->nscns && !err && lo < hi; i++) {
		const struct an_scn *s = &obj->scns[i];
		uint64_t off = (4 - (s->addr & 3)) & 3;

		if (s->meta)
			continue;
		for (; off + 8 <= s->size && !err; off += 4) {
			uint64_t w, a = s->addr + off, end;

			/* In code, only bytes no decoded function holds: data
			 * hand-written assembly keeps there.  A function is
			 * skipped whole, to the word straddling its end. */
			if (s->exec && ((end = decoded_end(obj, a)) || decoded_end(obj, a + 7))) {
				if (end > a + 8)
					off += (end - a - 8) & ~(uint64_t)3;
				continue;
			}
			memcpy(&w, s->data + off, 8);
			if (w - lo < hi - lo && !in_table(obj, a, 8) && !inside_insn(obj, w))
				err = an_code_ref_push(obj, w);
		}
	}
	return err;
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
 * Reads the relocations (and a position-dependent executable's data words),
 * and sets code_refs_known: whether the set can be complete, every
 * relocation having been read.
 */
static int code_refs_relocs(struct dp_object *obj)
{
	Elf *e = dp_elf_handle(obj->elf);
	Elf_Scn *scn = NULL;
	int err = 0;

	/* Position-dependent: the words of its data, besides relocations
	 * (--emit-relocs) and what the sweep found in its instructions. */
	obj->code_refs_known = true;
	if (dp_elf_type(obj->elf) != DP_ELF_DYN)
		err = data_words_scan(obj);
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

		if (fn)
			err = an_keys_push(&obj->keys, a,
					   DP_TGT_VALUE | (a != fn->start ? DP_TGT_ADDRESS : 0));
	}
	/* Any function may be held somewhere then. */
	for (size_t i = 0; i < obj->nfns && !err && !obj->code_refs_known; i++)
		err = an_keys_push(&obj->keys, obj->fns[i].start, DP_TGT_VALUE);
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
