/*
 * Source lines: every statement row of every CU's line table, read once,
 * indexed by file and line and by address.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf-internal.h"

/* ---- interned file names ---------------------------------------------- */

struct names {
	char **slot;		/* open addressing, power of two */
	size_t cap, n;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static const char *intern(struct names *t, const char *s)
{
	size_t i;

	if (t->n * 2 >= t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		char **slot = calloc(cap, sizeof(*slot));

		if (!slot)
			return NULL;
		for (size_t k = 0; k < t->cap; k++) {
			if (!t->slot[k])
				continue;
			i = hash_str(t->slot[k]) & (cap - 1);
			while (slot[i])
				i = (i + 1) & (cap - 1);
			slot[i] = t->slot[k];
		}
		free(t->slot);
		t->slot = slot;
		t->cap = cap;
	}
	i = hash_str(s) & (t->cap - 1);
	while (t->slot[i]) {
		if (!strcmp(t->slot[i], s))
			return t->slot[i];
		i = (i + 1) & (t->cap - 1);
	}
	t->slot[i] = strdup(s);
	if (!t->slot[i])
		return NULL;
	t->n++;
	return t->slot[i];
}

/* "a/./b/../c" -> "a/c", in place; "//" -> "/". */
static void tidy(char *p)
{
	char *out = p, *in = p;

	while (*in) {
		if (in[0] == '/' && (in[1] == '/' || (in[1] == '.' && (in[2] == '/' || !in[2])))) {
			in += in[1] == '/' ? 1 : 2;
			continue;
		}
		if (in[0] == '/' && in[1] == '.' && in[2] == '.' && (in[3] == '/' || !in[3]) &&
		    out > p) {
			while (out > p && *--out != '/')
				;
			in += 3;
			continue;
		}
		*out++ = *in++;
	}
	*out = '\0';
}

/* ---- reading ----------------------------------------------------------- */

struct builder {
	struct dp_dwarf_row *v;
	size_t n, cap;
};

static int push(struct builder *b, const struct dp_dwarf_row *r)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		struct dp_dwarf_row *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = *r;
	return 0;
}

static int read_cu(Dwarf_Die *cu, struct names *t, struct builder *b)
{
	Dwarf_Lines *lines;
	size_t nlines;
	Dwarf_Attribute at;
	const char *compdir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &at));
	const char *last_src = NULL, *last = NULL;
	const struct dp_dwarf_row *prev = NULL;
	char buf[8192];

	if (dwarf_getsrclines(cu, &lines, &nlines))
		return 0;	/* a CU without a line table */
	for (size_t i = 0; i < nlines; i++) {
		Dwarf_Line *ln = dwarf_onesrcline(lines, i);
		bool stmt = false, endseq = false;
		struct dp_dwarf_row r;
		Dwarf_Addr addr;
		const char *src;
		int lineno;

		if (!ln || dwarf_lineendsequence(ln, &endseq) || endseq) {
			prev = NULL;
			continue;
		}
		if (dwarf_linebeginstatement(ln, &stmt) || !stmt || dwarf_lineaddr(ln, &addr) ||
		    dwarf_lineno(ln, &lineno) || lineno <= 0 ||
		    !(src = dwarf_linesrc(ln, NULL, NULL)))
			continue;
		if (src != last_src) {
			if (src[0] != '/' && compdir)
				snprintf(buf, sizeof(buf), "%s/%s", compdir, src);
			else
				snprintf(buf, sizeof(buf), "%s", src);
			tidy(buf);
			last = intern(t, buf);
			if (!last)
				return -ENOMEM;
			last_src = src;
		}
		r.file = last;
		r.line = (uint32_t)lineno;
		r.addr = addr;
		r.block = !(prev && prev->file == r.file && prev->line == r.line);
		if (push(b, &r))
			return -ENOMEM;
		prev = &b->v[b->n - 1];
	}
	return 0;
}

static int by_file_line(const void *a, const void *b)
{
	const struct dp_dwarf_row *x = a, *y = b;

	if (x->file != y->file) {
		int c = strcmp(x->file, y->file);

		return c;
	}
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (int)y->block - (int)x->block;	/* a block's first row first */
}

static int by_addr(const void *a, const void *b)
{
	const struct dp_dwarf_row *x = *(const struct dp_dwarf_row *const *)a;
	const struct dp_dwarf_row *y = *(const struct dp_dwarf_row *const *)b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int build(struct dp_dwarf *dw)
{
	struct names t = { 0 };
	struct builder b = { 0 };
	Dwarf_Off off = 0, next;
	size_t hsize;
	int ret = 0;

	while (!ret && !dwarf_nextcu(dw->dbg, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw->dbg, off + hsize, &cu))
			ret = read_cu(&cu, &t, &b);
		off = next;
	}
	if (!ret && b.n) {
		qsort(b.v, b.n, sizeof(*b.v), by_file_line);
		dw->by_addr = malloc(b.n * sizeof(*dw->by_addr));
		if (!dw->by_addr)
			ret = -ENOMEM;
	}
	dw->files = t.n ? malloc(t.n * sizeof(*dw->files)) : NULL;
	if (t.n && !dw->files)
		ret = -ENOMEM;
	for (size_t i = 0; i < t.cap; i++)
		if (t.slot[i]) {
			if (dw->files)
				dw->files[dw->nfiles++] = t.slot[i];
		}
	dw->strings = t.slot;		/* freed with the cache */
	dw->nstrings = t.cap;
	dw->rows = b.v;
	dw->nrows = b.n;
	if (ret)
		return ret;
	qsort(dw->files, dw->nfiles, sizeof(*dw->files), by_name);
	for (size_t i = 0; i < b.n; i++)
		dw->by_addr[i] = &dw->rows[i];
	qsort(dw->by_addr, b.n, sizeof(*dw->by_addr), by_addr);
	return 0;
}

static int ensure(struct dp_dwarf *dw, struct dp_err *err)
{
	if (!dw->lines_done) {
		dw->lines_done = true;
		dw->lines_err = build(dw);
	}
	if (dw->lines_err)
		return dp_err_set(err, dw->lines_err, "reading the line tables of %s: %s",
				  dw->path, strerror(-dw->lines_err));
	return 0;
}

void dp_dwarf_lines_free(struct dp_dwarf *dw)
{
	for (size_t i = 0; i < dw->nstrings; i++)
		free(dw->strings[i]);
	free(dw->strings);
	free(dw->files);
	free(dw->rows);
	free(dw->by_addr);
}

/* ---- queries ----------------------------------------------------------- */

static bool suffix_match(const char *file, const char *name)
{
	size_t fl = strlen(file), nl = strlen(name);

	if (name[0] == '/')
		return !strcmp(file, name);
	if (nl > fl)
		return false;
	return !strcmp(file + fl - nl, name) && (nl == fl || file[fl - nl - 1] == '/');
}

int dp_dwarf_files(struct dp_dwarf *dw, const char *name, const char ***files, size_t *n,
		   struct dp_err *err)
{
	const char **v;
	size_t k = 0;
	int ret = ensure(dw, err);

	*files = NULL;
	*n = 0;
	if (ret)
		return ret;
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (!*name)
		return dp_err_set(err, -EINVAL, "an empty source file name: give a file name "
				  "(\"sched.c\", \"kernel/sched.c\" or an absolute path)");
	v = malloc((dw->nfiles ? dw->nfiles : 1) * sizeof(*v));
	if (!v)
		return dp_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < dw->nfiles; i++)
		if (suffix_match(dw->files[i], name))
			v[k++] = dw->files[i];
	if (!k) {
		const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
		const char *dot = strrchr(base, '.');
		char close[600] = "";
		size_t len = 0, shown = 0;

		/* Files of the same extension, or any, as hints. */
		for (int pass = 0; pass < 2 && !shown; pass++)
			for (size_t i = 0; i < dw->nfiles && shown < 6; i++) {
				const char *b = strrchr(dw->files[i], '/');
				const char *d;

				b = b ? b + 1 : dw->files[i];
				d = strrchr(b, '.');
				if (!pass && (!dot || !d || strcmp(d, dot)))
					continue;
				if (*b == '<' || strstr(close, b))
					continue;
				len += (size_t)snprintf(close + len, sizeof(close) - len, "%s%s",
							shown ? ", " : "", b);
				if (len >= sizeof(close))
					len = sizeof(close) - 1;
				shown++;
			}
		free(v);
		return dp_err_set(err, -ENOENT, "no source file '%s' in the DWARF of %s (%zu "
				  "files%s%s%s)", name, dw->path, dw->nfiles, shown ? ", e.g. " : "",
				  close, shown < dw->nfiles ? "..." : "");
	}
	*files = v;
	*n = k;
	return 0;
}

static const char *interned(struct dp_dwarf *dw, const char *file)
{
	size_t lo = 0, hi = dw->nfiles;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(dw->files[mid], file);

		if (!c)
			return dw->files[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int dp_dwarf_file_rows(struct dp_dwarf *dw, const char *file, uint32_t from, uint32_t to,
		       const struct dp_dwarf_row **rows, size_t *n, struct dp_err *err)
{
	const char *f;
	size_t lo = 0, hi, first;
	int ret = ensure(dw, err);

	*rows = NULL;
	*n = 0;
	if (ret)
		return ret;
	f = interned(dw, file);
	if (!f)
		return 0;
	/* rows sorted by strcmp of file: equal strings are one interned pointer */
	hi = dw->nrows;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(dw->rows[mid].file, f);

		if (c < 0 || (!c && dw->rows[mid].line < from))
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	while (lo < dw->nrows && dw->rows[lo].file == f && dw->rows[lo].line <= to)
		lo++;
	*rows = dw->rows + first;
	*n = lo - first;
	return 0;
}

int dp_dwarf_rows_at(struct dp_dwarf *dw, uint64_t addr, const struct dp_dwarf_row ***rows,
		     size_t *n)
{
	size_t lo = 0, hi, first;
	int ret = ensure(dw, NULL);

	*rows = NULL;
	*n = 0;
	if (ret)
		return ret;
	hi = dw->nrows;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (dw->by_addr[mid]->addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	while (lo < dw->nrows && dw->by_addr[lo]->addr == addr)
		lo++;
	if (lo == first)
		return 0;
	*rows = malloc((lo - first) * sizeof(**rows));
	if (!*rows)
		return -ENOMEM;
	memcpy(*rows, dw->by_addr + first, (lo - first) * sizeof(**rows));
	*n = lo - first;
	return 0;
}
