/*
 * Finding an object's DWARF (its own sections, a build-id tree, a
 * .gnu_debuglink, debuginfod) and the cache that keeps each one open once.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf/dwarf-internal.h"
#include "elf/elf.h"

#define MAX_DIRS 8
#define LOOKED_MAX 3000

static struct dp_dwarf *cache;

const char *dp_dwarf_origin_str(enum dp_dwarf_origin origin)
{
	switch (origin) {
	case DP_DWARF_OWN: return "own sections";
	case DP_DWARF_BUILD_ID: return "build-id";
	case DP_DWARF_DEBUGLINK: return "debuglink";
	case DP_DWARF_DEBUGINFOD: return "debuginfod";
	}
	return "?";
}

Dwarf *dp_dwarf_handle(struct dp_dwarf *dw) { return dw->dbg; }
const char *dp_dwarf_path(const struct dp_dwarf *dw) { return dw->path; }
enum dp_dwarf_origin dp_dwarf_origin(const struct dp_dwarf *dw) { return dw->origin; }

/* ---- the places looked, for the error ---------------------------------- */

struct looked {
	char text[LOOKED_MAX];
	size_t len;
};

static void look(struct looked *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void look(struct looked *l, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (l->len >= sizeof(l->text) - 1)
		return;
	if (l->len)
		l->text[l->len++] = ',', l->text[l->len++] = ' ';
	va_start(ap, fmt);
	r = vsnprintf(l->text + l->len, sizeof(l->text) - l->len, fmt, ap);
	va_end(ap);
	if (r > 0)
		l->len += (size_t)r < sizeof(l->text) - l->len ? (size_t)r
							     : sizeof(l->text) - l->len - 1;
}

/* ---- debug directories ------------------------------------------------- */

static size_t debug_dirs(char dirs[MAX_DIRS][1024])
{
	const char *env = getauxval(AT_SECURE) ? NULL : getenv(DP_DWARF_DIRS_ENV);
	size_t n = 0;

	if (!env || !*env) {
		snprintf(dirs[0], sizeof(dirs[0]), "%s", DP_DWARF_DIR_DEFAULT);
		return 1;
	}
	while (*env && n < MAX_DIRS) {
		size_t len = strcspn(env, ":");

		if (len && len < sizeof(dirs[0])) {
			memcpy(dirs[n], env, len);
			dirs[n][len] = '\0';
			while (len > 1 && dirs[n][len - 1] == '/')
				dirs[n][--len] = '\0';
			n++;
		}
		env += len;
		if (*env == ':')
			env++;
	}
	return n;
}

/* ---- ELF helpers ------------------------------------------------------- */

static Elf_Scn *section(Elf *e, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(e, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static bool has_debug_info(Elf *e)
{
	GElf_Shdr sh;

	return section(e, ".debug_info", &sh) && sh.sh_type != SHT_NOBITS && sh.sh_size > 0;
}

/* The build-id note of e, 0 or -ENOENT. */
static int note_build_id(Elf *e, const uint8_t **id, size_t *len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		size_t off = 0, noff, doff;
		GElf_Nhdr nh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4)) {
				*id = (const uint8_t *)d->d_buf + doff;
				*len = nh.n_descsz;
				return 0;
			}
		}
	}
	return -ENOENT;
}

static void hex(const uint8_t *id, size_t len, char *out, size_t size)
{
	size_t k = 0;

	for (size_t i = 0; i < len && k + 3 <= size; i++)
		k += (size_t)snprintf(out + k, size - k, "%02x", id[i]);
	if (size)
		out[k < size ? k : size - 1] = '\0';
}

/* CRC-32 as .gnu_debuglink states it (the zlib polynomial). */
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	static uint32_t table[256];

	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	crc = ~crc;
	while (n--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static int file_crc(int fd, uint32_t *out)
{
	uint8_t buf[65536];
	uint32_t crc = 0;
	ssize_t r;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32_update(crc, buf, (size_t)r);
	if (r < 0)
		return -errno;
	*out = crc;
	return 0;
}

/* ---- candidates -------------------------------------------------------- */

struct found {
	int fd;
	Elf *elf;
	char path[4096];
	enum dp_dwarf_origin origin;
};

/* What a candidate must be beyond having .debug_info. */
struct want {
	const uint8_t *id;	/* its build-id, when set */
	size_t idlen;
	bool crc;		/* its CRC-32 */
	uint32_t crcval;
};

/* Opens path as a DWARF candidate: 1 taken (f filled), 0 not this one
 * (why is appended to the place in l). */
static int candidate(const char *path, const struct want *w, enum dp_dwarf_origin origin,
		     struct looked *l, struct found *f)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const char *why = NULL;
	const uint8_t *id;
	size_t idlen;
	uint32_t crc;
	Elf *e;

	if (fd < 0) {
		look(l, "%s", path);
		return 0;
	}
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		why = "not ELF";
	else if (!has_debug_info(e))
		why = "no .debug_info";
	else if (w->id && (note_build_id(e, &id, &idlen) || idlen != w->idlen ||
			   memcmp(id, w->id, idlen)))
		why = "another build-id";
	else if (w->crc && (file_crc(fd, &crc) || crc != w->crcval))
		why = "its CRC does not match the debuglink's";
	if (why) {
		look(l, "%s (%s)", path, why);
		if (e)
			elf_end(e);
		close(fd);
		return 0;
	}
	f->fd = fd;
	f->elf = e;
	f->origin = origin;
	snprintf(f->path, sizeof(f->path), "%s", path);
	return 1;
}

static int by_build_id(char dirs[MAX_DIRS][1024], size_t ndirs, const uint8_t *id, size_t len,
		       struct looked *l, struct found *f)
{
	char h[130], path[4096];
	struct want w = { id, len, false, 0 };

	if (len < 2 || len > 64)
		return 0;
	hex(id, len, h, sizeof(h));
	for (size_t i = 0; i < ndirs; i++) {
		snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", dirs[i], h, h + 2);
		if (candidate(path, &w, DP_DWARF_BUILD_ID, l, f))
			return 1;
	}
	return 0;
}

static int by_debuglink(const char *objpath, Elf *e, char dirs[MAX_DIRS][1024], size_t ndirs,
			struct looked *l, struct found *f)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section(e, ".gnu_debuglink", &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	char dir[4096], path[8192];
	const char *name, *slash;
	struct want w = { 0 };
	size_t nlen;

	if (!d || d->d_size < 6) {
		look(l, "no debuglink (the object has no .gnu_debuglink)");
		return 0;
	}
	name = d->d_buf;
	nlen = strnlen(name, d->d_size);
	if (!nlen || nlen >= d->d_size || strchr(name, '/'))
		return 0;
	w.crc = true;
	memcpy(&w.crcval, (const char *)d->d_buf + ((nlen + 4) & ~(size_t)3), 4);
	if (((nlen + 4) & ~(size_t)3) + 4 > d->d_size)
		return 0;
	slash = strrchr(objpath, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - objpath) : 1,
		 slash ? objpath : ".");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (strcmp(path, objpath) && candidate(path, &w, DP_DWARF_DEBUGLINK, l, f))
		return 1;
	snprintf(path, sizeof(path), "%s/.debug/%s", dir, name);
	if (candidate(path, &w, DP_DWARF_DEBUGLINK, l, f))
		return 1;
	for (size_t i = 0; i < ndirs; i++) {
		snprintf(path, sizeof(path), "%s%s/%s", dirs[i], dir, name);
		if (candidate(path, &w, DP_DWARF_DEBUGLINK, l, f))
			return 1;
	}
	return 0;
}

/* elfutils' debuginfod client, loaded when DEBUGINFOD_URLS asks for it. */
typedef void *(*dfd_begin_fn)(void);
typedef int (*dfd_find_fn)(void *, const unsigned char *, int, char **);
typedef void (*dfd_end_fn)(void *);

static int by_debuginfod(const uint8_t *id, size_t len, struct looked *l, struct found *f)
{
	const char *urls = getauxval(AT_SECURE) ? NULL : getenv("DEBUGINFOD_URLS");
	struct want w = { id, len, false, 0 };
	void *lib, *client;
	dfd_begin_fn begin;
	dfd_find_fn find;
	dfd_end_fn end;
	char *path = NULL;
	int fd, ret = 0;

	if (!urls || !*urls) {
		look(l, "debuginfod (DEBUGINFOD_URLS is not set)");
		return 0;
	}
	if (!id) {
		look(l, "debuginfod (the object has no build-id)");
		return 0;
	}
	lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	begin = lib ? (dfd_begin_fn)dlsym(lib, "debuginfod_begin") : NULL;
	find = lib ? (dfd_find_fn)dlsym(lib, "debuginfod_find_debuginfo") : NULL;
	end = lib ? (dfd_end_fn)dlsym(lib, "debuginfod_end") : NULL;
	if (!begin || !find || !end) {
		look(l, "debuginfod (libdebuginfod.so.1 cannot be loaded: install libdebuginfod1)");
		goto out;
	}
	client = begin();
	if (!client) {
		look(l, "debuginfod (its client cannot start)");
		goto out;
	}
	fd = find(client, id, (int)len, &path);
	end(client);
	if (fd < 0) {
		look(l, "debuginfod at %s (%s)", urls, strerror(-fd));
		goto out;
	}
	close(fd);
	ret = candidate(path, &w, DP_DWARF_DEBUGINFOD, l, f);
out:
	free(path);
	/* The library stays loaded: its client may have started threads. */
	return ret;
}

/* ---- the alternate file of dwz -------------------------------------- */

static void set_alt(struct dp_dwarf *dw, char dirs[MAX_DIRS][1024], size_t ndirs)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section(dw->elf, ".gnu_debugaltlink", &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	struct looked l = { .len = 0 };
	struct found f;
	size_t nlen;

	if (!d || !d->d_size)
		return;
	nlen = strnlen(d->d_buf, d->d_size);
	if (nlen + 1 >= d->d_size)
		return;
	if (!by_build_id(dirs, ndirs, (const uint8_t *)d->d_buf + nlen + 1,
			 d->d_size - nlen - 1, &l, &f))
		return;
	dw->alt_dbg = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL);
	if (!dw->alt_dbg) {
		elf_end(f.elf);
		close(f.fd);
		return;
	}
	dw->alt_fd = f.fd;
	dw->alt_elf = f.elf;
	dwarf_setalt(dw->dbg, dw->alt_dbg);
}

/* ---- the cache --------------------------------------------------------- */

static void entry_free(struct dp_dwarf *dw)
{
	dp_dwarf_lines_free(dw);
	dp_dwarf_inlines_free(dw);
	dp_dwarf_index_free(dw);
	if (dw->dbg)
		dwarf_end(dw->dbg);
	if (dw->alt_dbg)
		dwarf_end(dw->alt_dbg);
	if (dw->elf)
		elf_end(dw->elf);
	if (dw->alt_elf)
		elf_end(dw->alt_elf);
	if (dw->fd >= 0)
		close(dw->fd);
	if (dw->alt_fd >= 0)
		close(dw->alt_fd);
	free(dw);
}

struct dp_dwarf *dp_dwarf_of_handle(Dwarf *dbg)
{
	for (struct dp_dwarf *dw = cache; dw && dbg; dw = dw->next)
		if (dw->dbg == dbg)
			return dw;
	return NULL;
}

void dp_dwarf_cache_clear(void)
{
	while (cache) {
		struct dp_dwarf *next = cache->next;

		entry_free(cache);
		cache = next;
	}
}

static void make_key(struct dp_elf *elf, char *key, size_t size)
{
	const uint8_t *id;
	size_t len;
	struct stat st;

	if (!dp_elf_build_id(elf, &id, &len) && len) {
		char h[130];

		hex(id, len, h, sizeof(h));
		snprintf(key, size, "b:%s", h);
	} else if (!dp_elf_stat(elf, &st)) {
		snprintf(key, size, "f:%ju:%ju:%jd.%09ld", (uintmax_t)st.st_dev,
			 (uintmax_t)st.st_ino, (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	} else {
		snprintf(key, size, "p:%s", dp_elf_path(elf));
	}
}

bool dp_dwarf_same(struct dp_elf *a, struct dp_elf *b)
{
	char ka[sizeof(cache->key)], kb[sizeof(cache->key)];

	make_key(a, ka, sizeof(ka));
	make_key(b, kb, sizeof(kb));
	return !strcmp(ka, kb);
}

void dp_dwarf_forget(struct dp_elf *elf)
{
	char key[sizeof(cache->key)];

	make_key(elf, key, sizeof(key));
	for (struct dp_dwarf **dw = &cache; *dw; dw = &(*dw)->next)
		if (!strcmp((*dw)->key, key)) {
			struct dp_dwarf *gone = *dw;

			*dw = gone->next;
			entry_free(gone);
			return;
		}
}

static int find(struct dp_elf *elf, struct found *f, struct dp_err *err)
{
	const char *path = dp_elf_path(elf);
	char dirs[MAX_DIRS][1024], h[130] = "";
	size_t ndirs = debug_dirs(dirs), idlen = 0;
	const uint8_t *id = NULL;
	struct looked l = { .len = 0 };
	struct want none = { 0 };

	if (candidate(path, &none, DP_DWARF_OWN, &l, f))
		return 0;
	l.len = 0;
	look(&l, "its own sections");
	if (!dp_elf_build_id(elf, &id, &idlen) && idlen) {
		hex(id, idlen, h, sizeof(h));
		if (by_build_id(dirs, ndirs, id, idlen, &l, f))
			return 0;
	} else {
		id = NULL;
		look(&l, "no build-id tree (the object has no build-id)");
	}
	if (dp_elf_handle(elf) && by_debuglink(path, dp_elf_handle(elf), dirs, ndirs, &l, f))
		return 0;
	if (by_debuginfod(id, idlen, &l, f))
		return 0;
	return dp_err_set(err, -ENOENT, "no DWARF for %s%s%s%s: looked in %s; install its debug "
			  "symbols: Debian's -dbgsym (or -dbg) package of the package that ships "
			  "it (dpkg -S %s), or set DEBUGINFOD_URLS", path, *h ? " (build-id " : "",
			  h, *h ? ")" : "", l.text, path);
}

int dp_dwarf_get(struct dp_elf *elf, struct dp_dwarf **out, struct dp_err *err)
{
	char key[sizeof(cache->key)], dirs[MAX_DIRS][1024];
	struct dp_dwarf *dw;
	struct found f;
	int ret;

	elf_version(EV_CURRENT);
	make_key(elf, key, sizeof(key));
	for (dw = cache; dw; dw = dw->next)
		if (!strcmp(dw->key, key)) {
			*out = dw;
			return 0;
		}
	ret = find(elf, &f, err);
	if (ret)
		return ret;
	dw = calloc(1, sizeof(*dw));
	if (!dw) {
		elf_end(f.elf);
		close(f.fd);
		return dp_err_set(err, -ENOMEM, "out of memory");
	}
	dw->fd = f.fd;
	dw->alt_fd = -1;
	dw->elf = f.elf;
	dw->origin = f.origin;
	snprintf(dw->key, sizeof(dw->key), "%s", key);
	snprintf(dw->path, sizeof(dw->path), "%s", f.path);
	dw->dbg = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL);
	if (!dw->dbg) {
		ret = dp_err_set(err, -ELIBBAD, "the DWARF of %s in %s cannot be read: %s",
				 dp_elf_path(elf), f.path, dwarf_errmsg(-1));
		entry_free(dw);
		return ret;
	}
	set_alt(dw, dirs, debug_dirs(dirs));
	dw->next = cache;
	cache = dw;
	*out = dw;
	return 0;
}
