/*
 * From what the user typed to addresses: objects (opened and analysed once,
 * cached by file identity), locations (ADDR | SYMBOL | SYMBOL+OFFSET) into
 * probe points, context specs with symbols into contexts for one process,
 * where an object is loaded in a process, and the SITES listing.
 *
 * Locations and symbols are parsed and resolved by spec/ (spec.h), as the
 * CLI does, so that both refuse the same input with the same message.
 */
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <malloc.h>
#include <elfutils/libdw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon.h"
#include "dwarf/dwarf.h"
#include "dwarf/dwarf-var.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "proc/maps.h"
#include "proc/proc-status.h"
#include "spec/spec.h"
#include "spec/var.h"
#include "x86/insn.h"

#define MAX_LOADS 16

/* Loadable segments, page-aligned, to turn a mapping's offset into a bias. */
struct seg {
	uint64_t vaddr, offset;
};

struct obj_priv {
	struct dpd_object pub;
	bool no_dwarf;			/* a lookup found none: typed returns stop asking */
	size_t nsegs;
	struct seg segs[MAX_LOADS];
	unsigned refs;			/* dpd_object_get's, not yet put */
	uint64_t idle_epoch;		/* when refs last fell to 0 */
};

/* Every object opened, used or idle (refs 0); all with the state lock
 * (nidle is read without it too: dpd_objects_trim_wanted). */
static struct dpd_object *objects;
static size_t nidle;
/* Counts the times an object fell idle: jobs note it when they start
 * (dpd_objects_epoch), read without the state lock. */
static uint64_t idle_clock;

static struct obj_priv *priv(struct dpd_object *o)
{
	return (struct obj_priv *)o;
}

static struct dpd_object *obj_ref(struct dpd_object *o)
{
	if (priv(o)->refs++ == 0 && priv(o)->idle_epoch)
		__atomic_sub_fetch(&nidle, 1, __ATOMIC_RELAXED);
	return o;
}

void dpd_object_put(struct dpd_object *o)
{
	if (!o || !priv(o)->refs)
		return;
	if (--priv(o)->refs == 0) {
		priv(o)->idle_epoch = __atomic_add_fetch(&idle_clock, 1, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&nidle, 1, __ATOMIC_RELAXED);
	}
}

uint64_t dpd_objects_epoch(void)
{
	return __atomic_load_n(&idle_clock, __ATOMIC_SEQ_CST);
}

bool dpd_objects_trim_wanted(void)
{
	return __atomic_load_n(&nidle, __ATOMIC_RELAXED) > DPD_OBJECTS_IDLE_MAX;
}

/* Closes o (idle, unlinked), and its DWARF unless another object shares it. */
static void obj_close(struct dpd_object *o)
{
	bool shared = false;

	for (struct dpd_object *it = objects; it && !shared; it = it->next)
		shared = dp_dwarf_same(dp_object_elf(it->obj), dp_object_elf(o->obj));
	if (!shared)
		dp_dwarf_forget(dp_object_elf(o->obj));
	dp_object_close(o->obj);
	free(priv(o));
}

size_t dpd_objects_trim(uint64_t oldest_job)
{
	size_t closed = 0;

	while (__atomic_load_n(&nidle, __ATOMIC_RELAXED) > DPD_OBJECTS_IDLE_MAX) {
		struct dpd_object **lru = NULL;

		for (struct dpd_object **it = &objects; *it; it = &(*it)->next)
			if (!priv(*it)->refs &&
			    (!lru || priv(*it)->idle_epoch < priv(*lru)->idle_epoch))
				lru = it;
		/* Fell idle after a running job began: that job may still
		 * use it (a pointer read from an event it saw then). */
		if (!lru || priv(*lru)->idle_epoch > oldest_job)
			break;
		{
			struct dpd_object *o = *lru;

			*lru = o->next;
			__atomic_sub_fetch(&nidle, 1, __ATOMIC_RELAXED);
			dpd_dbg("object %s closed: no event uses it (the %zu idle ones used last stay open)",
				o->path, (size_t)DPD_OBJECTS_IDLE_MAX);
			obj_close(o);
			closed++;
		}
	}
	/* An object's analysis is many small blocks: give the pages back to
	 * the system, not only to malloc. */
	if (closed)
		malloc_trim(0);
	return closed;
}

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

struct dpd_object *dpd_object_get(const char *path, struct dp_err *msg)
{
	struct obj_priv *o;
	struct dpd_object *it;
	struct stat st;

	if (path[0] != '/') {
		dp_err_set(msg, -EINVAL, "the path '%s' is not absolute: give the object's full "
			   "path", path);
		return NULL;
	}
	if (stat(path, &st) < 0) {
		dp_err_set(msg, -errno, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		dp_err_set(msg, -EINVAL, "%s is not a regular file: give an executable or a shared "
					 "library", path);
		return NULL;
	}
	for (it = objects; it; it = it->next)
		if (it->dev == st.st_dev && it->ino == st.st_ino &&
		    it->mtime_ns == mtime_ns(&st) && !strcmp(it->path, path))
			return obj_ref(it);

	o = calloc(1, sizeof(*o));
	if (!o) {
		dp_err_set(msg, -ENOMEM, "out of memory");
		return NULL;
	}
	o->pub.obj = dp_object_open(path);
	if (!o->pub.obj) {
		int err = errno;

		dp_err_set(msg, -err, "cannot read %s: %s", path, dp_elf_strerror(err));
		free(o);
		return NULL;
	}
	snprintf(o->pub.path, sizeof(o->pub.path), "%s", path);
	o->pub.dev = st.st_dev;
	o->pub.ino = st.st_ino;
	o->pub.mtime_ns = mtime_ns(&st);
	o->pub.pie = dp_elf_type(dp_object_elf(o->pub.obj)) == DP_ELF_DYN;
	read_segments(o);
	o->refs = 1;
	/* An older version of the file stays cached while events resolved
	 * against it use it (processes may still map it). */
	o->pub.next = objects;
	objects = &o->pub;
	return &o->pub;
}

/* ---- locations -------------------------------------------------------- */

/* The points of a --function location: each body's entry and returns,
 * each copy's entry and returns.  0 or -errno with msg. */
static int function_points(struct dpd_object *o, const char *location,
			   const struct dp_location *loc, uint8_t kind, struct dpd_point **points,
			   uint32_t *npoints, char *note, size_t note_size, struct dp_err *msg)
{
	enum dp_spec_copies_sel sel = kind == DP_CLIENT_KIND_FUNCTION_OUTLINE ?
		DP_SPEC_COPIES_OUTLINE : kind == DP_CLIENT_KIND_FUNCTION_INLINED ?
		DP_SPEC_COPIES_INLINED : DP_SPEC_COPIES_ALL;
	struct dp_spec_fn_sites fs;
	struct dpd_point *pts;
	struct dp_err err;
	size_t total = 0;
	uint32_t n = 0;
	int ret = dp_spec_function_sites(o->obj, o->path, loc, sel, &fs, &err);

	if (ret)
		return dp_err_set(msg, ret, "%s", err.msg);
	for (size_t f = 0; f < fs.nfns; f++)
		total += 1 + fs.fns[f]->nrets;	/* at most */
	for (size_t c = 0; c < fs.copies.n; c++)
		total += fs.copies.v[c].entry ? 1 + fs.copies.v[c].nrets : 0;
	if (total > DP_APP_MAX_PATCHES) {
		ret = dp_err_set(msg, -E2BIG, "'%s' matches %zu functions and %zu inlined copies "
				 "of %s, %zu entries and returns: more than the %u one process can "
				 "hold; narrow the pattern, or choose the copies (--copies)",
				 location, fs.nfns, fs.nplaced, o->path, total, DP_APP_MAX_PATCHES);
		goto out;
	}
	pts = calloc(total ? total : 1, sizeof(*pts));
	if (!pts) {
		ret = dp_err_set(msg, -ENOMEM, "out of memory");
		goto out;
	}
	/* Each function of a pattern (or of a C++ name's overloads), and
	 * each inlined copy, stands alone: one whose entry cannot be placed
	 * is left out, not the whole event. */
	for (size_t f = 0; f < fs.nfns; f++) {
		const struct dp_function *fn = fs.fns[f];

		pts[n++] = (struct dpd_point){ fn->start, DPD_ROLE_ENTRY,
					       loc->pattern || fs.nfns > 1 };
		for (uint32_t i = 0; i < fn->nrets; i++)
			if (dp_spec_return_leaves(o->obj, fn, &fn->rets[i]))
				pts[n++] = (struct dpd_point){ fn->rets[i].addr, DPD_ROLE_RETURN,
							       true };
	}
	for (size_t c = 0; c < fs.copies.n; c++) {
		const struct dp_spec_copy *cp = &fs.copies.v[c];

		if (!cp->entry)
			continue;
		pts[n++] = (struct dpd_point){ cp->entry, DPD_ROLE_ENTRY, true };
		for (uint32_t i = 0; i < cp->nrets; i++)
			pts[n++] = (struct dpd_point){ cp->rets[i], DPD_ROLE_RETURN, true };
	}
	*points = pts;
	*npoints = n;
	if (note)
		snprintf(note, note_size, "%s", fs.note);
out:
	dp_spec_fn_sites_release(&fs);
	return ret;
}

/* The points of a FILE:LINE: one per address block, none optional. */
static int line_points(struct dpd_object *o, const struct dp_location *loc,
		       struct dpd_point **points, uint32_t *npoints, char *note, size_t note_size,
		       struct dp_err *msg)
{
	struct dp_err err;
	uint64_t *addrs;
	size_t n;
	int ret = dp_spec_line_resolve(o->obj, o->path, loc, &addrs, &n, note, note_size, &err);

	if (ret)
		return dp_err_set(msg, ret, "%s", err.msg);
	if (n > DP_APP_MAX_PATCHES) {
		free(addrs);
		return dp_err_set(msg, -E2BIG, "line %" PRIu32 " of %s has %zu address blocks in "
				  "%s: more than the %u one process can hold", loc->line,
				  loc->symbol, n, o->path, DP_APP_MAX_PATCHES);
	}
	*points = calloc(n, sizeof(**points));
	if (!*points) {
		free(addrs);
		return dp_err_set(msg, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		(*points)[i] = (struct dpd_point){ addrs[i], DPD_ROLE_PROBE, false };
	*npoints = (uint32_t)n;
	free(addrs);
	return 0;
}

int dpd_resolve_location(struct dpd_object *o, const char *location, uint8_t kind,
			 struct dpd_point **points, uint32_t *npoints, char *note,
			 size_t note_size, struct dp_err *msg)
{
	const struct dp_function *fn;
	struct dp_location loc;
	struct dp_err err;
	uint64_t addr;
	int ret;

	*points = NULL;
	*npoints = 0;
	if (note && note_size)
		note[0] = '\0';
	if (kind != DP_CLIENT_KIND_PROBE && !dp_client_kind_function(kind))
		return dp_err_set(msg, -EINVAL, "unknown kind of probe %u", kind);
	ret = dp_spec_location_parse(location, &loc, &err);
	if (ret)
		return dp_err_set(msg, ret, "%s", err.msg);
	if (dp_client_kind_function(kind))
		return function_points(o, location, &loc, kind, points, npoints, note, note_size,
				       msg);
	if (loc.kind == DP_LOC_LINE)
		return line_points(o, &loc, points, npoints, note, note_size, msg);
	ret = dp_spec_location_resolve(o->obj, o->path, &loc, &addr, &fn, &err);
	if (ret)
		return dp_err_set(msg, ret, "%s", err.msg);
	*points = calloc(1, sizeof(**points));
	if (!*points)
		return dp_err_set(msg, -ENOMEM, "out of memory");
	(*points)[0] = (struct dpd_point){ addr, DPD_ROLE_PROBE, false };
	*npoints = 1;
	return 0;
}

/* ---- SDT probes ------------------------------------------------------- */

int dpd_resolve_sdt(struct dpd_object *o, const char *probe, struct dp_sdt_event *sdt,
		    struct dpd_point **points, uint32_t *npoints, struct dp_err *msg)
{
	struct dpd_point *pts;
	int ret;

	*points = NULL;
	*npoints = 0;
	ret = dp_spec_sdt_event(dp_object_elf(o->obj), probe, sdt, msg);
	if (ret)
		return ret;
	if (sdt->nsites > DP_APP_MAX_PATCHES) {
		ret = dp_err_set(msg, -E2BIG, "%s:%s has %zu sites in %s, more than the %u one "
				 "process can hold", sdt->provider, sdt->name, sdt->nsites, o->path,
				 DP_APP_MAX_PATCHES);
		dp_spec_sdt_event_release(sdt);
		return ret;
	}
	pts = calloc(sdt->nsites, sizeof(*pts));
	if (!pts) {
		dp_spec_sdt_event_release(sdt);
		return dp_err_set(msg, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < sdt->nsites; i++)
		pts[i] = (struct dpd_point){ sdt->sites[i].pc, DPD_ROLE_PROBE, false };
	*points = pts;
	*npoints = (uint32_t)sdt->nsites;
	return 0;
}

/* ---- contexts --------------------------------------------------------- */

/* The run-time address of a symbol a context's ADDR names. */
struct ctx_symbols {
	struct dpd_object *o;
	uint64_t bias;
};

static int ctx_symbol(void *arg, const char *name, uint64_t *value, struct dp_err *err)
{
	const struct ctx_symbols *s = arg;
	bool code;

	if (dp_spec_symbol_find(s->o->obj, name, value, &code))
		return dp_err_set(err, -ENOENT, "symbol '%s' not found in %s: give a symbol of "
				  "that object, a number or a register", name, s->o->path);
	*value += s->bias;
	return 0;
}

int dpd_resolve_sdt_args(struct dpd_object *o, const struct dp_sdt_event *sdt, size_t site,
			 uint64_t bias, struct dp_ctx *out, struct dp_err *msg)
{
	struct ctx_symbols s = { o, bias };
	const struct dp_sdt_probe *sp = &sdt->sites[site];

	for (unsigned k = 0; k < sdt->nargs; k++) {
		int ret = dp_spec_sdt_arg_ctx(&sdt->args[site].v[k], &sdt->types[k],
					      sdt->types[k].name, ctx_symbol, &s, &out[k], msg);

		if (ret)
			return dp_err_prefix(msg, "%s:%s at 0x%" PRIx64 ", argument %u ('%s'): ",
					     sdt->provider, sdt->name, sp->pc, k, sp->args);
	}
	return 0;
}

int dpd_resolve_ctx(struct dpd_object *o, const char *spec, uint64_t bias, struct dp_ctx *out,
		    struct dp_err *msg)
{
	struct ctx_symbols s = { o, bias };
	int ret = dp_ctx_parse(spec, ctx_symbol, &s, out, msg);

	if (ret)
		dp_err_prefix(msg, "context '%s': ", spec);
	return ret;
}

/* The DWARF of an object (dwarf/dwarf.h finds it and keeps it). */
static int object_dwarf(struct dpd_object *o, Dwarf **dbg, struct dp_err *msg)
{
	struct dp_dwarf *dw;
	int ret = dp_dwarf_get(dp_object_elf(o->obj), &dw, msg);

	*dbg = ret ? NULL : dp_dwarf_handle(dw);
	((struct obj_priv *)o)->no_dwarf = ret == -ENOENT;
	return ret;
}

static int var_ctx(struct dpd_object *o, const char *spec, const struct dp_dwarf_at *at,
		   struct dp_ctx *out, size_t max, size_t *n, struct dp_err *msg)
{
	struct dp_var_expr e;
	int ret;

	if (dp_var_is_args(spec)) {
		ret = dp_ctx_parse(spec, NULL, NULL, out, msg);
		if (!ret)
			ret = dp_dwarf_args_compile(at, out, max, n, msg);
		return ret;
	}
	if (max < 1)
		return dp_err_set(msg, -E2BIG, "too many contexts");
	ret = dp_var_parse(spec, &e, msg);
	if (!ret)
		ret = dp_dwarf_var_compile(at, &e, out, msg);
	if (!ret)
		*n = 1;
	(void)o;
	return ret;
}

int dpd_resolve_ctx_at(struct dpd_object *o, const char *spec, uint64_t bias,
		       const struct dpd_point *pt, struct dp_ctx *out, size_t max, size_t *n,
		       struct dp_err *msg)
{
	struct dp_dwarf_at at = { .elf = dp_elf_handle(dp_object_elf(o->obj)), .pc = pt->vaddr,
				  .bias = bias };
	int ret;

	*n = 0;
	if (!dp_var_is_var(spec) && !dp_var_is_args(spec)) {
		if (max < 1)
			return dp_err_set(msg, -E2BIG, "too many contexts");
		ret = dpd_resolve_ctx(o, spec, bias, out, msg);
		*n = !ret;
		return ret;
	}
	/* A function's return event records ret, not its variables: its
	 * parameters are gone by then (lttng-dynprobe(7)). */
	if (pt->role == DPD_ROLE_RETURN)
		return 0;
	ret = object_dwarf(o, &at.dbg, msg);
	if (!ret)
		ret = var_ctx(o, spec, &at, out, max, n, msg);
	if (ret)
		dp_err_prefix(msg, "context '%s': ", spec);
	return ret;
}

/* The DWARF's typed ret for ev, once: 1 found (in ev->ret_ctx), -1 none. */
static int8_t event_ret(struct dpd_event *ev)
{
	struct dpd_object *o = ev->obj;
	struct dp_dwarf_at at = { .elf = dp_elf_handle(dp_object_elf(o->obj)) };
	char first[DP_CLIENT_CTX_MAX] = "", one[DP_CLIENT_CTX_MAX];
	struct dp_ctx c;

	if (((struct obj_priv *)o)->no_dwarf || object_dwarf(o, &at.dbg, NULL))
		return -1;
	for (uint32_t i = 0; i < ev->npoints; i++) {
		if (ev->points[i].role != DPD_ROLE_ENTRY)
			continue;
		at.pc = ev->points[i].vaddr;
		if (dp_dwarf_ret_compile(&at, &c, NULL))
			return -1;
		dp_ctx_format(&c, one, sizeof(one));
		if (first[0] && strcmp(first, one))
			return -1;	/* functions of different return types */
		snprintf(first, sizeof(first), "%s", one);
		ev->ret_ctx = c;
	}
	return first[0] ? 1 : -1;
}

int dpd_resolve_ret(struct dpd_event *ev, bool typed, struct dp_ctx *out)
{
	/* Every return point of every process asks: the answer is kept with
	 * the event, and an object without DWARF is looked up once (a var:
	 * context looks again). */
	if (!ev->ret_state)
		ev->ret_state = event_ret(ev);
	if (typed && ev->ret_state > 0) {
		*out = ev->ret_ctx;
		return 0;
	}
	return dp_ctx_parse("retval", NULL, NULL, out, NULL);
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
		return dp_proc_alive(pid) ? -ENOENT : -ESRCH;
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
	/* A process that exited (a zombie not yet collected) has no
	 * mappings left: that is not a wrong path. */
	if (ret == -ENOENT && !dp_proc_alive(pid))
		ret = -ESRCH;
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
	case DP_SITE_REDIRECT:
		/* Reached by its jumps: the branches led to the trampoline. */
		*method = DP_CLIENT_METHOD_JUMP;
		dp_plan_led_str(pl, text, tsize);
		break;
	case DP_SITE_JUMP:
		*method = DP_CLIENT_METHOD_JUMP;
		if (!dp_plan_led_str(pl, text, tsize)[0] && pl->hop.len)
			snprintf(text, tsize, "jmp rel8 to a hop at 0x%" PRIx64, pl->hop.addr);
		break;
	case DP_SITE_INT3:
		*method = DP_CLIENT_METHOD_INT3;
		break;
	default:
		*method = DP_CLIENT_METHOD_REFUSED;
		break;
	}
	if (pl->method != DP_SITE_JUMP && pl->method != DP_SITE_REDIRECT) {
		snprintf(reason, rsize, "%s", dp_reason_name(pl->reason));
		snprintf(text, tsize, "%s", dp_reason_str(pl->reason));
	}
}

void dpd_sites(const char *path, const char *function, struct dp_client_sites_reply *rep)
{
	struct dp_err msg = DP_ERR_INIT;
	const struct dp_function *fn;
	struct dpd_object *o = dpd_object_get(path, &msg);
	struct dp_location loc;
	struct dp_err err;
	int ret = -EINVAL;

	memset(rep, 0, sizeof(*rep));
	if (!o)
		goto fail;
	ret = dp_spec_location_parse(function, &loc, &err);
	if (!ret && loc.kind == DP_LOC_SYMBOL && loc.has_offset) {
		snprintf(err.msg, sizeof(err.msg), "'%s': give a function (a name, or an "
			 "address inside it), not a point inside one", function);
		ret = -EINVAL;
	}
	/* Any address inside the function will do here. */
	if (!ret)
		ret = dp_spec_function_find(o->obj, o->path, &loc, &fn, &err);
	if (ret) {
		dp_err_set(&msg, ret, "%s", err.msg);
		goto fail;
	}
	if (!fn->name || dp_spec_function_format(fn, rep->function, sizeof(rep->function)) < 0)
		snprintf(rep->function, sizeof(rep->function), "%s", function);
	rep->start = fn->start;
	rep->size = fn->size;
	rep->insns = calloc(fn->ninsns ? fn->ninsns : 1, sizeof(*rep->insns));
	if (!rep->insns) {
		dp_err_set(&msg, -ENOMEM, "out of memory");
		ret = -ENOMEM;
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
		if (dp_plan_site_flags(o->obj, a, DPD_PLAN_FLAGS, &pl)) {
			in->method = DP_CLIENT_METHOD_REFUSED;
			snprintf(in->text, sizeof(in->text), "the analysis failed");
		} else {
			dp_plan_refuse_unsafe_traps(o->obj, &pl, 1);
			set_method(&pl, &in->method, in->reason, sizeof(in->reason), in->text,
				   sizeof(in->text));
		}
		rep->ninsns++;
	}
	dpd_object_put(o);
	return;

fail:
	dpd_object_put(o);
	rep->status = ret;
	snprintf(rep->message, sizeof(rep->message), "%s", msg.msg);
}

void dpd_plan_method(const struct dp_patch *pl, struct dp_client_site *s)
{
	set_method(pl, &s->method, s->reason, sizeof(s->reason), s->text, sizeof(s->text));
}

/* ---- a path as a process sees it -------------------------------------- */

/* Whether pid sees the daemon's files: the same mount namespace and root
 * (or nothing can be told: then the daemon's view is all there is). */
static bool same_view(pid_t pid)
{
	char path[64], theirs[64], ours[64];
	struct stat a, b;
	ssize_t n, m;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	n = readlink(path, theirs, sizeof(theirs) - 1);
	m = readlink("/proc/self/ns/mnt", ours, sizeof(ours) - 1);
	if (n < 0 || m < 0)
		return true;
	theirs[n] = ours[m] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/root/", (int)pid);
	if (stat(path, &a) || stat("/", &b))
		return true;
	return !strcmp(theirs, ours) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

struct dpd_object *dpd_object_get_for(const char *path, pid_t pid, struct dp_err *msg)
{
	char alt[DP_CLIENT_PATH_MAX + 32];
	struct dp_err why = DP_ERR_INIT;
	struct dpd_object *o, *it;
	struct stat st;

	if (pid <= 0 || path[0] != '/' || same_view(pid))
		return dpd_object_get(path, msg);
	/* The process's own file first: the one it can map. */
	snprintf(alt, sizeof(alt), "/proc/%d/root%s", (int)pid, path);
	o = NULL;
	if (!stat(alt, &st)) {
		for (it = objects; it && !o; it = it->next)
			if (it->dev == st.st_dev && it->ino == st.st_ino &&
			    it->mtime_ns == mtime_ns(&st))
				o = obj_ref(it);
		if (!o)
			o = dpd_object_get(alt, &why);
	}
	if (o && dpd_object_mapped(o, pid))
		return o;
	/* Else the daemon's: a file of the host the process maps under
	 * another name (a bind mount), or none it maps (said later). */
	it = dpd_object_get(path, msg);
	if (it) {
		dpd_object_put(o);
		return it;
	}
	if (!o)
		dp_err_set(msg, msg->code, "%s exists neither as lttng-dynprobed sees it nor in "
			   "process %d's root and mount namespace (%s)", path, (int)pid, alt);
	return o;
}
