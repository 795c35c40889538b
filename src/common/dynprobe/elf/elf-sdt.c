/*
 * Statically defined probes (SDT, <sys/sdt.h>): the sites an object's
 * .note.stapsdt notes describe, with their addresses moved by the
 * .stapsdt.base shift when the object was relocated after linking.
 *
 * Notes come from the file, which anyone may have written: every size is
 * checked against what is left of its section before a byte is read, and a
 * corrupt note refuses the whole object with its position and the reason.
 */
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"

#define SDT_OWNER "stapsdt"
#define SDT_TYPE 3
#define NOTE_HDR 12		/* namesz, descsz, type: 4 bytes each */
#define SDT_DESC_FIXED 24	/* pc, base, semaphore: 8 bytes each */

struct sdt_list {
	struct dp_sdt_probe *v;
	size_t n, cap;
};

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* The next NUL-terminated string of desc[*pos..len), or NULL when none
 * ends within it. */
static const char *desc_string(const uint8_t *desc, size_t len, size_t *pos)
{
	const uint8_t *nul;
	const char *s;

	if (*pos >= len)
		return NULL;
	nul = memchr(desc + *pos, '\0', len - *pos);
	if (!nul)
		return NULL;
	s = (const char *)desc + *pos;
	*pos = (size_t)(nul - desc) + 1;
	return s;
}

/* The shift a relocation after linking gave the object: .stapsdt.base's
 * address now minus the one the notes recorded (0 without the section). */
static int stapsdt_base(Elf *e, uint64_t *addr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	*addr = 0;
	if (elf_getshdrstrndx(e, &shstrndx))
		return -ELIBBAD;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return -ELIBBAD;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".stapsdt.base") && (sh.sh_flags & SHF_ALLOC)) {
			*addr = sh.sh_addr;
			return 1;
		}
	}
	return 0;
}

static int list_add(struct sdt_list *l, const struct dp_sdt_probe *p)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct dp_sdt_probe *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *p;
	return 0;
}

/* One stapsdt desc into *p; -ELIBBAD with the reason in err. */
static int sdt_desc(const uint8_t *desc, size_t len, struct dp_sdt_probe *p,
		    struct dp_err *err)
{
	size_t pos = SDT_DESC_FIXED;

	if (len < SDT_DESC_FIXED)
		return dp_err_set(err, -ELIBBAD, "its desc has %zu bytes, fewer than the %d of "
				  "pc, base and semaphore", len, SDT_DESC_FIXED);
	p->pc = get64(desc);
	p->base = get64(desc + 8);
	p->semaphore = get64(desc + 16);
	p->provider = desc_string(desc, len, &pos);
	p->name = p->provider ? desc_string(desc, len, &pos) : NULL;
	p->args = p->name ? desc_string(desc, len, &pos) : NULL;
	if (!p->args)
		return dp_err_set(err, -ELIBBAD, "its %s string does not end within its desc",
				  !p->provider ? "provider" : !p->name ? "name" : "argument");
	if (!p->provider[0] || !p->name[0])
		return dp_err_set(err, -ELIBBAD, "its %s is empty", p->provider[0] ? "name" :
				  "provider");
	return 0;
}

/* The notes of one SHT_NOTE section's bytes.  0, -ENOMEM, or -ELIBBAD. */
static int sdt_section(const uint8_t *b, size_t size, bool have_base, uint64_t base_addr,
		       struct sdt_list *l, struct dp_err *err)
{
	size_t off = 0;

	while (off < size) {
		struct dp_sdt_probe p = { 0 };
		uint32_t namesz, descsz, type;
		size_t name_end, desc_end;
		int r;

		if (size - off < NOTE_HDR)
			return dp_err_set(err, -ELIBBAD, "note at offset 0x%zx: %zu bytes left, "
					  "fewer than a note header", off, size - off);
		namesz = get32(b + off);
		descsz = get32(b + off + 4);
		type = get32(b + off + 8);
		if (namesz > size - off - NOTE_HDR ||
		    align4(namesz) > size - off - NOTE_HDR ||
		    descsz > size - off - NOTE_HDR - align4(namesz))
			return dp_err_set(err, -ELIBBAD, "note at offset 0x%zx: name (%" PRIu32
					  " bytes) and desc (%" PRIu32 " bytes) run past the "
					  "section's end (%zu bytes)", off, namesz, descsz, size);
		name_end = off + NOTE_HDR + align4(namesz);
		desc_end = name_end + descsz;
		if (type == SDT_TYPE && namesz == sizeof(SDT_OWNER) &&
		    !memcmp(b + off + NOTE_HDR, SDT_OWNER, sizeof(SDT_OWNER))) {
			r = sdt_desc(b + name_end, descsz, &p, err);
			if (r)
				return dp_err_prefix(err, "stapsdt note at offset 0x%zx: ", off);
			if (have_base && p.base) {
				/* Relocated after linking: sites and semaphore moved alike. */
				uint64_t shift = base_addr - p.base;

				p.pc += shift;
				if (p.semaphore)
					p.semaphore += shift;
			}
			if (list_add(l, &p))
				return dp_err_set(err, -ENOMEM, "out of memory");
		}
		off = desc_end > size ? size : align4(desc_end);
	}
	return 0;
}

int dp_elf_sdt_probes(struct dp_elf *elf, struct dp_sdt_probe **probes, size_t *n,
		      struct dp_err *err)
{
	Elf *e = dp_elf_handle(elf);
	struct sdt_list l = { 0 };
	Elf_Scn *scn = NULL;
	uint64_t base_addr;
	int have_base, r = 0;

	*probes = NULL;
	*n = 0;
	have_base = stapsdt_base(e, &base_addr);
	if (have_base < 0)
		return dp_err_set(err, have_base, "%s: unreadable section headers",
				  dp_elf_path(elf));
	while (!r && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh)) {
			r = dp_err_set(err, -ELIBBAD, "unreadable section header");
			break;
		}
		if (sh.sh_type != SHT_NOTE)
			continue;
		d = elf_rawdata(scn, NULL);
		if (!d || (sh.sh_size && !d->d_buf)) {
			r = dp_err_set(err, -ELIBBAD, "note section %zu runs past the file's end",
				       elf_ndxscn(scn));
			break;
		}
		r = sdt_section(d->d_buf, d->d_size, have_base > 0, base_addr, &l, err);
	}
	if (r) {
		free(l.v);
		return dp_err_prefix(err, "%s: ", dp_elf_path(elf));
	}
	if (!l.n)
		return dp_err_set(err, -ENOENT, "%s has no SDT probe (no .note.stapsdt note)",
				  dp_elf_path(elf));
	*probes = l.v;
	*n = l.n;
	return 0;
}
