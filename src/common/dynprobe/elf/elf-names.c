/*
 * Function names as their authors wrote them: C++ and Rust symbols
 * demangled, indexed once per object (elf.h, dp_elf_names).
 *
 * The demangler is libiberty's cplus_demangle (Debian: libiberty-dev, the
 * library binutils, gdb and perf's fallback use; kept by the GCC
 * maintainers).  It was chosen over libstdc++'s __cxa_demangle because one
 * call knows the Itanium C++ ABI, and both Rust manglings (legacy, whose
 * hash it drops, and v0), and because it can leave out the return type of
 * a template function (DMGL_RET_DROP) and the parameter list: the two forms
 * users type.  It is a static archive, linked into the daemon and the CLI
 * only: traced processes never load it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "elf/elf-internal.h"
#include "elf/elf.h"

#define FULL_FLAGS (DMGL_PARAMS | DMGL_ANSI | DMGL_RET_DROP | DMGL_AUTO)
#define BASE_FLAGS (DMGL_ANSI | DMGL_RET_DROP | DMGL_AUTO)

/* Only names that some mangling claims: a C name demangles to nothing. */
static bool maybe_mangled(const char *sym)
{
	return sym && sym[0] == '_' && (sym[1] == 'Z' || sym[1] == 'R');
}

/* The matching '>' of the '<' at s[0], or 0. */
static size_t angle_close(const char *s)
{
	int depth = 0;

	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '<')
			depth++;
		else if (s[i] == '>' && --depth == 0)
			return i;
	}
	return 0;
}

/*
 * Rust's v0 mangling demangles an inherent method as "<path::T>::m" and
 * keeps a generic function's arguments ("path::f::<u64>"); the legacy
 * mangling (its hash dropped) gives "path::T::m" and "path::f".  A v0 name
 * is spelled the legacy way, so that what users type means the same in
 * either; the generic arguments stay in the full name only (like C++
 * parameters: without them, a name means every instance).  Trait
 * implementations ("<T as Trait>::m") read the same in both and stay.
 */
static void rust_tidy(char *s, bool base)
{
	size_t len = strlen(s), close = s[0] == '<' ? angle_close(s) : 0;

	if (close && !memmem(s, close, " as ", 4) && !strncmp(s + close + 1, "::", 2)) {
		memmove(s + close, s + close + 1, len - close);
		memmove(s, s + 1, len - 1);
		len -= 2;
		s[len] = '\0';
	}
	if (base && len > 3 && s[len - 1] == '>') {
		int depth = 0;

		for (size_t i = len; i-- > 2;) {
			if (s[i] == '>') {
				depth++;
			} else if (s[i] == '<' && --depth == 0) {
				if (s[i - 1] == ':' && s[i - 2] == ':')
					s[i - 2] = '\0';
				break;
			}
		}
	}
}

static bool is_rust_v0(const char *sym)
{
	return sym[0] == '_' && sym[1] == 'R';
}

static int demangle(const char *sym, int flags, bool base, char *buf, size_t size)
{
	char *d;
	size_t len;

	if (!maybe_mangled(sym))
		return -EINVAL;
	d = cplus_demangle(sym, flags);
	if (!d)
		return -EINVAL;
	if (is_rust_v0(sym))
		rust_tidy(d, base);
	len = strlen(d);
	if (len >= size) {
		free(d);
		return -ENAMETOOLONG;
	}
	memcpy(buf, d, len + 1);
	free(d);
	return 0;
}

int dp_elf_demangle(const char *sym, char *buf, size_t size)
{
	return demangle(sym, FULL_FLAGS, false, buf, size);
}

int dp_elf_demangle_base(const char *sym, char *buf, size_t size)
{
	return demangle(sym, BASE_FLAGS, true, buf, size);
}

void elf_names_release(struct elf_names *names)
{
	for (size_t i = 0; i < names->n; i++) {
		free((char *)names->v[i].full);
		free((char *)names->v[i].base);
	}
	free(names->v);
	memset(names, 0, sizeof(*names));
}

static int name_cmp(const void *a, const void *b)
{
	const struct dp_elf_name *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return strcmp(x->symbol, y->symbol);
}

/* A compiler's copy or part of a function: foo.cold, foo.part.0, foo.isra.0. */
static bool is_clone(const char *sym)
{
	return strchr(sym, '.') != NULL;
}

static int names_build(struct dp_elf *elf, struct elf_names *names)
{
	struct dp_func *syms;
	size_t n, k = 0;
	int err = elf_symbols_all(elf, &syms, &n);

	if (err)
		return err;
	names->v = calloc(n ? n : 1, sizeof(*names->v));
	if (!names->v) {
		free(syms);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct dp_elf_name *e = &names->v[k];

		if (!maybe_mangled(syms[i].name))
			continue;
		e->full = cplus_demangle(syms[i].name, FULL_FLAGS);
		if (!e->full)
			continue;
		e->base = cplus_demangle(syms[i].name, BASE_FLAGS);
		if (!e->base) {
			free((char *)e->full);
			e->full = NULL;
			continue;
		}
		if (is_rust_v0(syms[i].name)) {
			rust_tidy((char *)e->full, false);
			rust_tidy((char *)e->base, true);
		}
		e->symbol = syms[i].name;
		e->start = syms[i].start;
		e->size = syms[i].size;
		e->clone = is_clone(e->symbol);
		k++;
	}
	free(syms);
	names->n = k;
	if (!k)
		return 0;
	qsort(names->v, k, sizeof(*names->v), name_cmp);
	/* .symtab and .dynsym both list a global symbol: keep one. */
	n = k;
	k = 1;
	for (size_t i = 1; i < n; i++) {
		if (names->v[i].start == names->v[k - 1].start &&
		    !strcmp(names->v[i].symbol, names->v[k - 1].symbol)) {
			free((char *)names->v[i].full);
			free((char *)names->v[i].base);
			continue;
		}
		names->v[k++] = names->v[i];
	}
	names->n = k;
	return 0;
}

int dp_elf_names(struct dp_elf *elf, const struct dp_elf_name **out, size_t *n)
{
	struct elf_names *names = elf_names_of(elf);

	if (!names->ready) {
		int err = names_build(elf, names);

		if (err) {
			elf_names_release(names);
			return err;
		}
		names->ready = true;
	}
	*out = names->v;
	*n = names->n;
	return 0;
}
