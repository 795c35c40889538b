/*
 * ELF objects: opening and validating the file, its allocated sections,
 * the function list (symbols merged with .eh_frame FDEs), code bytes by
 * virtual address, and the build-id note.
 *
 * Input is untrusted: every offset and size read from the file is checked
 * against the file's size before it is used, and a malformed entry in an
 * optional source (an FDE, a symbol outside its section) is skipped rather
 * than trusted.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "elf/ehread.h"
#include "elf/elf.h"
#include "elf/elf-internal.h"
#include "sorted.h"

/* An allocated section with a nonzero size. */
struct elf_scn {
	uint64_t addr;
	uint64_t size;
	uint64_t flags;		/* sh_flags */
	const uint8_t *data;	/* NULL for SHT_NOBITS */
	size_t index;
};

struct dp_elf {
	char *path;
	int fd;
	Elf *elf;
	enum dp_elf_type type;
	const uint8_t *image;	/* the whole file, mapped by libelf */
	size_t image_size;

	struct elf_scn *scns;	/* sorted by address */
	size_t nscns;
	size_t shnum;
	int32_t *scn_pos;	/* section index -> position in scns, or -1 */

	bool funcs_ready;
	struct dp_func *funcs;
	uint64_t *funcs_maxend;	/* max end of funcs[0..i], to stop lookups early */
	size_t nfuncs;

	struct elf_names names;	/* demangled names (elf-names.c), built on demand */

	int build_id_state;	/* 0 not looked up, 1 found, -1 none */
	const uint8_t *build_id;
	size_t build_id_len;
};

/* A function bound before merging; bind_rank orders names (lower wins). */
struct func_cand {
	uint64_t start;
	uint64_t size;
	const char *name;
	unsigned int flags;
	unsigned int bind_rank;
};

struct cand_vec {
	struct func_cand *v;
	size_t n, cap;
};

static int cand_push(struct cand_vec *vec, const struct func_cand *c)
{
	if (DP_ARRAY_RESERVE(vec->v, vec->cap, vec->n, 256))
		return -ENOMEM;
	vec->v[vec->n++] = *c;
	return 0;
}

const char *dp_elf_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case DP_ELF_ENOTELF:
		return "not an ELF file";
	case DP_ELF_EFORMAT:
		return "not an x86-64 ELF64 executable or shared object";
	case DP_ELF_ECORRUPT:
		return "truncated or corrupt ELF file";
	default:
		return strerror(err);
	}
}

/* True when [start, start + size) lies within [base, base + len). */
static bool range_within(uint64_t start, uint64_t size, uint64_t base, uint64_t len)
{
	return start >= base && start - base <= len && size <= len - (start - base);
}

static int scn_cmp_addr(const void *a, const void *b)
{
	const struct elf_scn *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Records the allocated sections.  TLS NOBITS sections (.tbss) are left out:
 * their addresses overlap the sections that follow them and hold no code.
 */
static int sections_load(struct dp_elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t n = 0;

	if (elf_getshdrnum(elf->elf, &elf->shnum))
		return -DP_ELF_ECORRUPT;
	/* A header table larger than the file cannot be real. */
	if (elf->shnum > elf->image_size / sizeof(Elf64_Shdr))
		return -DP_ELF_ECORRUPT;
	if (elf->shnum == 0)
		return 0;
	elf->scns = calloc(elf->shnum, sizeof(*elf->scns));
	elf->scn_pos = malloc(elf->shnum * sizeof(*elf->scn_pos));
	if (!elf->scns || !elf->scn_pos)
		return -ENOMEM;
	for (size_t i = 0; i < elf->shnum; i++)
		elf->scn_pos[i] = -1;

	while ((scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr sh;
		struct elf_scn *s;

		if (!gelf_getshdr(scn, &sh))
			return -DP_ELF_ECORRUPT;
		if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL && sh.sh_size &&
		    !range_within(sh.sh_offset, sh.sh_size, 0, elf->image_size))
			return -DP_ELF_ECORRUPT;
		if (!(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		if (sh.sh_type == SHT_NOBITS && (sh.sh_flags & SHF_TLS))
			continue;
		if (sh.sh_addr + sh.sh_size < sh.sh_addr)
			return -DP_ELF_ECORRUPT;
		if (n == elf->shnum)
			return -DP_ELF_ECORRUPT;
		s = &elf->scns[n++];
		s->addr = sh.sh_addr;
		s->size = sh.sh_size;
		s->flags = sh.sh_flags;
		s->data = sh.sh_type == SHT_NOBITS ? NULL : elf->image + sh.sh_offset;
		s->index = elf_ndxscn(scn);
	}
	elf->nscns = n;
	if (n)
		qsort(elf->scns, n, sizeof(*elf->scns), scn_cmp_addr);
	for (size_t i = 0; i < n; i++)
		if (elf->scns[i].index < elf->shnum)
			elf->scn_pos[elf->scns[i].index] = (int32_t)i;
	return 0;
}

static struct dp_elf *open_fail(struct dp_elf *elf, int err)
{
	dp_elf_close(elf);
	errno = err < 0 ? -err : err;
	return NULL;
}

struct dp_elf *dp_elf_open(const char *path)
{
	unsigned char ident[EI_NIDENT];
	struct dp_elf *elf;
	GElf_Ehdr eh;
	struct stat st;
	ssize_t got;
	int err;

	elf = calloc(1, sizeof(*elf));
	if (!elf)
		return NULL;
	elf->fd = -1;
	elf->path = strdup(path);
	if (!elf->path)
		return open_fail(elf, ENOMEM);
	elf->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (elf->fd < 0 || fstat(elf->fd, &st))
		return open_fail(elf, errno);
	if (S_ISDIR(st.st_mode))
		return open_fail(elf, EISDIR);
	if (!S_ISREG(st.st_mode))
		return open_fail(elf, DP_ELF_ENOTELF);

	/* Classify by hand first: libelf would call most non-ELF files corrupt. */
	got = pread(elf->fd, ident, sizeof(ident), 0);
	if (got < 0)
		return open_fail(elf, errno);
	if (got < SELFMAG || memcmp(ident, ELFMAG, SELFMAG))
		return open_fail(elf, DP_ELF_ENOTELF);
	if (got < EI_NIDENT)
		return open_fail(elf, DP_ELF_ECORRUPT);
	if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB)
		return open_fail(elf, DP_ELF_EFORMAT);

	if (elf_version(EV_CURRENT) == EV_NONE)
		return open_fail(elf, ENOSYS);
	elf->elf = elf_begin(elf->fd, ELF_C_READ_MMAP, NULL);
	if (!elf->elf || elf_kind(elf->elf) != ELF_K_ELF || !gelf_getehdr(elf->elf, &eh))
		return open_fail(elf, DP_ELF_ECORRUPT);
	if (eh.e_machine != EM_X86_64)
		return open_fail(elf, DP_ELF_EFORMAT);
	if (eh.e_type == ET_EXEC)
		elf->type = DP_ELF_EXEC;
	else if (eh.e_type == ET_DYN)
		elf->type = DP_ELF_DYN;
	else
		return open_fail(elf, DP_ELF_EFORMAT);
	elf->image = (const uint8_t *)elf_rawfile(elf->elf, &elf->image_size);
	if (!elf->image)
		return open_fail(elf, DP_ELF_ECORRUPT);

	err = sections_load(elf);
	if (err)
		return open_fail(elf, err);
	return elf;
}

void dp_elf_close(struct dp_elf *elf)
{
	if (!elf)
		return;
	if (elf->elf)
		elf_end(elf->elf);
	if (elf->fd >= 0)
		close(elf->fd);
	elf_names_release(&elf->names);
	free(elf->funcs);
	free(elf->funcs_maxend);
	free(elf->scns);
	free(elf->scn_pos);
	free(elf->path);
	free(elf);
}

const char *dp_elf_path(const struct dp_elf *elf)
{
	return elf->path;
}

int dp_elf_stat(const struct dp_elf *elf, struct stat *st)
{
	if (elf->fd < 0)
		return -EBADF;
	return fstat(elf->fd, st) ? -errno : 0;
}

enum dp_elf_type dp_elf_type(const struct dp_elf *elf)
{
	return elf->type;
}

struct Elf *dp_elf_handle(struct dp_elf *elf)
{
	return elf->elf;
}

/* The section holding [vaddr, vaddr + size), or NULL. */
static const struct elf_scn *scn_find(const struct dp_elf *elf, uint64_t vaddr, uint64_t size)
{
	/* The last section starting at or below vaddr. */
	size_t lo = DP_BOUND(elf->scns, elf->nscns, addr, vaddr, DP_BOUND_UPPER);

	if (!lo)
		return NULL;
	if (!range_within(vaddr, size, elf->scns[lo - 1].addr, elf->scns[lo - 1].size))
		return NULL;
	return &elf->scns[lo - 1];
}

static const uint8_t *bytes_get(struct dp_elf *elf, uint64_t vaddr, uint64_t size, bool code)
{
	const struct elf_scn *s = scn_find(elf, vaddr, size);

	if (!s || (code && !(s->flags & SHF_EXECINSTR))) {
		errno = ENOENT;
		return NULL;
	}
	if (!s->data) {
		errno = ENODATA;
		return NULL;
	}
	return s->data + (vaddr - s->addr);
}

const uint8_t *dp_elf_code(struct dp_elf *elf, uint64_t vaddr, uint64_t size)
{
	return bytes_get(elf, vaddr, size, true);
}

const uint8_t *dp_elf_bytes(struct dp_elf *elf, uint64_t vaddr, uint64_t size)
{
	return bytes_get(elf, vaddr, size, false);
}

/* ---- symbols ---------------------------------------------------------- */

static Elf_Data *symtab_shndx_data(struct dp_elf *elf, size_t symtab_index)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB_SHNDX &&
		    sh.sh_link == symtab_index)
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

static unsigned int bind_rank(unsigned int bind)
{
	switch (bind) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

/* Collects the function symbols of one symbol table. */
static int symtab_collect(struct dp_elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			  unsigned int src, struct cand_vec *out)
{
	Elf_Data *data, *xdata = NULL;
	bool xdata_looked = false;
	size_t n;

	if (sh->sh_entsize != sizeof(Elf64_Sym))
		return -DP_ELF_ECORRUPT;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -DP_ELF_ECORRUPT;
	n = data->d_size / sizeof(Elf64_Sym);

	/* Entry 0 is the reserved null symbol. */
	for (size_t i = 1; i < n; i++) {
		const struct elf_scn *s;
		struct func_cand c;
		unsigned int type;
		Elf32_Word xndx = 0;
		GElf_Sym sym;
		size_t shndx;
		int err;

		if (!gelf_getsymshndx(data, xdata, (int)i, &sym, &xndx))
			return -DP_ELF_ECORRUPT;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym.st_size)
			continue;
		shndx = sym.st_shndx;
		if (shndx == SHN_XINDEX) {
			if (!xdata_looked) {
				xdata = symtab_shndx_data(elf, elf_ndxscn(scn));
				xdata_looked = true;
				if (xdata && !gelf_getsymshndx(data, xdata, (int)i, &sym, &xndx))
					return -DP_ELF_ECORRUPT;
			}
			if (!xdata)
				continue;
			shndx = xndx;
		} else if (shndx == SHN_UNDEF || shndx >= SHN_LORESERVE) {
			continue;
		}
		if (shndx >= elf->shnum || elf->scn_pos[shndx] < 0)
			continue;
		s = &elf->scns[elf->scn_pos[shndx]];
		if (!(s->flags & SHF_EXECINSTR) ||
		    !range_within(sym.st_value, sym.st_size, s->addr, s->size))
			continue;

		c.start = sym.st_value;
		c.size = sym.st_size;
		c.name = elf_strptr(elf->elf, sh->sh_link, sym.st_name);
		if (c.name && !*c.name)
			c.name = NULL;
		c.bind_rank = bind_rank(GELF_ST_BIND(sym.st_info));
		c.flags = src;
		if (type == STT_GNU_IFUNC)
			c.flags |= DP_FUNC_IFUNC;
		if (c.bind_rank < 2)
			c.flags |= DP_FUNC_GLOBAL;
		/* A nameless symbol gives no name to prefer. */
		if (!c.name)
			c.bind_rank = 3;
		if (!s->data)
			c.flags |= DP_FUNC_NOCODE;
		err = cand_push(out, &c);
		if (err)
			return err;
	}
	return 0;
}

static int symbols_collect(struct dp_elf *elf, struct cand_vec *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr sh;
		int err;

		if (!gelf_getshdr(scn, &sh))
			return -DP_ELF_ECORRUPT;
		if (sh.sh_type == SHT_SYMTAB)
			err = symtab_collect(elf, scn, &sh, DP_FUNC_SYMTAB, out);
		else if (sh.sh_type == SHT_DYNSYM)
			err = symtab_collect(elf, scn, &sh, DP_FUNC_DYNSYM, out);
		else
			continue;
		if (err)
			return err;
	}
	return 0;
}

int elf_symbols_all(struct dp_elf *elf, struct dp_func **out, size_t *n)
{
	struct cand_vec syms = { 0 };
	int err = symbols_collect(elf, &syms);

	*out = NULL;
	*n = 0;
	if (!err && syms.n) {
		*out = malloc(syms.n * sizeof(**out));
		err = *out ? 0 : -ENOMEM;
	}
	for (size_t i = 0; !err && i < syms.n; i++)
		(*out)[i] = (struct dp_func){ syms.v[i].name, syms.v[i].start, syms.v[i].size,
					      syms.v[i].flags };
	if (!err)
		*n = syms.n;
	free(syms.v);
	return err;
}

struct elf_names *elf_names_of(struct dp_elf *elf)
{
	return &elf->names;
}

/* ---- .eh_frame -------------------------------------------------------- */

/* Decodes one FDE into a candidate; -errno for an FDE to skip. */
static int fde_bounds(struct dp_elf *elf, const Dwarf_FDE *fde, const struct dp_eh_cie *cie,
		      Elf_Data *data, uint64_t scn_addr, struct func_cand *c)
{
	struct dp_ehread r = { fde->start, fde->end, 0 };
	const uint8_t *base = data->d_buf;
	const struct elf_scn *s;
	uint64_t start, size;

	if (cie->err)
		return cie->err;
	/*
	 * A signal-return trampoline (glibc's __restore_rt): by convention its
	 * FDE starts one byte early, and the kernel returns into it through an
	 * address no code of the object branches to.  Not a function to probe.
	 */
	if (cie->signal_frame)
		return -ENOENT;
	if (fde->start < base || fde->end > base + data->d_size || fde->start > fde->end)
		return -EINVAL;
	r.vaddr = scn_addr + (uint64_t)(fde->start - base);
	if (dp_ehread_pointer(&r, cie->fde_enc, &start) || dp_ehread_format(&r, cie->fde_enc, &size) ||
	    !size)
		return -EINVAL;
	/* Leftovers of discarded sections point nowhere useful: keep code only. */
	s = scn_find(elf, start, size);
	if (!s || !(s->flags & SHF_EXECINSTR))
		return -ENOENT;
	c->start = start;
	c->size = size;
	c->name = NULL;
	c->bind_rank = 3;
	c->flags = DP_FUNC_EH_FRAME | (s->data ? 0 : DP_FUNC_NOCODE);
	return 0;
}

static int eh_frame_collect(struct dp_elf *elf, struct cand_vec *out)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf->elf, NULL);
	struct dp_eh_cie_cache cc = { 0 };
	Elf_Data *data = NULL;
	Dwarf_Off off = 0;
	uint64_t base;
	int err = 0;

	if (!ident || !dp_eh_frame_find(elf->elf, &data, &base))
		return 0;

	for (;;) {
		Dwarf_Off next = (Dwarf_Off)-1;
		const struct dp_eh_cie *cie;
		Dwarf_CFI_Entry entry;
		struct func_cand c;
		int ret;

		ret = dwarf_next_cfi(ident, data, true, off, &next, &entry);
		if (ret > 0)
			break;
		if (ret < 0) {
			/* Some entries are unusable yet skippable. */
			if (next == (Dwarf_Off)-1 || next <= off)
				break;
			off = next;
			continue;
		}
		if (dwarf_cfi_cie_p(&entry)) {
			if (!dp_eh_cie_get(&cc, ident, data, off)) {
				err = -ENOMEM;
				break;
			}
		} else {
			cie = dp_eh_cie_get(&cc, ident, data, entry.fde.CIE_pointer);
			if (!cie) {
				err = -ENOMEM;
				break;
			}
			if (!fde_bounds(elf, &entry.fde, cie, data, base, &c)) {
				err = cand_push(out, &c);
				if (err)
					break;
			}
		}
		if (next <= off)
			break;
		off = next;
	}
	dp_eh_cie_cache_release(&cc);
	return err;
}

/* ---- merging ---------------------------------------------------------- */

static unsigned int leading_underscores(const char *s)
{
	unsigned int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Orders by range, then the preferred name of a range first. */
static int cand_cmp(const void *a, const void *b)
{
	const struct func_cand *x = a, *y = b;
	unsigned int ux, uy;
	size_t lx, ly;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	if (x->bind_rank != y->bind_rank)
		return x->bind_rank < y->bind_rank ? -1 : 1;
	if (!x->name || !y->name)
		return 0;
	ux = leading_underscores(x->name);
	uy = leading_underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	lx = strlen(x->name);
	ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Sorts and folds identical ranges into their first entry, OR-ing flags. */
static void cands_fold(struct cand_vec *vec)
{
	size_t w = 0;

	if (!vec->n)
		return;
	qsort(vec->v, vec->n, sizeof(*vec->v), cand_cmp);
	for (size_t i = 0; i < vec->n; i++) {
		if (w && vec->v[w - 1].start == vec->v[i].start &&
		    vec->v[w - 1].size == vec->v[i].size) {
			vec->v[w - 1].flags |= vec->v[i].flags;
			continue;
		}
		vec->v[w++] = vec->v[i];
	}
	vec->n = w;
}

/* The first of v[0..n) starting at or above addr (v sorted by start). */
static size_t cands_lower_bound(const struct func_cand *v, size_t n, uint64_t addr)
{
	return DP_BOUND(v, n, start, addr, DP_BOUND_LOWER);
}

/*
 * Adds the FDE ranges no symbol range overlaps to syms (both folded).  An
 * FDE equal to a symbol range only marks it; one overlapping a symbol range
 * otherwise is the symbol's business (symbols are the more precise source).
 */
static int fdes_merge(struct cand_vec *syms, const struct cand_vec *fdes)
{
	size_t nsyms = syms->n;
	uint64_t *maxend;
	int err = 0;

	maxend = malloc((nsyms ? nsyms : 1) * sizeof(*maxend));
	if (!maxend)
		return -ENOMEM;
	for (size_t i = 0; i < nsyms; i++) {
		uint64_t end = syms->v[i].start + syms->v[i].size;

		maxend[i] = i && maxend[i - 1] > end ? maxend[i - 1] : end;
	}
	for (size_t i = 0; i < fdes->n; i++) {
		const struct func_cand *f = &fdes->v[i];
		uint64_t end = f->start + f->size;
		size_t lo, below;
		bool merged = false;

		/* Only syms->v[0..nsyms) is sorted: FDEs get appended past it. */
		lo = cands_lower_bound(syms->v, nsyms, f->start);
		for (size_t j = lo; j < nsyms && syms->v[j].start == f->start; j++) {
			if (syms->v[j].size == f->size) {
				syms->v[j].flags |= f->flags;
				merged = true;
			}
		}
		if (merged)
			continue;
		/* Symbols starting before the FDE's end: does any reach into it? */
		below = cands_lower_bound(syms->v, nsyms, end);
		if (below && maxend[below - 1] > f->start)
			continue;
		err = cand_push(syms, f);
		if (err)
			break;
	}
	free(maxend);
	return err;
}

static int funcs_build(struct dp_elf *elf)
{
	struct cand_vec syms = { 0 }, fdes = { 0 };
	int err;

	err = symbols_collect(elf, &syms);
	if (!err)
		err = eh_frame_collect(elf, &fdes);
	if (err)
		goto out;
	cands_fold(&syms);
	cands_fold(&fdes);
	err = fdes_merge(&syms, &fdes);
	if (err)
		goto out;
	cands_fold(&syms);

	elf->funcs = malloc((syms.n ? syms.n : 1) * sizeof(*elf->funcs));
	elf->funcs_maxend = malloc((syms.n ? syms.n : 1) * sizeof(*elf->funcs_maxend));
	if (!elf->funcs || !elf->funcs_maxend) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < syms.n; i++) {
		uint64_t end = syms.v[i].start + syms.v[i].size;

		elf->funcs[i].name = syms.v[i].name;
		elf->funcs[i].start = syms.v[i].start;
		elf->funcs[i].size = syms.v[i].size;
		elf->funcs[i].flags = syms.v[i].flags;
		elf->funcs_maxend[i] = i && elf->funcs_maxend[i - 1] > end ?
				       elf->funcs_maxend[i - 1] : end;
	}
	elf->nfuncs = syms.n;
	elf->funcs_ready = true;
out:
	if (err) {
		free(elf->funcs);
		free(elf->funcs_maxend);
		elf->funcs = NULL;
		elf->funcs_maxend = NULL;
	}
	free(syms.v);
	free(fdes.v);
	return err;
}

int dp_elf_funcs(struct dp_elf *elf, const struct dp_func **funcs, size_t *n)
{
	if (!elf->funcs_ready) {
		int err = funcs_build(elf);

		if (err)
			return err;
	}
	*funcs = elf->funcs;
	*n = elf->nfuncs;
	return 0;
}

const struct dp_func *dp_elf_func_at(struct dp_elf *elf, uint64_t vaddr)
{
	const struct dp_func *best = NULL;
	size_t lo;

	if (!elf->funcs_ready) {
		int err = funcs_build(elf);

		if (err) {
			errno = -err;
			return NULL;
		}
	}
	lo = DP_BOUND(elf->funcs, elf->nfuncs, start, vaddr, DP_BOUND_UPPER);
	/* Walk back while an earlier range can still reach vaddr. */
	while (lo-- > 0 && elf->funcs_maxend[lo] > vaddr) {
		const struct dp_func *f = &elf->funcs[lo];

		if (best && f->start != best->start)
			break;
		if (vaddr - f->start < f->size)
			best = f;
	}
	if (!best)
		errno = ENOENT;
	return best;
}

/* ---- build-id --------------------------------------------------------- */

static bool note_find_build_id(struct dp_elf *elf, Elf_Data *data)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz &&
		    !memcmp((const char *)data->d_buf + name_off, "GNU", 4)) {
			elf->build_id = (const uint8_t *)data->d_buf + desc_off;
			elf->build_id_len = nh.n_descsz;
			return true;
		}
	}
	return false;
}

static void build_id_find(struct dp_elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t nphdr;

	while ((scn = elf_nextscn(elf->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (data && note_find_build_id(elf, data))
			return;
	}
	/* Objects whose section headers were stripped still have PT_NOTE. */
	if (elf_getphdrnum(elf->elf, &nphdr))
		return;
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;
		Elf_Data *data;

		if (!gelf_getphdr(elf->elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
		    !range_within(ph.p_offset, ph.p_filesz, 0, elf->image_size))
			continue;
		data = elf_getdata_rawchunk(elf->elf, (int64_t)ph.p_offset, ph.p_filesz,
					    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (data && note_find_build_id(elf, data))
			return;
	}
}

int dp_elf_build_id(struct dp_elf *elf, const uint8_t **id, size_t *len)
{
	if (!elf->build_id_state) {
		build_id_find(elf);
		elf->build_id_state = elf->build_id ? 1 : -1;
	}
	if (elf->build_id_state < 0)
		return -ENOENT;
	*id = elf->build_id;
	*len = elf->build_id_len;
	return 0;
}
