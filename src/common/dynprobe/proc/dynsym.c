/*
 * Dynamic symbols of the objects a process has mapped, at their run-time
 * addresses: the functions injection calls in the target (dlopen,
 * pthread_create, ...), found in the very file the process mapped.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "elf/elf.h"
#include "proc/dynsym.h"
#include "proc/maps.h"

#define VERSYM_HIDDEN 0x8000

bool dp_map_is_named(const struct dp_map *m, const char *prefix)
{
	const char *b = m->path ? strrchr(m->path, '/') : NULL;

	return b && !strncmp(b + 1, prefix, strlen(prefix));
}

const struct dp_map *dp_maps_find_object(const struct dp_maps *maps, const char *prefix)
{
	for (size_t i = 0; i < maps->n; i++)
		if (dp_map_is_named(&maps->v[i], prefix))
			return &maps->v[i];
	return NULL;
}

/* Opens the mapped file as the process sees it, checking it is the same inode. */
static struct dp_elf *open_mapped(pid_t pid, const struct dp_map *m)
{
	char path[4200];
	struct stat sb;
	struct dp_elf *elf;

	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path);
	if (stat(path, &sb) || sb.st_ino != m->inode) {
		/* Not through its root (no permission?): the same path here. */
		snprintf(path, sizeof(path), "%s", m->path);
		if (stat(path, &sb) || sb.st_ino != m->inode ||
		    major(sb.st_dev) != m->dev_major || minor(sb.st_dev) != m->dev_minor) {
			errno = ESTALE;
			return NULL;
		}
	}
	elf = dp_elf_open(path);
	return elf;
}

static int lookup(struct dp_elf *elf, const char *sym, uint64_t *value)
{
	Elf *e = dp_elf_handle(elf);
	Elf_Scn *scn = NULL, *dynsym = NULL, *versym = NULL;
	GElf_Shdr sh, dsh;
	Elf_Data *syms, *vers = NULL;
	bool found = false;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
		else if (sh.sh_type == SHT_GNU_versym)
			versym = scn;
	}
	if (!dynsym || !gelf_getshdr(dynsym, &dsh) || !(syms = elf_getdata(dynsym, NULL)))
		return -ENOENT;
	if (versym)
		vers = elf_getdata(versym, NULL);
	for (size_t i = 0; dsh.sh_entsize && i < dsh.sh_size / dsh.sh_entsize; i++) {
		GElf_Sym s;
		GElf_Versym v = 0;
		const char *name;

		if (!gelf_getsym(syms, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(s.st_info) != STT_FUNC)
			continue;
		name = elf_strptr(e, dsh.sh_link, s.st_name);
		if (!name || strcmp(name, sym))
			continue;
		if (vers)
			gelf_getversym(vers, (int)i, &v);
		/* The default version is what a new link would bind to. */
		if (!found || !(v & VERSYM_HIDDEN)) {
			*value = s.st_value;
			found = true;
			if (!(v & VERSYM_HIDDEN))
				break;
		}
	}
	return found ? 0 : -ENOENT;
}

/* Where the object's first mapping puts its file addresses. */
static int load_bias(struct dp_elf *elf, const struct dp_maps *maps, const struct dp_map *any,
		     uint64_t *bias)
{
	Elf *e = dp_elf_handle(elf);
	size_t phnum;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	if (elf_getphdrnum(e, &phnum))
		return -ENOEXEC;
	for (size_t i = 0; i < maps->n; i++) {
		const struct dp_map *m = &maps->v[i];

		if (m->inode != any->inode || m->dev_major != any->dev_major ||
		    m->dev_minor != any->dev_minor)
			continue;
		for (size_t k = 0; k < phnum; k++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)k, &ph) || ph.p_type != PT_LOAD)
				continue;
			if ((ph.p_offset & ~(page - 1)) == m->offset) {
				*bias = m->start - (ph.p_vaddr & ~(page - 1));
				return 0;
			}
		}
	}
	return -ENOENT;
}

int dp_maps_dynsyms(pid_t pid, const struct dp_maps *maps, const char *lib,
		    const char *const *syms, size_t n, uint64_t *addrs)
{
	const struct dp_map *m = dp_maps_find_object(maps, lib);
	struct dp_elf *elf;
	uint64_t bias = 0;
	int ret, missing = 0;

	memset(addrs, 0, n * sizeof(*addrs));
	if (!m)
		return -ENOENT;
	elf = open_mapped(pid, m);
	if (!elf)
		return -errno;
	ret = load_bias(elf, maps, m, &bias);
	for (size_t i = 0; i < n && !ret; i++) {
		uint64_t value;

		if (lookup(elf, syms[i], &value))
			missing = 1;
		else
			addrs[i] = value + bias;
	}
	dp_elf_close(elf);
	return ret ? ret : missing ? -ENOENT : 0;
}
