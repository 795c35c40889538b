/*
 * Function analysis of an ELF object: the object's lifecycle and its
 * validation, the sections and the function list the analysis works on
 * (main named from the entry point in a stripped program), the one-time
 * analysis (sweep.c, jumptable.c, lsda.c, coderefs.c, tailcall.c do the
 * work), and the lookups of analysis.h.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/analysis-internal.h"
#include "sorted.h"

/* Ranges an address lookup looks back over (see an_function_at). */
#define FN_AT_WALK 1024

/* ---- sections ---------------------------------------------------------- */

static int scn_cmp(const void *a, const void *b)
{
	const struct an_scn *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * The dynamic linker's tables, and the unwinder's (whose code addresses are
 * function ranges and landing pads, targets already): no pointer the
 * program jumps through among them.
 */
static bool sh_meta(uint32_t type, const char *name)
{
	switch (type) {
	case SHT_DYNSYM: case SHT_SYMTAB: case SHT_STRTAB: case SHT_HASH: case SHT_GNU_HASH:
	case SHT_GNU_versym: case SHT_GNU_verdef: case SHT_GNU_verneed: case SHT_RELA:
	case SHT_REL: case SHT_NOTE:
		return true;
	default:
		return name && (!strcmp(name, ".eh_frame") || !strcmp(name, ".eh_frame_hdr") ||
				!strcmp(name, ".gcc_except_table"));
	}
}

/* Allocated sections with bytes in the file, by address. */
static int scns_load(struct dp_object *obj)
{
	Elf *e = dp_elf_handle(obj->elf);
	Elf_Scn *scn = NULL;
	size_t cap = 0, shstrndx = 0;
	bool names = !elf_getshdrstrndx(e, &shstrndx);

	while ((scn = elf_nextscn(e, scn))) {
		struct an_scn *s;
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		data = elf_rawdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size < sh.sh_size)
			continue;
		if (DP_ARRAY_RESERVE(obj->scns, cap, obj->nscns, 64))
			return -ENOMEM;
		s = &obj->scns[obj->nscns++];
		s->addr = sh.sh_addr;
		s->size = sh.sh_size;
		s->data = data->d_buf;
		s->exec = sh.sh_flags & SHF_EXECINSTR;
		s->meta = sh_meta(sh.sh_type, names ? elf_strptr(e, shstrndx, sh.sh_name) : NULL);
	}
	if (obj->nscns)
		qsort(obj->scns, obj->nscns, sizeof(*obj->scns), scn_cmp);
	return 0;
}

const struct an_scn *an_scn_find(const struct dp_object *obj, uint64_t addr)
{
	size_t lo = DP_BOUND(obj->scns, obj->nscns, addr, addr, DP_BOUND_UPPER);

	/* Sections may overlap in a corrupt file: check the closest few. */
	for (size_t i = lo; i-- > 0 && lo - i <= 4;)
		if (addr - obj->scns[i].addr < obj->scns[i].size)
			return &obj->scns[i];
	return NULL;
}

/* ---- functions --------------------------------------------------------- */

static int fn_cmp(const void *a, const void *b)
{
	const struct dp_function *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

/*
 * Gives the name "main" to the function the entry point names, synthesizing
 * one up to the next known start when no symbol or FDE begins there.
 */
static int main_name(struct dp_object *obj)
{
	uint64_t addr, end = UINT64_MAX;
	const struct an_scn *s;
	struct dp_function *f;

	for (size_t i = 0; i < obj->nfns; i++)
		if (obj->fns[i].name && !strcmp(obj->fns[i].name, "main"))
			return 0;
	if (an_entry_main(obj, &addr))
		return 0;
	obj->main_addr = addr;
	obj->has_main = true;
	for (size_t i = 0; i < obj->nfns; i++) {
		if (obj->fns[i].start == addr) {
			if (!obj->fns[i].name)
				obj->fns[i].name = "main";
			return 0;
		}
		if (obj->fns[i].start > addr && obj->fns[i].start < end)
			end = obj->fns[i].start;
	}
	s = an_scn_find(obj, addr);
	if (!s || !s->exec)
		return 0;
	if (end - s->addr > s->size)
		end = s->addr + s->size;
	f = &obj->fns[obj->nfns++];	/* room was reserved by the caller */
	memset(f, 0, sizeof(*f));
	f->name = "main";
	f->start = addr;
	f->size = end - addr;
	qsort(obj->fns, obj->nfns, sizeof(*obj->fns), fn_cmp);
	return 0;
}

static int functions_load(struct dp_object *obj)
{
	const struct dp_func *funcs;
	size_t n;
	int err;

	err = dp_elf_funcs(obj->elf, &funcs, &n);
	if (err)
		return err;
	obj->fns = calloc(n + 1, sizeof(*obj->fns));
	if (!obj->fns)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		obj->fns[i].name = funcs[i].name;
		obj->fns[i].start = funcs[i].start;
		obj->fns[i].size = funcs[i].size;
		obj->fns[i].flags = funcs[i].name ? DP_FN_NAMED : 0;
	}
	obj->nfns = n;
	err = main_name(obj);
	if (err)
		return err;
	obj->fn_maxend = malloc((obj->nfns + 1) * sizeof(*obj->fn_maxend));
	if (!obj->fn_maxend)
		return -ENOMEM;
	for (size_t i = 0; i < obj->nfns; i++) {
		uint64_t end = obj->fns[i].start + obj->fns[i].size;

		obj->fn_maxend[i] = i && obj->fn_maxend[i - 1] > end ? obj->fn_maxend[i - 1] : end;
	}
	return 0;
}

/* ---- the analysis, once ------------------------------------------------ */

/* What only the analysis itself needs: gone once it is done. */
static void scratch_release(struct dp_object *obj)
{
	free(obj->code_refs.v);
	free(obj->entered.v);
	free(obj->jumped);
	free(obj->tables);
	memset(&obj->code_refs, 0, sizeof(obj->code_refs));
	memset(&obj->entered, 0, sizeof(obj->entered));
	obj->jumped = NULL;
	obj->njumped = obj->jumped_cap = 0;
	obj->tables = NULL;
	obj->ntables = obj->tables_cap = 0;
}

static void analysis_release(struct dp_object *obj)
{
	scratch_release(obj);
	free(obj->fns);
	free(obj->fn_maxend);
	free(obj->insn_pool);
	free(obj->ret_pool);
	free(obj->keys.v);
	free(obj->refs.v);
	free(obj->tgt_addr);
	free(obj->tgt_kind);
	free(obj->scns);
	free(obj->fn_noreturn);
	free(obj->slots);
	obj->fn_noreturn = NULL;
	obj->slots = NULL;
	obj->nslots = 0;
	obj->fns = NULL;
	obj->fn_maxend = NULL;
	obj->insn_pool = NULL;
	obj->ret_pool = NULL;
	memset(&obj->keys, 0, sizeof(obj->keys));
	memset(&obj->refs, 0, sizeof(obj->refs));
	obj->tgt_addr = NULL;
	obj->tgt_kind = NULL;
	obj->scns = NULL;
	obj->nfns = obj->ntgt = obj->nscns = 0;
}

static int object_analyze(struct dp_object *obj)
{
	int err;

	if (obj->state)
		return obj->state < 0 ? obj->state : 0;
	err = scns_load(obj);
	if (!err)
		err = an_slots_load(obj);
	if (!err)
		err = functions_load(obj);
	if (!err)
		err = an_functions_decode(obj);
	if (!err)
		err = an_landing_pads_collect(obj);
	if (!err)
		err = an_code_refs_collect(obj);
	if (!err)
		err = an_targets_build(obj);
	/* Last: which indirect jmps are tail calls depends on every target. */
	if (!err)
		err = an_tail_calls_settle(obj);
	scratch_release(obj);
	if (err)
		analysis_release(obj);
	obj->state = err ? err : 1;
	return err;
}

/* ---- the contract ------------------------------------------------------ */

/* True when [off, off + n * size) lies within a file of `len` bytes. */
static bool table_within(uint64_t off, uint64_t n, uint64_t size, uint64_t len)
{
	return off <= len && (!size || n <= (len - off) / size);
}

/*
 * A truncated file can still look like an object without sections: the
 * section and program header tables and every loaded segment must be in the
 * file, or the analysis would silently find nothing.
 */
static int object_validate(struct dp_object *obj)
{
	Elf *e = dp_elf_handle(obj->elf);
	size_t len = 0, nph = 0;
	GElf_Ehdr eh;

	if (!elf_rawfile(e, &len) || !gelf_getehdr(e, &eh))
		return -DP_ELF_ECORRUPT;
	if ((eh.e_shoff && !table_within(eh.e_shoff, eh.e_shnum ? eh.e_shnum : 1,
					 eh.e_shentsize, len)) ||
	    (eh.e_phoff && !table_within(eh.e_phoff, eh.e_phnum, eh.e_phentsize, len)))
		return -DP_ELF_ECORRUPT;
	if (elf_getphdrnum(e, &nph))
		return -DP_ELF_ECORRUPT;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph))
			return -DP_ELF_ECORRUPT;
		if (ph.p_type == PT_LOAD && !table_within(ph.p_offset, 1, ph.p_filesz, len))
			return -DP_ELF_ECORRUPT;
	}
	return 0;
}

struct dp_object *dp_object_open(const char *path)
{
	struct dp_object *obj = calloc(1, sizeof(*obj));
	int err;

	if (!obj)
		return NULL;
	obj->elf = dp_elf_open(path);
	if (!obj->elf) {
		err = errno;
		free(obj);
		errno = err;
		return NULL;
	}
	err = object_validate(obj);
	if (err) {
		dp_object_close(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

void dp_object_close(struct dp_object *obj)
{
	if (!obj)
		return;
	analysis_release(obj);
	dp_elf_close(obj->elf);
	free(obj);
}

struct dp_elf *dp_object_elf(struct dp_object *obj)
{
	return obj->elf;
}

int dp_object_functions(struct dp_object *obj, const struct dp_function **fns, size_t *n)
{
	int err = object_analyze(obj);

	if (err)
		return err;
	*fns = obj->fns;
	*n = obj->nfns;
	return 0;
}

const struct dp_function *an_function_at(const struct dp_object *obj, uint64_t vaddr)
{
	const struct dp_function *best = NULL;
	size_t lo = DP_BOUND(obj->fns, obj->nfns, start, vaddr, DP_BOUND_UPPER);

	/*
	 * The innermost range: the latest start, then the smallest size.  The
	 * walk back is bounded: real objects nest a few ranges, a hostile symbol
	 * table could make every lookup visit all of them.
	 */
	for (size_t k = 0; lo-- > 0 && obj->fn_maxend[lo] > vaddr && k < FN_AT_WALK; k++) {
		const struct dp_function *f = &obj->fns[lo];

		if (best && f->start != best->start)
			break;
		if (vaddr - f->start < f->size)
			best = f;
	}
	return best;
}

const struct dp_function *dp_object_function_at(struct dp_object *obj, uint64_t vaddr)
{
	const struct dp_function *fn;
	int err = object_analyze(obj);

	if (err) {
		errno = -err;
		return NULL;
	}
	fn = an_function_at(obj, vaddr);
	if (!fn)
		errno = ENOENT;
	return fn;
}

/* The function starting at addr, the one of `size` when several do. */
const struct dp_function *an_function_starting(const struct dp_object *obj, uint64_t addr,
					       uint64_t size)
{
	const struct dp_function *best = NULL;
	size_t lo = DP_BOUND(obj->fns, obj->nfns, start, addr, DP_BOUND_LOWER);

	for (; lo < obj->nfns && obj->fns[lo].start == addr; lo++) {
		if (obj->fns[lo].size == size)
			return &obj->fns[lo];
		if (!best)
			best = &obj->fns[lo];
	}
	return best;
}

/*
 * Looks name up in one symbol table.  A default version (or no version)
 * beats a hidden one, so "memcpy" is the one new programs link to.
 */
static const struct dp_function *symtab_lookup(struct dp_object *obj, Elf_Scn *scn,
					       const GElf_Shdr *sh, const char *name)
{
	Elf *e = dp_elf_handle(obj->elf);
	const struct dp_function *hidden = NULL;
	Elf_Data *data = elf_getdata(scn, NULL), *vers = NULL;
	size_t n;

	if (!data || sh->sh_entsize != sizeof(Elf64_Sym))
		return NULL;
	n = data->d_size / sizeof(Elf64_Sym);
	if (sh->sh_type == SHT_DYNSYM) {
		Elf_Scn *v = NULL;
		GElf_Shdr vsh;

		while ((v = elf_nextscn(e, v)))
			if (gelf_getshdr(v, &vsh) && vsh.sh_type == SHT_GNU_versym &&
			    vsh.sh_link == elf_ndxscn(scn))
				break;
		if (v)
			vers = elf_getdata(v, NULL);
	}
	for (size_t i = 1; i < n; i++) {
		const struct dp_function *fn;
		const char *s;
		GElf_Versym vs = 0;
		GElf_Sym sym;
		unsigned type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!s || strcmp(s, name))
			continue;
		fn = an_function_starting(obj, sym.st_value, sym.st_size);
		if (!fn)
			continue;
		if (vers && !gelf_getversym(vers, (int)i, &vs))
			vs = 0;
		if (!(vs & 0x8000))
			return fn;
		if (!hidden)
			hidden = fn;
	}
	return hidden;
}

const struct dp_function *dp_object_function_by_name(struct dp_object *obj, const char *name)
{
	const struct dp_function *found = NULL;
	Elf *e = dp_elf_handle(obj->elf);
	Elf_Scn *scn = NULL;
	int err = object_analyze(obj);

	if (err) {
		errno = -err;
		return NULL;
	}
	/* .symtab first: it names local functions too. */
	for (int pass = 0; pass < 2 && !found; pass++) {
		unsigned want = pass ? SHT_DYNSYM : SHT_SYMTAB;

		scn = NULL;
		while (!found && (scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == want)
				found = symtab_lookup(obj, scn, &sh, name);
		}
	}
	/* main of a stripped program, found from the entry point. */
	if (!found && obj->has_main && !strcmp(name, "main"))
		found = an_function_starting(obj, obj->main_addr, 0);
	if (!found)
		errno = ENOENT;
	return found;
}

unsigned an_target_kind(const struct dp_object *obj, uint64_t vaddr)
{
	size_t lo = DP_BOUND_KEYS(obj->tgt_addr, obj->ntgt, vaddr, DP_BOUND_LOWER);

	return lo < obj->ntgt && obj->tgt_addr[lo] == vaddr ? obj->tgt_kind[lo] : 0;
}

unsigned dp_object_target_kind(struct dp_object *obj, uint64_t vaddr)
{
	int err = object_analyze(obj);

	if (err) {
		errno = -err;
		return 0;
	}
	return an_target_kind(obj, vaddr);
}

long an_insn_index(const uint32_t *off, uint32_t n, uint64_t rel)
{
	size_t lo;

	if (rel > UINT32_MAX)
		return -1;
	lo = DP_BOUND_KEYS(off, n, rel, DP_BOUND_LOWER);
	return lo < n && off[lo] == rel ? (long)lo : -1;
}

long dp_function_insn_index(const struct dp_function *fn, uint64_t vaddr)
{
	if (vaddr < fn->start || vaddr - fn->start >= fn->size)
		return -1;
	return an_insn_index(fn->insn_off, fn->ninsns, vaddr - fn->start);
}
