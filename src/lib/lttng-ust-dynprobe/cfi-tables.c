/*
 * The CFI tables of the objects loaded in this process, for the `cfi` stack
 * walk (unwind.c): each object's .eh_frame, found through its
 * PT_GNU_EH_FRAME segment (.eh_frame_hdr), compiled into a table of rows
 * (elf/cfi-table.h) when a probe that walks by CFI is defined, never during
 * a hit.  Why then and not lazily: compiling libc takes milliseconds, and a
 * hit must stay within its nanoseconds; at definition the agent is already
 * doing slow work (reading maps, allocating), and the objects a probe's
 * stacks cross are the ones loaded by then.  Objects loaded later get their
 * table at the next definition; until then a walk stops at their code.
 *
 * Publication without locks on the reading side: a set of tables is built
 * aside and published with one atomic pointer store (release); a walk loads
 * it once (acquire) and reads only that set.  Sets and tables are never
 * freed, since a walk on another thread may be reading one at any moment:
 * what this leaks is one array per refresh that found a change, and the
 * tables of objects dlclose'd since (the table of an object unloaded and
 * another loaded at its address meanwhile would misguide a walk until the
 * next refresh, but every read of a walk is fault-safe).
 */
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cfi-tables.h"
#include "elf/ehbytes.h"

static _Atomic(const struct dpa_cfi_set *) published;
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long seen_adds, seen_subs;

const struct dpa_cfi_set *dpa_cfi_current(void)
{
	return atomic_load_explicit(&published, memory_order_acquire);
}

struct gather {
	const struct dpa_cfi_set *old;
	struct dpa_cfi_obj *v;
	size_t n, cap;
	int err;
};

/* The end of the PT_LOAD segment holding addr, or 0. */
static uint64_t segment_end(const struct dl_phdr_info *info, uint64_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= lo && addr < lo + ph->p_memsz)
			return lo + ph->p_memsz;
	}
	return 0;
}

/*
 * Where .eh_frame lies, from .eh_frame_hdr: its start, and an end past its
 * last FDE (the header's search table names every FDE; its last one's length
 * ends the section), else the end of its segment (the section's zero
 * terminator stops the compiler before that).
 */
static int eh_frame_span(const struct dl_phdr_info *info, uint64_t hdr, uint64_t hdr_end,
			 uint64_t *start, uint64_t *end)
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)hdr;
	struct dp_ehread r = { p, p + (hdr_end - hdr), hdr };
	uint64_t count, last = 0;
	uint8_t version, ptr_enc, count_enc, table_enc;

	if (dp_ehread_u8(&r, &version) || version != 1 || dp_ehread_u8(&r, &ptr_enc) ||
	    dp_ehread_u8(&r, &count_enc) || dp_ehread_u8(&r, &table_enc) ||
	    dp_ehread_pointer(&r, ptr_enc, start))
		return -EINVAL;
	*end = segment_end(info, *start);
	if (!*end)
		return -EINVAL;
	/* The usual search table: datarel sdata4 pairs (pc, FDE address). */
	if (table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) ||
	    dp_ehread_pointer(&r, count_enc, &count) || count > (size_t)(r.end - r.p) / 8)
		return 0;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t pc, fde;

		if (dp_ehread_fixed(&r, 4, true, &pc) || dp_ehread_fixed(&r, 4, true, &fde))
			return 0;
		fde += hdr;
		if (fde > last)
			last = fde;
	}
	if (last >= *start && last + 4 <= *end) {
		uint32_t len;

		memcpy(&len, (const void *)(uintptr_t)last, 4);
		/* 64-bit lengths (0xffffffff) do not occur in .eh_frame of
		 * objects a loader maps; keep the segment bound then. */
		if (len != 0xffffffff && last + 4 + len <= *end)
			*end = last + 4 + len;
	}
	return 0;
}

static const struct dpa_cfi_obj *old_find(const struct dpa_cfi_set *old, uint64_t hdr,
					  uint64_t bias)
{
	for (size_t i = 0; old && i < old->n; i++)
		if (old->v[i].hdr == hdr && old->v[i].t.base == bias)
			return &old->v[i];
	return NULL;
}

static int gather_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct gather *g = arg;
	const ElfW(Phdr) *eh = NULL;
	const struct dpa_cfi_obj *have;
	struct dpa_cfi_obj obj;
	uint64_t hdr, start, end;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
	if (!eh)
		return 0;
	hdr = info->dlpi_addr + eh->p_vaddr;
	have = old_find(g->old, hdr, info->dlpi_addr);
	if (have) {
		obj = *have;
	} else {
		struct dp_err err = DP_ERR_INIT;

		/* The loader's lock is held: the object stays mapped while it
		 * is read. */
		if (eh_frame_span(info, hdr, hdr + eh->p_memsz, &start, &end) ||
		    dp_cfi_compile((const void *)(uintptr_t)start, end - start, start,
				   info->dlpi_addr, &obj.t, &err))
			return 0;	/* no table: walks stop in this object */
		if (!obj.t.n) {
			dp_cfi_table_release(&obj.t);
			return 0;
		}
		obj.hdr = hdr;
		obj.lo = obj.t.base + obj.t.rows[0].pc;
		obj.hi = obj.t.base + obj.t.rows[obj.t.n - 1].pc;
	}
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		struct dpa_cfi_obj *v = realloc(g->v, cap * sizeof(*v));

		if (!v)
			return g->err = -ENOMEM;
		g->v = v;
		g->cap = cap;
	}
	g->v[g->n++] = obj;
	return 0;
}

static int obj_cmp(const void *a, const void *b)
{
	const struct dpa_cfi_obj *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Whether the loader's list changed since the last refresh. */
static int count_changes(struct dl_phdr_info *info, size_t size, void *arg)
{
	bool *changed = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		*changed = info->dlpi_adds != seen_adds || info->dlpi_subs != seen_subs;
	seen_adds = info->dlpi_adds;
	seen_subs = info->dlpi_subs;
	return 1;
}

/* A walk by CFI was prepared: dlopen's callers refresh too. */
static atomic_bool used;

/* dpa_cfi_refresh, with refresh_lock held (and let go). */
static int refresh_locked(void)
{
	struct gather g = { 0 };
	struct dpa_cfi_set *set;
	bool changed = true;
	int ret = 0;

	g.old = dpa_cfi_current();
	dl_iterate_phdr(count_changes, &changed);
	if (g.old && !changed)
		goto out;
	dl_iterate_phdr(gather_one, &g);
	if (g.err) {
		ret = g.err;
		goto out;
	}
	qsort(g.v, g.n, sizeof(*g.v), obj_cmp);
	set = malloc(sizeof(*set) + g.n * sizeof(set->v[0]));
	if (!set) {
		ret = -ENOMEM;
		goto out;
	}
	set->n = g.n;
	memcpy(set->v, g.v, g.n * sizeof(set->v[0]));
	atomic_store_explicit(&published, set, memory_order_release);
out:
	free(g.v);
	pthread_mutex_unlock(&refresh_lock);
	return ret;
}

int dpa_cfi_refresh(void)
{
	atomic_store(&used, true);
	pthread_mutex_lock(&refresh_lock);
	return refresh_locked();
}

void dpa_cfi_after_dlopen(void)
{
	/* Never waits for the lock: this thread may still hold the loader's
	 * (a constructor's dlopen), which a refresh holding refresh_lock may
	 * be waiting for. */
	if (atomic_load(&used) && !pthread_mutex_trylock(&refresh_lock))
		refresh_locked();
}
