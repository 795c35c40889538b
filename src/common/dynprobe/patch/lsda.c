/*
 * Exception landing pads: every FDE of .eh_frame whose CIE has an 'L'
 * augmentation points at an LSDA (in .gcc_except_table), whose call-site
 * table lists the landing pads the personality routine may resume at.  Those
 * are branch targets no patch may straddle, though no instruction names them.
 *
 * libdw splits .eh_frame into CIEs and FDEs; the augmentation data (the
 * 'P', 'L' and 'R' encodings) and the LSDA are read here, every read bounded
 * by its entry or its section.  A malformed entry is skipped, never guessed.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elf/ehread.h"
#include "elf/elf.h"
#include "patch/analysis-internal.h"

/* Records one landing pad and flags the function that holds it. */
static int pad_add(struct dp_object *obj, uint64_t pad)
{
	const struct dp_function *fn = an_function_at(obj, pad);
	const struct an_scn *s = an_scn_find(obj, pad);

	if (!s || !s->exec)
		return 0;
	if (fn)
		obj->fns[fn - obj->fns].flags |= DP_FN_LANDING_PADS;
	return an_keys_push(&obj->keys, pad, DP_TGT_LANDING_PAD);
}

/*
 * Reads the LSDA at `lsda` for the FDE starting at pc_begin.  Call-site
 * starts are relative to pc_begin, landing pads to LPStart, which defaults
 * to pc_begin too; a landing pad of 0 means "no handler".  The call-site
 * bytes read in all are charged to *budget.
 */
static int lsda_read(struct dp_object *obj, uint64_t lsda, uint64_t pc_begin, uint64_t *budget)
{
	const struct an_scn *s = an_scn_find(obj, lsda);
	uint64_t lpstart = pc_begin, skip, cs_len;
	uint8_t lp_enc, tt_enc, cs_enc;
	struct dp_ehread r, cs;

	if (!s)
		return 0;
	r.p = s->data + (lsda - s->addr);
	r.end = s->data + s->size;
	r.vaddr = lsda;
	if (dp_ehread_u8(&r, &lp_enc))
		return 0;
	if (lp_enc != DW_EH_PE_omit && dp_ehread_pointer(&r, lp_enc, &lpstart))
		return 0;
	if (dp_ehread_u8(&r, &tt_enc))
		return 0;
	if (tt_enc != DW_EH_PE_omit && dp_ehread_leb(&r, false, &skip))
		return 0;
	if (dp_ehread_u8(&r, &cs_enc) || dp_ehread_leb(&r, false, &cs_len) || cs_len > (uint64_t)(r.end - r.p))
		return 0;
	/* FDEs of a hostile file may all name one big table. */
	if (cs_len > *budget)
		return 0;
	*budget -= cs_len;
	cs = r;
	cs.end = r.p + cs_len;
	while (cs.p < cs.end) {
		uint64_t start, len, pad, action;
		int err;

		if (dp_ehread_format(&cs, cs_enc, &start) || dp_ehread_format(&cs, cs_enc, &len) ||
		    dp_ehread_format(&cs, cs_enc, &pad) || dp_ehread_leb(&cs, false, &action))
			return 0;
		if (!pad)
			continue;
		err = pad_add(obj, lpstart + pad);
		if (err)
			return err;
	}
	return 0;
}

/* The LSDA address of one FDE, or 0 when it has none. */
static uint64_t fde_lsda(const Dwarf_FDE *f, const struct dp_eh_cie *c, const Elf_Data *data,
			 uint64_t scn_addr, uint64_t *pc_begin)
{
	const uint8_t *base = data->d_buf;
	struct dp_ehread r = { f->start, f->end, 0 };
	uint64_t range, auglen, lsda = 0;

	if (c->err || !c->zaug || c->lsda_enc == DW_EH_PE_omit)
		return 0;
	if (f->start < base || f->end > base + data->d_size || f->start > f->end)
		return 0;
	r.vaddr = scn_addr + (uint64_t)(f->start - base);
	if (dp_ehread_pointer(&r, c->fde_enc, pc_begin) || dp_ehread_format(&r, c->fde_enc, &range) ||
	    dp_ehread_leb(&r, false, &auglen) || auglen > (uint64_t)(r.end - r.p))
		return 0;
	r.end = r.p + auglen;
	if (dp_ehread_pointer(&r, c->lsda_enc, &lsda))
		return 0;
	return lsda;
}

int an_landing_pads_collect(struct dp_object *obj)
{
	Elf *e = dp_elf_handle(obj->elf);
	const unsigned char *ident = (const unsigned char *)elf_getident(e, NULL);
	struct dp_eh_cie_cache cc = { 0 };
	Elf_Data *data;
	Dwarf_Off off = 0;
	size_t len = 0;
	uint64_t budget, base;
	int err = 0;

	if (!ident || !elf_rawfile(e, &len) || !dp_eh_frame_find(e, &data, &base))
		return 0;
	/* Real objects read each call-site table once: twice the file is plenty. */
	budget = 2 * (uint64_t)len;

	for (;;) {
		Dwarf_Off next = (Dwarf_Off)-1;
		const struct dp_eh_cie *c;
		Dwarf_CFI_Entry entry;
		uint64_t lsda, pc_begin = 0;
		int ret = dwarf_next_cfi(ident, data, true, off, &next, &entry);

		if (ret > 0)
			break;
		if (ret == 0 && !dwarf_cfi_cie_p(&entry)) {
			c = dp_eh_cie_get(&cc, ident, data, entry.fde.CIE_pointer);
			if (!c) {
				err = -ENOMEM;
				break;
			}
			lsda = fde_lsda(&entry.fde, c, data, base, &pc_begin);
			if (lsda)
				err = lsda_read(obj, lsda, pc_begin, &budget);
			if (err)
				break;
		}
		/* A bad entry may still say where the next one starts. */
		if (next == (Dwarf_Off)-1 || next <= off)
			break;
		off = next;
	}
	dp_eh_cie_cache_release(&cc);
	return err;
}
