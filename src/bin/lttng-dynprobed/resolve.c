/*
 * From what the user typed to addresses: objects (opened and analysed once,
 * cached by file identity), locations (ADDR | SYMBOL | SYMBOL+OFFSET) into
 * probe points, context specs with symbols into contexts for one process,
 * where an object is loaded in a process, and the SITES listing.
 *
 * Every refusal is one line that says what was wrong and what would be
 * right: close names for a symbol not found, the neighbouring boundaries
 * for an offset inside an instruction.
 */
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "proc/maps.h"
#include "x86/insn.h"

#define MAX_LOADS 16

/* Loadable segments, page-aligned, to turn a mapping's offset into a bias. */
struct seg {
	uint64_t vaddr, offset;
};

struct obj_priv {
	struct dpd_object pub;
	size_t nsegs;
	struct seg segs[MAX_LOADS];
};

static struct dpd_object *objects;

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static void read_segments(struct obj_priv *o)
{
	Elf *e = dp_elf_handle(dp_object_elf(o->pub.obj));
	size_t n = 0;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t mask = ~(uint64_t)(page - 1);

	o->pub.first_vaddr = UINT64_MAX;
	if (!e || elf_getphdrnum(e, &n))
		return;
	for (size_t i = 0; i < n && o->nsegs < MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		o->segs[o->nsegs].vaddr = ph.p_vaddr & mask;
		o->segs[o->nsegs].offset = ph.p_offset & mask;
		if (o->segs[o->nsegs].vaddr < o->pub.first_vaddr)
			o->pub.first_vaddr = o->segs[o->nsegs].vaddr;
		o->nsegs++;
	}
}

struct dpd_object *dpd_object_get(const char *path, struct dpd_msg *msg)
{
	struct obj_priv *o;
	struct dpd_object *it;
	struct stat st;

	if (path[0] != '/') {
		dpd_msg_set(msg, "the path '%s' is not absolute: give the object's full path",
			    path);
		return NULL;
	}
	if (stat(path, &st) < 0) {
		dpd_msg_set(msg, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		dpd_msg_set(msg, "%s is not a regular file: give an executable or a shared "
				 "library", path);
		return NULL;
	}
	for (it = objects; it; it = it->next)
		if (it->dev == st.st_dev && it->ino == st.st_ino &&
		    it->mtime_ns == mtime_ns(&st) && !strcmp(it->path, path))
			return it;

	o = calloc(1, sizeof(*o));
	if (!o) {
		dpd_msg_set(msg, "out of memory");
		return NULL;
	}
	o->pub.obj = dp_object_open(path);
	if (!o->pub.obj) {
		int err = errno;

		dpd_msg_set(msg, "cannot read %s: %s", path, dp_elf_strerror(err));
		free(o);
		return NULL;
	}
	snprintf(o->pub.path, sizeof(o->pub.path), "%s", path);
	o->pub.dev = st.st_dev;
	o->pub.ino = st.st_ino;
	o->pub.mtime_ns = mtime_ns(&st);
	o->pub.pie = dp_elf_type(dp_object_elf(o->pub.obj)) == DP_ELF_DYN;
	read_segments(o);
	/* An older version of the file stays cached: events resolved against
	 * it keep pointing into it, and processes may still map it. */
	o->pub.next = objects;
	objects = &o->pub;
	return &o->pub;
}

int dpd_parse_number(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int base = 10;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16;
	else if (s[0] == '0' && s[1])
		base = 8;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || end == s)
		return -EINVAL;
	*out = v;
	return 0;
}

/* ---- symbols ---------------------------------------------------------- */

/* Edit distance, capped: beyond `cap` the exact value does not matter. */
static unsigned edit_distance(const char *a, const char *b, unsigned cap)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[128], best;

	if (lb >= 127 || la >= 127)
		return cap + 1;
	if ((la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = (unsigned)i;
		best = row[0];
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned v = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			diag = up;
			row[j] = v;
			if (v < best)
				best = v;
		}
		if (best > cap)
			return cap + 1;
	}
	return row[lb];
}

/* "did you mean 'a', 'b'?" for the closest function names, or a hint. */
static void suggest(struct dpd_object *o, const char *name, char *out, size_t size)
{
	const struct dp_function *fns;
	const char *best[3] = { NULL, NULL, NULL };
	unsigned bestd[3] = { UINT_MAX, UINT_MAX, UINT_MAX };
	unsigned cap = strlen(name) / 3 + 2;
	size_t n = 0;
	int len = 0;

	out[0] = '\0';
	if (dp_object_functions(o->obj, &fns, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned d;

		if (!fns[i].name || !(fns[i].flags & DP_FN_NAMED))
			continue;
		d = edit_distance(name, fns[i].name, cap);
		/* A name that contains the one typed is close whatever its
		 * length ("deflate" for "defl"). */
		if (d > cap && strstr(fns[i].name, name) && strlen(name) >= 3)
			d = cap;
		if (d > cap)
			continue;
		for (int k = 0; k < 3; k++) {
			if (d < bestd[k] || (d == bestd[k] && best[k] &&
					     strcmp(fns[i].name, best[k]) < 0)) {
				bool dup = false;

				for (int j = 0; j < 3; j++)
					dup |= best[j] && !strcmp(best[j], fns[i].name);
				if (dup)
					break;
				for (int j = 2; j > k; j--) {
					best[j] = best[j - 1];
					bestd[j] = bestd[j - 1];
				}
				best[k] = fns[i].name;
				bestd[k] = d;
				break;
			}
		}
	}
	if (!best[0]) {
		snprintf(out, size, ": no function has a close name (`nm` lists the object's "
				    "symbols, `lttng list -u --path PATH --sites FUNCTION` a "
				    "function's sites)");
		return;
	}
	len = snprintf(out, size, "; did you mean ");
	for (int k = 0; k < 3 && best[k] && len >= 0 && (size_t)len < size; k++)
		len += snprintf(out + len, size - (size_t)len, "%s'%s'", k ? ", " : "", best[k]);
	if (len >= 0 && (size_t)len < size)
		snprintf(out + len, size - (size_t)len, "?");
}

/*
 * Any symbol of the object by name (functions and data, .symtab then
 * .dynsym), for contexts and for telling "not a function" from "unknown".
 * 0 with its value and whether it lies in an executable section, or -ENOENT.
 */
static int find_any_symbol(struct dpd_object *o, const char *name, uint64_t *value, bool *exec)
{
	Elf *e = dp_elf_handle(dp_object_elf(o->obj));
	Elf_Scn *scn = NULL;
	int found = -ENOENT;

	if (!e)
		return -ENOENT;
	for (int pass = 0; pass < 2 && found; pass++) {
		uint32_t want = pass ? SHT_DYNSYM : SHT_SYMTAB;

		scn = NULL;
		while ((scn = elf_nextscn(e, scn)) && found) {
			GElf_Shdr sh;
			Elf_Data *d;
			size_t n;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != want || !sh.sh_entsize)
				continue;
			d = elf_getdata(scn, NULL);
			if (!d)
				continue;
			n = sh.sh_size / sh.sh_entsize;
			for (size_t i = 1; i < n; i++) {
				GElf_Sym sym;
				const char *s;

				if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
					continue;
				s = elf_strptr(e, sh.sh_link, sym.st_name);
				if (!s || strcmp(s, name))
					continue;
				*value = sym.st_value;
				*exec = dp_elf_code(dp_object_elf(o->obj), sym.st_value, 1) != NULL;
				found = 0;
				break;
			}
		}
	}
	return found;
}

/* ---- locations -------------------------------------------------------- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* "FN+0x1a" for an address inside a function. */
static void fn_offset(const struct dp_function *fn, uint64_t addr, char *out, size_t size)
{
	if (fn && fn->name)
		snprintf(out, size, "%s+0x%" PRIx64, fn->name, addr - fn->start);
	else
		snprintf(out, size, "0x%" PRIx64, addr);
}

/* Refuses an address that is not an instruction boundary of fn, naming the
 * neighbours.  0 or -EINVAL. */
static int check_boundary(struct dpd_object *o, const struct dp_function *fn, uint64_t addr,
			  struct dpd_msg *msg)
{
	uint64_t prev = 0, next = 0;
	char where[160], p[160], n[160];

	if (dp_function_insn_index(fn, addr) >= 0)
		return 0;
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		uint64_t a = fn->start + fn->insn_off[i];

		if (a < addr)
			prev = a;
		else if (!next)
			next = a;
	}
	fn_offset(fn, addr, where, sizeof(where));
	fn_offset(fn, prev, p, sizeof(p));
	fn_offset(fn, next, n, sizeof(n));
	if (prev && next)
		dpd_msg_set(msg, "%s (0x%" PRIx64 ") is not an instruction boundary in %s: the "
				 "nearest are %s (0x%" PRIx64 ") and %s (0x%" PRIx64 ")",
			    where, addr, o->path, p, prev, n, next);
	else
		dpd_msg_set(msg, "%s (0x%" PRIx64 ") is not an instruction boundary in %s: the "
				 "nearest is %s (0x%" PRIx64 ")",
			    where, addr, o->path, prev ? p : n, prev ? prev : next);
	return -EINVAL;
}

/* The function an address lies in, or NULL with why not. */
static const struct dp_function *fn_at(struct dpd_object *o, uint64_t addr, struct dpd_msg *msg)
{
	const struct dp_function *fn = dp_object_function_at(o->obj, addr);

	if (fn)
		return fn;
	if (!dp_elf_code(dp_object_elf(o->obj), addr, 1))
		dpd_msg_set(msg, "address 0x%" PRIx64 " is not executable in %s (not in a code "
				 "section): give a code address, as `nm` prints functions (T, t)",
			    addr, o->path);
	else
		dpd_msg_set(msg, "address 0x%" PRIx64 " is in code of %s that no function "
				 "describes: give an address inside a function",
			    addr, o->path);
	return NULL;
}

/* The function a symbol names, or NULL with why not (*err: -ENOENT for an
 * unknown name, -EINVAL for a symbol that is not code). */
static const struct dp_function *fn_named(struct dpd_object *o, const char *name,
					  struct dpd_msg *msg, int *err)
{
	const struct dp_function *fn = dp_object_function_by_name(o->obj, name);
	char hint[DP_CLIENT_MSG_MAX / 2];
	uint64_t value;
	bool exec;

	*err = -ENOENT;
	if (fn)
		return fn;
	if (!find_any_symbol(o, name, &value, &exec) && !exec) {
		*err = -EINVAL;
		dpd_msg_set(msg, "symbol '%s' of %s is not executable (data at 0x%" PRIx64 "): "
				 "probes go on functions",
			    name, o->path, value);
		return NULL;
	}
	suggest(o, name, hint, sizeof(hint));
	dpd_msg_set(msg, "symbol '%s' not found in %s%s", name, o->path, hint);
	return NULL;
}

int dpd_resolve_location(struct dpd_object *o, const char *location, uint8_t kind,
			 struct dpd_point **points, uint32_t *npoints, struct dpd_msg *msg)
{
	const struct dp_function *fn;
	char sym[DP_CLIENT_LOCATION_MAX];
	uint64_t addr, off = 0;
	bool has_off = false;
	struct dpd_point *pts;
	uint32_t n = 0;
	int err;

	*points = NULL;
	*npoints = 0;
	if (is_digit(location[0])) {
		if (dpd_parse_number(location, &addr)) {
			dpd_msg_set(msg, "bad address '%s': give a number (octal 0NNN, decimal, "
					 "hex 0xNNN), SYMBOL or SYMBOL+OFFSET", location);
			return -EINVAL;
		}
		fn = fn_at(o, addr, msg);
		if (!fn)
			return -EINVAL;
	} else {
		const char *plus = strrchr(location, '+');

		snprintf(sym, sizeof(sym), "%s", location);
		if (plus && plus != location) {
			if (dpd_parse_number(plus + 1, &off)) {
				dpd_msg_set(msg, "bad offset '%s' in '%s': give a number (octal "
						 "0NNN, decimal, hex 0xNNN)", plus + 1, location);
				return -EINVAL;
			}
			sym[plus - location] = '\0';
			has_off = true;
		}
		fn = fn_named(o, sym, msg, &err);
		if (!fn)
			return err;
		if (off >= fn->size) {
			dpd_msg_set(msg, "offset 0x%" PRIx64 " is past the end of %s (%" PRIu64
					 " bytes): give an offset below 0x%" PRIx64,
				    off, sym, fn->size, fn->size);
			return -EINVAL;
		}
		addr = fn->start + off;
	}
	if (kind == DP_CLIENT_KIND_FUNCTION) {
		if (addr != fn->start) {
			char where[160];

			fn_offset(fn, addr, where, sizeof(where));
			dpd_msg_set(msg, "%s is not the start of a function: --function takes a "
					 "function (%s), --probe takes a point inside one",
				    has_off || !is_digit(location[0]) ? location : where,
				    fn->name ? fn->name : "its start address");
			return -EINVAL;
		}
		pts = calloc(1 + fn->nrets, sizeof(*pts));
		if (!pts)
			return -ENOMEM;
		pts[n++] = (struct dpd_point){ fn->start, DPD_ROLE_ENTRY };
		for (uint32_t i = 0; i < fn->nrets; i++)
			pts[n++] = (struct dpd_point){ fn->rets[i].addr, DPD_ROLE_RETURN };
	} else {
		if (check_boundary(o, fn, addr, msg))
			return -EINVAL;
		pts = calloc(1, sizeof(*pts));
		if (!pts)
			return -ENOMEM;
		pts[n++] = (struct dpd_point){ addr, DPD_ROLE_PROBE };
	}
	*points = pts;
	*npoints = n;
	return 0;
}

/* ---- contexts --------------------------------------------------------- */

static bool is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.';
}

static bool is_ident(char c)
{
	return is_ident_start(c) || is_digit(c) || c == '$' || c == '@';
}

/* The 64-bit register names an ADDR may use (context.h). */
static bool is_reg(const char *s, size_t n)
{
	static const char *const regs[] = {
		"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10",
		"r11", "r12", "r13", "r14", "r15", "rip", "pc",
	};

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (strlen(regs[i]) == n && !strncmp(regs[i], s, n))
			return true;
	return false;
}

/* Whether a spec's first field names a type whose third field is an ADDR. */
static bool has_addr(const char *spec)
{
	size_t n = strcspn(spec, ":");

	if (!spec[n])
		return false;
	return strncmp(spec, "reg", n) != 0 && strncmp(spec, "regs", n) != 0 &&
	       strncmp(spec, "backtrace", n) != 0 && strncmp(spec, "retval", n) != 0;
}

int dpd_resolve_ctx(struct dpd_object *o, const char *spec, uint64_t bias, struct dp_ctx *out,
		    struct dpd_msg *msg)
{
	char buf[DP_CLIENT_CTX_MAX * 2];
	const char *err = NULL, *p, *addr;
	size_t len = 0;

	memset(out, 0, sizeof(*out));
	/* Copy the spec, replacing each symbol of ADDR (the third field) by
	 * its run-time address. */
	addr = NULL;
	if (has_addr(spec)) {
		const char *c1 = strchr(spec, ':');

		addr = c1 ? strchr(c1 + 1, ':') : NULL;
		if (addr)
			addr++;
	}
	for (p = spec; *p && len < sizeof(buf) - 24;) {
		if (addr && p >= addr && is_ident_start(*p) &&
		    (p == addr || !is_ident(p[-1])) && !(p[-1] == '0' && (*p == 'x' || *p == 'X'))) {
			const char *q = p;
			char name[DP_CLIENT_CTX_MAX];
			uint64_t value;
			bool exec;

			while (is_ident(*q))
				q++;
			/* The optional MAX of a string: past ADDR, not a symbol. */
			if (!is_reg(p, (size_t)(q - p))) {
				snprintf(name, sizeof(name), "%.*s", (int)(q - p), p);
				if (find_any_symbol(o, name, &value, &exec)) {
					dpd_msg_set(msg, "context '%s': symbol '%s' not found in %s: "
							 "give a symbol of that object, a number or "
							 "a register", spec, name, o->path);
					return -ENOENT;
				}
				len += (size_t)snprintf(buf + len, sizeof(buf) - len, "0x%" PRIx64,
							value + bias);
				p = q;
				continue;
			}
			memcpy(buf + len, p, (size_t)(q - p));
			len += (size_t)(q - p);
			p = q;
			continue;
		}
		buf[len++] = *p++;
	}
	buf[len] = '\0';
	if (dp_ctx_parse(buf, out, &err)) {
		dpd_msg_set(msg, "context '%s': %s", spec, err ? err : "not understood");
		return -EINVAL;
	}
	return 0;
}

/* ---- processes -------------------------------------------------------- */

static bool same_file(const struct dpd_object *o, const struct dp_map *m)
{
	return m->path && m->inode == (uint64_t)o->ino && m->dev_major == major(o->dev) &&
	       m->dev_minor == minor(o->dev);
}

int dpd_object_bias(struct dpd_object *o, pid_t pid, uint64_t *bias)
{
	const struct obj_priv *op = (const struct obj_priv *)o;
	struct dp_maps maps;
	int ret = -ENOENT;

	if (dp_maps_read(pid, &maps))
		return kill(pid, 0) && errno == ESRCH ? -ESRCH : -ENOENT;
	for (size_t i = 0; i < maps.n && ret; i++) {
		const struct dp_map *m = &maps.v[i];

		if (!same_file(o, m))
			continue;
		for (size_t k = 0; k < op->nsegs; k++) {
			if (op->segs[k].offset != m->offset)
				continue;
			*bias = m->start - op->segs[k].vaddr;
			ret = 0;
			break;
		}
	}
	dp_maps_free(&maps);
	return ret;
}

bool dpd_object_mapped(struct dpd_object *o, pid_t pid)
{
	uint64_t bias;

	return dpd_object_bias(o, pid, &bias) == 0;
}

/* ---- SITES ------------------------------------------------------------ */

static void set_method(const struct dp_patch *pl, uint8_t *method, char *reason, size_t rsize,
		       char *text, size_t tsize)
{
	switch (pl->method) {
	case DP_SITE_JUMP:
		*method = DP_CLIENT_METHOD_JUMP;
		if (pl->hop.len)
			snprintf(text, tsize, "jmp rel8 to a hop at 0x%" PRIx64, pl->hop.addr);
		break;
	case DP_SITE_INT3:
		*method = DP_CLIENT_METHOD_INT3;
		break;
	default:
		*method = DP_CLIENT_METHOD_REFUSED;
		break;
	}
	if (pl->method != DP_SITE_JUMP) {
		snprintf(reason, rsize, "%s", dp_reason_name(pl->reason));
		snprintf(text, tsize, "%s", dp_reason_str(pl->reason));
	}
}

void dpd_sites(const char *path, const char *function, struct dp_client_sites_reply *rep)
{
	struct dpd_msg msg = { "" };
	const struct dp_function *fn;
	struct dpd_object *o = dpd_object_get(path, &msg);
	uint64_t addr;
	int err = -EINVAL;

	memset(rep, 0, sizeof(*rep));
	if (!o)
		goto fail;
	if (is_digit(function[0])) {
		if (dpd_parse_number(function, &addr)) {
			dpd_msg_set(&msg, "bad address '%s': give a function name or an address "
					  "inside one", function);
			goto fail;
		}
		fn = fn_at(o, addr, &msg);
	} else {
		fn = fn_named(o, function, &msg, &err);
	}
	if (!fn)
		goto fail;
	snprintf(rep->function, sizeof(rep->function), "%s", fn->name ? fn->name : function);
	rep->start = fn->start;
	rep->size = fn->size;
	rep->insns = calloc(fn->ninsns ? fn->ninsns : 1, sizeof(*rep->insns));
	if (!rep->insns) {
		dpd_msg_set(&msg, "out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		struct dp_client_insn *in = &rep->insns[rep->ninsns];
		uint64_t a = fn->start + fn->insn_off[i];
		uint64_t end = i + 1 < fn->ninsns ? fn->start + fn->insn_off[i + 1]
						  : fn->start + fn->size;
		size_t avail = end - a > DP_CLIENT_INSN_MAX ? DP_CLIENT_INSN_MAX : end - a;
		const uint8_t *bytes = dp_elf_code(dp_object_elf(o->obj), a, avail);
		struct dp_insn insn;
		struct dp_patch pl;

		if (!bytes || !avail || dp_insn_decode(bytes, avail, &insn))
			continue;
		in->offset = (uint32_t)(a - fn->start);
		in->len = insn.len;
		memcpy(in->bytes, bytes, insn.len);
		snprintf(in->mnemonic, sizeof(in->mnemonic), "%s",
			 insn.mnemonic ? insn.mnemonic : "");
		if (dp_plan_site(o->obj, a, &pl)) {
			in->method = DP_CLIENT_METHOD_REFUSED;
			snprintf(in->text, sizeof(in->text), "the analysis failed");
		} else {
			set_method(&pl, &in->method, in->reason, sizeof(in->reason), in->text,
				   sizeof(in->text));
		}
		rep->ninsns++;
	}
	return;

fail:
	rep->status = err;
	snprintf(rep->message, sizeof(rep->message), "%s", msg.text);
}

void dpd_plan_method(const struct dp_patch *pl, struct dp_client_site *s)
{
	set_method(pl, &s->method, s->reason, sizeof(s->reason), s->text, sizeof(s->text));
}
