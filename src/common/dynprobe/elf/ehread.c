/* The bounded .eh_frame / LSDA reader (ehread.h). */
#include <dwarf.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "elf/ehread.h"
#include "sorted.h"

bool dp_eh_frame_find(Elf *e, Elf_Data **data, uint64_t *addr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(e, &shstrndx))
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame"))
			break;
	}
	if (!scn || !(*data = elf_getdata(scn, NULL)) || !(*data)->d_buf)
		return false;
	*addr = sh.sh_addr;
	return true;
}

/* Past this many CIEs, see struct dp_eh_cie_cache. */
#define CIE_CACHED 4096

static int cie_parse(const Dwarf_CIE *c, struct dp_eh_cie *out)
{
	struct dp_ehread r = {
		c->augmentation_data, c->augmentation_data + c->augmentation_data_size, 0,
	};
	const char *a = c->augmentation;
	uint64_t skip;
	uint8_t penc;

	out->fde_enc = DW_EH_PE_absptr;
	out->lsda_enc = DW_EH_PE_omit;
	out->zaug = false;
	out->signal_frame = false;
	if (!a || !*a)
		return 0;
	/* Without 'z' the layout of what follows is unknowable. */
	if (*a != 'z' || !c->augmentation_data)
		return -ENOTSUP;
	out->zaug = true;
	for (a++; *a; a++) {
		switch (*a) {
		case 'P':
			if (dp_ehread_u8(&r, &penc) || (penc & 0x70) == DW_EH_PE_aligned ||
			    dp_ehread_format(&r, penc, &skip))
				return -EINVAL;
			break;
		case 'L':
			if (dp_ehread_u8(&r, &out->lsda_enc))
				return -EINVAL;
			break;
		case 'R':
			if (dp_ehread_u8(&r, &out->fde_enc))
				return -EINVAL;
			break;
		case 'S':	/* signal frame */
			out->signal_frame = true;
			break;
		case 'B':	/* branch protection */
		case 'G':	/* memory tagging */
			break;
		default:
			/* Unknown data may sit before 'L' or 'R': nothing after it is readable. */
			return -ENOTSUP;
		}
	}
	return 0;
}

const struct dp_eh_cie *dp_eh_cie_get(struct dp_eh_cie_cache *cc, const unsigned char *ident,
				      Elf_Data *data, Dwarf_Off off)
{
	struct dp_eh_cie c = { .off = off };
	size_t lo = DP_BOUND(cc->v, cc->n, off, off, DP_BOUND_LOWER);
	Dwarf_CFI_Entry e;
	Dwarf_Off next;

	if (lo < cc->n && cc->v[lo].off == off)
		return &cc->v[lo];
	if (dwarf_next_cfi(ident, data, true, off, &next, &e) != 0 || !dwarf_cfi_cie_p(&e))
		c.err = -EINVAL;
	else
		c.err = cie_parse(&e.cie, &c);
	if (cc->n == CIE_CACHED) {
		cc->uncached = c;
		return &cc->uncached;
	}
	if (DP_ARRAY_RESERVE(cc->v, cc->cap, cc->n, 16))
		return NULL;
	memmove(&cc->v[lo + 1], &cc->v[lo], (cc->n - lo) * sizeof(*cc->v));
	cc->v[lo] = c;
	cc->n++;
	return &cc->v[lo];
}

void dp_eh_cie_cache_release(struct dp_eh_cie_cache *cc)
{
	free(cc->v);
	cc->v = NULL;
	cc->n = cc->cap = 0;
}
