/*
 * Step 6 of patching (install.c's comment tells them all): one stop of every
 * thread of a process writes a batch of patches and restores the sites that
 * go, moving the threads whose PCs lie in bytes that change.  Install and
 * removal share it: a patch is written whole while every thread is held, or
 * not at all.
 *
 * The bytes of a whole batch go in few writes: every patch's bytes (and
 * every restored site's) are pieces; pieces on the same or adjacent pages
 * make a run, which is read once (threads held), the pieces laid over it,
 * and written once.  A byte between pieces is written back as it was read;
 * no page without a piece is written.  Writing a page costs its
 * copy-on-write, whatever the number of pieces on it: a run per page range
 * costs the stop little more than the copies themselves.  A run that cannot
 * be written is put back as it was read, and fails the patches with a piece
 * in it.
 *
 * A site is restored only if it holds its patch (claims.c), checked with
 * the threads held; the bytes of every site to restore are read in runs
 * too, and the ones that hold exactly what this daemon wrote there need no
 * other look.  Nothing is written in a process that executed another
 * program since its agent said HELLO.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "patch/write.h"
#include "proc/maps.h"
#include "proc/proc-status.h"
#include "proc/ptrace.h"

/*
 * The PCs of the held threads, read once for a whole batch: only moving a
 * thread changes one, into the trampoline of the patch being written, or
 * back to the original bytes of the patch being restored, never into
 * another patch's bytes, hop or trampoline.  A thread whose registers cannot
 * be read counts as everywhere (*n is SIZE_MAX, as it may be passed to mean
 * "check every thread"): every patch then checks it.
 */
static uint64_t *held_pcs(struct dp_proc *proc, size_t *n)
{
	size_t nt;
	const struct dp_thread *t = dp_proc_threads(proc, &nt);
	uint64_t *pcs = calloc(nt ? nt : 1, sizeof(*pcs));

	*n = pcs ? nt : SIZE_MAX;
	for (size_t i = 0; pcs && i < nt; i++) {
		struct user_regs_struct r;

		if (dp_proc_get_regs(proc, t[i].tid, &r)) {
			*n = SIZE_MAX;
			break;
		}
		pcs[i] = r.rip;
	}
	return pcs;
}

/* Whether a PC of held_pcs() may lie in [start, end). */
static bool pc_within(const uint64_t *pcs, size_t n, uint64_t start, uint64_t end)
{
	if (n == SIZE_MAX)
		return true;
	for (size_t i = 0; i < n; i++)
		if (pcs[i] >= start && pcs[i] < end)
			return true;
	return false;
}

/*
 * The moves of restoring a site, threads held (the bytes go later): a
 * thread between the hop and the trampoline (it has taken the rel8) goes on
 * to the trampoline's entry, a thread about to run a hook goes back to the
 * original code, its event being out from now on.  Only threads whose PC
 * in pcs (held_pcs) lies there are looked at.
 */
/* A thread at a hop that goes (it has taken a rel8 already) goes on to
 * where the hop leads, as it holds it (else to `entry`). */
static void hop_moves(struct dp_proc *proc, const uint64_t *pcs, size_t npcs, uint64_t hop,
		      uint64_t entry)
{
	uint8_t cur[DP_APP_HOP_LEN];

	if (!pc_within(pcs, npcs, hop, hop + 1))
		return;
	if (!dp_proc_read(proc, hop, cur, sizeof(cur)) && cur[0] == 0xe9) {
		int32_t rel;

		memcpy(&rel, cur + 1, 4);
		entry = hop + 5 + (int64_t)rel;
	}
	struct dp_pc_move mv = { hop, entry };

	dp_proc_move_pcs(proc, hop, hop + 1, &mv, 1, NULL);
}

static void restore_moves(struct dp_proc *proc, const uint64_t *pcs, size_t npcs,
			  const struct dpd_site *s, const struct dpd_led *led)
{
	const struct dp_app_patch *ap = &s->patch;

	if (ap->hop_len)
		hop_moves(proc, pcs, npcs, ap->hop, s->entry);
	for (unsigned k = 0; led && k < led->nwrites; k++)
		if (led->w[k].kind == DP_APP_WRITE_HOP)
			hop_moves(proc, pcs, npcs, led->w[k].addr, s->entry);
	/* A redirect's window holds its code: a thread about to run a hook
	 * goes there as for a jump. */
	for (uint8_t i = 0; i < s->ninsns && ap->method != DP_APP_METHOD_INT3; i++) {
		struct dp_pc_move mv = { s->insn_at[i], ap->site + s->off[i] };

		if (pc_within(pcs, npcs, s->insn_at[i], s->insn_at[i] + 1))
			dp_proc_move_pcs(proc, s->insn_at[i], s->insn_at[i] + 1, &mv, 1, NULL);
	}
}

/* The moves of putting the patch of record s, threads held: threads inside
 * its window to the matching relocated instruction.  0 or -EIO (nothing
 * moved: a thread cannot be). */
static int put_moves(struct dp_proc *proc, const uint64_t *pcs, size_t npcs,
		     const struct dpd_site *s)
{
	const struct dp_app_patch *ap = &s->patch;

	if (ap->method == DP_APP_METHOD_JUMP &&
	    pc_within(pcs, npcs, ap->site + 1, ap->site + ap->len)) {
		struct dp_pc_move map[DP_WINDOW_MAX_INSNS];
		size_t nm = 0;

		for (uint8_t k = 1; k < s->ninsns; k++)
			map[nm++] = (struct dp_pc_move){ ap->site + s->off[k], s->insn_at[k] };
		if (dp_proc_move_pcs(proc, ap->site + 1, ap->site + ap->len, map, nm, NULL))
			return -EIO;
	}
	return 0;
}

/* ---- pieces and runs ------------------------------------------------------ */

#define PAGE 4096u
/* The longest run: one read and one write of at most this much. */
#define RUN_MAX (1u << 20)

/*
 * The order of a batch's writes (a daemon killed between two leaves the
 * code runnable): restored windows, then the leds' restored branches,
 * then their hops; new leds' hops, then their branches, then the new
 * windows.  A branch never leads where nothing is yet, nor into a window
 * not yet left.  A batch with no led writes all in one phase.
 */
enum phase {
	PH_GONE = 0,		/* restored windows and their own hops */
	PH_GONE_BRANCH,		/* restored branches of leds */
	PH_GONE_HOP,		/* restored hops of leds */
	PH_NEW_HOP,		/* new hops of leds */
	PH_NEW_BRANCH,		/* new branches of leds */
	PH_NEW,			/* new windows and their own hops */
};

/* Bytes to write at addr: a restored site's or hop's (gone[owner]), or a
 * work's (ws[owner]). */
struct piece {
	uint64_t addr;
	uint32_t owner;
	uint8_t len;
	uint8_t phase;			/* enum phase */
	uint8_t wi;			/* a led's write: its index + 1; else 0 */
	bool work;
	bool hop;			/* a restored site's own hop (gone_holding
					   tells them) */
	uint8_t bytes[DP_WINDOW_MAX_LEN > DP_APP_MAX_ORIG ? DP_WINDOW_MAX_LEN : DP_APP_MAX_ORIG];
};

struct pieces {
	struct piece *v;
	size_t n;
};

static void piece_add_in(struct pieces *ps, uint64_t addr, const uint8_t *bytes, size_t len,
			 uint32_t owner, bool work, enum phase phase)
{
	struct piece *pc = &ps->v[ps->n++];

	pc->addr = addr;
	pc->owner = owner;
	pc->len = (uint8_t)len;
	pc->work = work;
	pc->phase = (uint8_t)phase;
	pc->wi = 0;
	pc->hop = false;
	memcpy(pc->bytes, bytes, len);
}

static void piece_add(struct pieces *ps, uint64_t addr, const uint8_t *bytes, size_t len,
		      uint32_t owner, bool work)
{
	piece_add_in(ps, addr, bytes, len, owner, work, work ? PH_NEW : PH_GONE);
}

/* The pieces of a led's writes: its original bytes, or the new ones. */
static void led_pieces(struct pieces *ps, const struct dpd_led *led, uint32_t owner, bool work)
{
	for (unsigned k = 0; led && k < led->nwrites; k++) {
		bool hop = led->w[k].kind == DP_APP_WRITE_HOP;

		piece_add_in(ps, led->w[k].addr, work ? led->now[k] : led->w[k].orig, led->w[k].len,
			     owner, work,
			     work ? (hop ? PH_NEW_HOP : PH_NEW_BRANCH) :
				    (hop ? PH_GONE_HOP : PH_GONE_BRANCH));
		ps->v[ps->n - 1].wi = (uint8_t)(k + 1);
	}
}

/* With no led piece, one phase for all: the runs as before leds. */
static void phases_settle(struct pieces *ps)
{
	bool leds = false;

	for (size_t i = 0; i < ps->n && !leds; i++)
		leds = ps->v[i].phase != PH_GONE && ps->v[i].phase != PH_NEW;
	for (size_t i = 0; i < ps->n && !leds; i++)
		ps->v[i].phase = PH_GONE;
}

static int piece_cmp(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	if (x->phase != y->phase)
		return (int)x->phase - (int)y->phase;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (int)x->work - (int)y->work;
}

/* Sorts the pieces, unless they are (a removal's, sorted before the stop). */
static void pieces_sort(struct pieces *ps)
{
	for (size_t i = 1; i < ps->n; i++)
		if (piece_cmp(&ps->v[i - 1], &ps->v[i]) > 0) {
			qsort(ps->v, ps->n, sizeof(*ps->v), piece_cmp);
			return;
		}
}

/* A run written: its address and the bytes it held before (to undo). */
struct run {
	uint64_t addr;
	size_t len;
	uint8_t *orig;
};

/*
 * The run that starts at piece i (pieces sorted): the pieces on the same
 * page as the run's end, or the next one, up to RUN_MAX bytes; a piece that
 * overlaps the run is always in it (a restored site and the new window over
 * it are written in order).  Its end in *end; the first piece after it.
 */
static size_t run_end(const struct pieces *ps, size_t i, uint64_t *end)
{
	uint64_t start = ps->v[i].addr;
	size_t j = i + 1;

	*end = start + ps->v[i].len;
	for (; j < ps->n; j++) {
		const struct piece *pc = &ps->v[j];
		uint64_t pend = pc->addr + pc->len > *end ? pc->addr + pc->len : *end;

		if (pc->phase != ps->v[i].phase)
			break;
		if (pc->addr >= *end &&
		    (pc->addr / PAGE > (*end - 1) / PAGE + 1 || pend - start > RUN_MAX))
			break;
		*end = pend;
	}
	return j;
}

/* Whether pid is seen dead (gone or a zombie) within ms. */
static bool exited_soon(pid_t pid, int ms)
{
	for (int t = 0; t < ms; t += 5) {
		if (!dp_proc_alive(pid))
			return true;
		usleep(5000);
	}
	return !dp_proc_alive(pid);
}

/*
 * Writes the pieces (sorted) in runs.  A piece whose run failed gets
 * failed[i] set (the run put back as it was); the others their run's
 * index in run_of[i].  The runs written are kept in *runs (their original
 * bytes), for an undo.  0, or -ENOMEM (nothing written).
 */
static int write_runs(struct dp_proc *proc, const struct pieces *ps, bool *failed,
		      size_t *run_of, struct run **runs, size_t *nruns)
{
	uint8_t *buf = NULL;
	size_t i = 0;

	*runs = calloc(ps->n ? ps->n : 1, sizeof(**runs));
	*nruns = 0;
	if (!*runs)
		return -ENOMEM;
	while (i < ps->n) {
		uint64_t start = ps->v[i].addr, end;
		struct run *r = &(*runs)[*nruns];
		size_t j = run_end(ps, i, &end);
		int ret;

		/* Tests: a daemon killed between the leds and the windows. */
		if (i && ps->v[i].phase != ps->v[i - 1].phase) {
			if (ps->v[i].phase == PH_NEW)
				dpd_fault("led");
			else if (ps->v[i - 1].phase == PH_GONE)
				dpd_fault("unled");
		}
		r->addr = start;
		r->len = end - start;
		r->orig = malloc(r->len);
		free(buf);
		buf = malloc(r->len);
		ret = r->orig && buf ? dp_proc_read(proc, start, r->orig, r->len) : -ENOMEM;
		if (!ret) {
			memcpy(buf, r->orig, r->len);
			/* Restored bytes first: a new window over a site that
			 * goes in the same stop (combine.c) wins. */
			for (int pass = 0; pass < 2; pass++)
				for (size_t k = i; k < j; k++)
					if (ps->v[k].work == (pass == 1))
						memcpy(buf + (ps->v[k].addr - start), ps->v[k].bytes,
						       ps->v[k].len);
			ret = dp_proc_write(proc, start, buf, r->len);
			if (ret)
				/* Nothing half-written stays. */
				dp_proc_write(proc, start, r->orig, r->len);
		}
		if (ret) {
			free(r->orig);
			for (size_t k = i; k < j; k++)
				failed[k] = true;
		} else {
			for (size_t k = i; k < j; k++)
				run_of[k] = *nruns;
			(*nruns)++;
		}
		i = j;
	}
	free(buf);
	return 0;
}

/* Puts back the bytes every run held before. */
static void undo_runs(struct dp_proc *proc, const struct run *runs, size_t nruns)
{
	for (size_t k = nruns; k-- > 0;)
		dp_proc_write(proc, runs[k].addr, runs[k].orig, runs[k].len);
}

/*
 * Whether p still runs the program its agent said HELLO from, its threads
 * held (no exec can happen now): 0 when it does.  1 when an exec replaced
 * it: what p records went with the old program, every site is marked gone,
 * every work dropped, the connection (closed by the exec) let go, and msg
 * says so; a new agent's HELLO makes a new record.  -errno when its
 * identity cannot be read: nothing is to be written (one cannot know into
 * which program), every work dropped, the record kept, msg says why.
 */
static int write_image_check(struct dpd_proc *p, struct dpd_work *ws, size_t n,
			     struct dp_err *msg)
{
	uint8_t now[DPD_IMAGE_ID_LEN];
	int ret;

	if (!p->image_known)
		return 0;
	ret = dpd_image_id(p->pid, now);
	if (ret) {
		/* A process killed while held (still exiting, maybe: given
		 * 100 ms to be seen dead): said as the callers know it. */
		if (ret == -ESRCH || ret == -ENOENT || exited_soon(p->pid, 100))
			ret = dp_err_set(msg, -DP_PROC_ENOPROC, "process %d exited during the "
					 "operation", (int)p->pid);
		else
			dp_err_set(msg, ret, "process %d: which program it runs cannot be read "
				   "(%s): nothing was written", (int)p->pid, strerror(-ret));
		dpd_info("%s", msg->msg);
		for (size_t i = 0; i < n; i++)
			dpd_work_fail(p->pid, &ws[i], DP_REASON_NONE, msg->msg);
		return ret;
	}
	if (!memcmp(now, p->image, sizeof(now)))
		return 0;
	dp_err_set(msg, -ESTALE, "process %d executed another program during the operation: "
		   "the patches went with the old one, nothing was written", (int)p->pid);
	dpd_info("%s", msg->msg);
	for (uint32_t i = 0; i < p->nsites; i++)
		p->sites[i].installed = false;
	for (size_t i = 0; i < n; i++)
		dpd_work_fail(p->pid, &ws[i], DP_REASON_NONE, msg->msg);
	dpd_agent_close(p);
	return 1;
}

/*
 * Whether a site to restore holds what its record says, its threads held:
 * then true; else nothing is written (claims.c says why): a site that holds
 * its original bytes already is marked gone, any other stays.  The checks
 * of one stop share f: /proc/PID/mem and the files opened once, read by
 * blocks (nothing writes the code while the threads are held).
 */
static bool dpd_write_holds(struct dpd_proc *p, struct dpd_claim_files *f,
			    const struct dp_maps *maps, struct dpd_site *s)
{
	struct dp_err why = DP_ERR_INIT;
	int ret;

	if (!maps->n)
		return true;	/* unreadable: the write will say why */
	if (s->led)
		ret = dpd_claim_check_led(p->pid, maps, &s->patch, dpd_site_led(p, s),
					  s->ninsns != 0, &why);
	else
		ret = dpd_claim_check_files(f, maps, &s->patch, s->ninsns != 0, &why);
	if (ret == 0) {
		dpd_info("process %d: 0x%" PRIx64 " holds its original bytes already", (int)p->pid,
			 s->patch.site);
		s->installed = false;
	} else if (ret < 0) {
		dpd_err("process %d: 0x%" PRIx64 " is not restored: %s", (int)p->pid,
			s->patch.site, why.msg);
	}
	return ret > 0;
}

/*
 * The pieces of restoring the sites gone, sorted (piece_cmp): each site's
 * original bytes, its hop's, its led's writes.  Built before the threads
 * are held: a whole program's restore costs the stop no sort and no page
 * of memory touched for the first time.  A redirect's window, never
 * written, has its piece too, for gone_holding only.
 */
static void gone_pieces(const struct dpd_proc *p, const uint32_t *gone, size_t ngone,
			struct pieces *ps)
{
	for (size_t k = 0; k < ngone; k++) {
		const struct dpd_site *s = &p->sites[gone[k]];
		const struct dp_app_patch *ap = &s->patch;

		piece_add(ps, ap->site, ap->orig, ap->len, (uint32_t)k, false);
		if (ap->hop_len) {
			piece_add(ps, ap->hop, ap->hop_orig, ap->hop_len, (uint32_t)k, false);
			ps->v[ps->n - 1].hop = true;
		}
		led_pieces(ps, dpd_site_led(p, s), (uint32_t)k, false);
	}
	qsort(ps->v, ps->n, sizeof(*ps->v), piece_cmp);
}

/*
 * Which sites to restore hold their patch, threads held: those whose bytes
 * (and hop's, and led's) are exactly what this daemon wrote there go on at
 * once; any other is asked of dpd_write_holds (a site that holds its
 * original bytes is marked gone there).  ps holds gone_pieces(), read in
 * runs as write_runs makes them, compared in the buffer read.  keep[k]
 * says whether gone[k] is to be restored.
 */
static void gone_holding(struct dp_proc *proc, struct dpd_proc *p, const uint32_t *gone,
			 size_t ngone, const struct pieces *ps, bool *keep)
{
	struct dp_maps maps = { 0 };
	struct dpd_claim_files files;
	bool maps_read = false;
	/* Per site: every piece holds our bytes. */
	bool *ours = calloc(ngone ? ngone : 1, sizeof(*ours));
	uint8_t *buf = NULL;
	size_t i = 0;

	for (size_t k = 0; ours && k < ngone; k++) {
		const struct dpd_led *led = dpd_site_led(p, &p->sites[gone[k]]);

		/* A recovered led's bytes are not known: claims.c looks. */
		ours[k] = !led || !led->recovered;
	}
	while (ours && i < ps->n) {
		uint64_t start = ps->v[i].addr, end;
		size_t j = run_end(ps, i, &end);
		uint8_t *nbuf = realloc(buf, end - start);
		bool read = nbuf && !dp_proc_read(proc, start, nbuf, end - start);

		if (nbuf)
			buf = nbuf;
		for (; i < j; i++) {
			const struct piece *pc = &ps->v[i];
			const struct dpd_site *s = &p->sites[gone[pc->owner]];
			const struct dp_app_patch *ap = &s->patch;
			const struct dp_patch_place place = {
				.method = ap->method == DP_APP_METHOD_INT3 ? DP_SITE_INT3 :
									    DP_SITE_JUMP,
				.addr = ap->site, .len = ap->len, .hop = ap->hop,
				.hop_len = ap->hop_len,
			};
			const uint8_t *cur = read ? buf + (pc->addr - start) : NULL;
			struct dp_patch_bytes b;

			if (!ours[pc->owner])
				continue;
			if (!cur) {
				ours[pc->owner] = false;
				continue;
			}
			if (pc->wi) {
				const struct dpd_led *led = dpd_site_led(p, s);

				if (memcmp(cur, led->now[pc->wi - 1], pc->len))
					ours[pc->owner] = false;
				continue;
			}
			/* A redirect's window is never written. */
			if (ap->method == DP_APP_METHOD_REDIRECT) {
				if (memcmp(cur, ap->orig, pc->len))
					ours[pc->owner] = false;
				continue;
			}
			/* What the write left: the patch's bytes, then the
			 * window's original ones after them. */
			if (dp_patch_bytes_fill(&place, s->entry, &b) ||
			    (pc->hop ? b.hop_len != pc->len : b.site_len > pc->len) ||
			    memcmp(cur, pc->hop ? b.hop : b.site, pc->hop ? b.hop_len : b.site_len) ||
			    (!pc->hop && memcmp(cur + b.site_len, ap->orig + b.site_len,
						pc->len - b.site_len)))
				ours[pc->owner] = false;
		}
	}
	free(buf);
	for (size_t k = 0; k < ngone; k++) {
		struct dpd_site *s = &p->sites[gone[k]];

		if (ours && ours[k]) {
			keep[k] = true;
			continue;
		}
		if (!maps_read) {
			maps_read = true;
			if (dp_maps_read(p->pid, &maps))
				maps = (struct dp_maps){ 0 };
			dpd_claim_files_init(&files, p->pid, true);
		}
		keep[k] = dpd_write_holds(p, &files, &maps, s);
	}
	if (maps_read)
		dpd_claim_files_release(&files);
	dp_maps_free(&maps);
	free(ours);
}

/*
 * Step 6: one stop of p's threads restores the sites `gone` (indexes in
 * p->sites), marking them not installed, then writes the works' patches.
 * 0, or -errno with msg when the threads could not be held (every work
 * dropped) or let go, or, `all` set, when anything failed: then the process
 * holds what it held before.  p is held by the caller: the state lock is
 * let go while the threads are being stopped.
 */
int dpd_write_batch(struct dpd_proc *p, struct dpd_work *ws, size_t n, const uint32_t *gone,
		    size_t ngone, bool all, struct dp_err *msg)
{
	struct pieces ps = { 0 };
	struct run *runs = NULL;
	struct dp_proc *proc;
	uint64_t *pcs;
	bool *failed = NULL, *gone_ok = NULL, *hold = NULL, any_fail = false;
	size_t npcs, nwrite = 0, nruns = 0, *run_of = NULL;
	int ret, detached;

	for (size_t i = 0; i < n; i++)
		nwrite += !ws[i].fail;
	if (!nwrite && !ngone)
		return 0;
	/* Two pieces (site, hop) a patch or site at most, and its led's. */
	ps.v = malloc((2 + DP_APP_MAX_WRITES) * (n + ngone) * sizeof(*ps.v));
	failed = calloc((2 + DP_APP_MAX_WRITES) * (n + ngone), sizeof(*failed));
	run_of = calloc((2 + DP_APP_MAX_WRITES) * (n + ngone), sizeof(*run_of));
	gone_ok = calloc(ngone ? ngone : 1, sizeof(*gone_ok));
	hold = calloc(ngone ? ngone : 1, sizeof(*hold));
	if (ps.v)
		gone_pieces(p, gone, ngone, &ps);
	proc = ps.v && failed && run_of && gone_ok && hold ? dp_proc_open(p->pid) : NULL;
	if (!proc) {
		free(ps.v);
		free(failed);
		free(run_of);
		free(gone_ok);
		free(hold);
		dp_err_set(msg, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	/* Holding every thread may take seconds on a loaded machine (a
	 * thread in D state, runnable ones not yet scheduled): p is held, so
	 * its record is ours, and other requests are served meanwhile. */
	dpd_unlock();
	dpd_fault("stopping");
	ret = dp_proc_attach(proc, 0);
	dpd_lock();
	if (ret) {
		/* A zombie met here was alive when the request began (its
		 * parent has not collected it yet): it exited meanwhile, as a
		 * process already gone did, and the callers forget both. */
		if (ret == -DP_PROC_EZOMBIE)
			ret = -DP_PROC_ENOPROC;
		if (ret == -DP_PROC_ENOPROC)
			dp_err_set(msg, ret, "process %d exited during the operation", (int)p->pid);
		else
			dp_err_set(msg, ret, "%s", dp_proc_errmsg(proc));
		dp_proc_close(proc);
		for (size_t i = 0; i < n; i++)
			ws[i].fail = true;
		free(ps.v);
		free(failed);
		free(run_of);
		free(gone_ok);
		free(hold);
		return ret;
	}
	pcs = held_pcs(proc, &npcs);
	dpd_fault("held");
	ret = write_image_check(p, ws, n, msg);
	if (ret) {
		/* Nothing written: after an exec, what failed is what was to be
		 * written (a removal has nothing left to restore). */
		if (ret > 0)
			ret = nwrite ? -ESTALE : 0;
		ngone = n = 0;
		ps.n = 0;
	}
	gone_holding(proc, p, gone, ngone, &ps, hold);
	/* The sites that go first: a window that replaces them may cover
	 * their bytes (threads they send back to the original code are then
	 * moved again, into the new trampoline: their PCs are read again). */
	for (size_t k = 0; k < ngone; k++) {
		const struct dpd_site *s = &p->sites[gone[k]];

		if (hold[k])
			restore_moves(proc, pcs, npcs, s, dpd_site_led(p, s));
	}
	/* Their pieces (gone_pieces, sorted): those of the sites restored,
	 * but a redirect's window, which is never written. */
	{
		size_t m = 0;

		for (size_t k = 0; k < ps.n; k++) {
			const struct piece *pc = &ps.v[k];

			if (!hold[pc->owner] ||
			    (!pc->wi && !pc->hop && pc->addr == p->sites[gone[pc->owner]].patch.site &&
			     p->sites[gone[pc->owner]].patch.method == DP_APP_METHOD_REDIRECT))
				continue;
			if (m != k)
				ps.v[m] = *pc;
			m++;
		}
		ps.n = m;
	}
	if (ngone) {
		free(pcs);
		pcs = held_pcs(proc, &npcs);
	}
	/* Each patch stands alone: one that cannot be placed is dropped (and
	 * reported) whole, the others go on; unless the batch is all or
	 * nothing.  A patch in place (rebuilt) has no thread in its window:
	 * it is entered by its first byte only. */
	for (size_t i = 0; i < n; i++) {
		struct dpd_work *w = &ws[i];
		const struct dp_app_patch *ap = &w->rec.patch;
		const struct dp_patch_place place = {
			.method = ap->method == DP_APP_METHOD_INT3 ? DP_SITE_INT3 : DP_SITE_JUMP,
			.addr = ap->site,
			.len = ap->len,
			.hop = ap->hop,
			.hop_len = ap->hop_len,
		};
		struct dp_patch_bytes b;

		if (w->fail)
			continue;
		/* A redirect writes its led alone. */
		if (ap->method == DP_APP_METHOD_REDIRECT) {
			led_pieces(&ps, &w->led, (uint32_t)i, true);
			continue;
		}
		if (dp_patch_bytes_fill(&place, w->rec.entry, &b) ||
		    (!w->replaces && put_moves(proc, pcs, npcs, &w->rec))) {
			dpd_work_fail(p->pid, w, DP_REASON_NONE,
				      "a thread is inside the window and cannot be moved");
			any_fail = true;
			continue;
		}
		piece_add(&ps, ap->site, b.site, b.site_len, (uint32_t)i, true);
		if (b.hop_len)
			piece_add(&ps, ap->hop, b.hop, b.hop_len, (uint32_t)i, true);
		led_pieces(&ps, &w->led, (uint32_t)i, true);
	}
	free(pcs);
	phases_settle(&ps);
	pieces_sort(&ps);
	if (!(any_fail && all) && write_runs(proc, &ps, failed, run_of, &runs, &nruns)) {
		for (size_t k = 0; k < ps.n; k++)
			failed[k] = true;
	}
	if (any_fail && all)
		for (size_t k = 0; k < ps.n; k++)
			failed[k] = true;
	/* What each piece's run made of its owner.  A site that does not
	 * hold its patch and stays recorded fails an all-or-nothing batch. */
	for (size_t k = 0; k < ngone; k++) {
		gone_ok[k] = hold[k];
		any_fail |= !hold[k] && all && p->sites[gone[k]].installed;
	}
	for (size_t k = 0; k < ps.n; k++) {
		const struct piece *pc = &ps.v[k];

		if (!failed[k])
			continue;
		any_fail = true;
		if (!pc->work) {
			gone_ok[pc->owner] = false;
		} else if (!ws[pc->owner].fail) {
			dpd_work_fail(p->pid, &ws[pc->owner], DP_REASON_NONE, dp_proc_errmsg(proc));
			/* Threads this patch moved go back to the original
			 * code, which is what the site holds. */
			if (!ws[pc->owner].replaces)
				restore_moves(proc, NULL, SIZE_MAX, &ws[pc->owner].rec, NULL);
		}
	}
	/* An owner with a piece that failed has its other pieces (written by
	 * another run: a hop far from its site, a led's branch) put back as
	 * they were, the last phase first. */
	for (size_t k = ps.n; any_fail && !all && k-- > 0;) {
		const struct piece *pc = &ps.v[k];
		bool owner_failed = pc->work ? ws[pc->owner].fail : !gone_ok[pc->owner];

		if (owner_failed && !failed[k])
			dp_proc_write(proc, pc->addr,
				      runs[run_of[k]].orig + (pc->addr - runs[run_of[k]].addr),
				      pc->len);
	}
	if (any_fail && all) {
		/* All or nothing: every byte back as it was, the works dropped,
		 * threads moved out of windows that hold their patch again. */
		undo_runs(proc, runs, nruns);
		for (size_t i = 0; i < n; i++) {
			if (!ws[i].fail && !ws[i].replaces)
				restore_moves(proc, NULL, SIZE_MAX, &ws[i].rec, NULL);
			ws[i].fail = true;
		}
		for (size_t k = 0; k < ngone; k++)
			if (hold[k])
				put_moves(proc, NULL, SIZE_MAX, &p->sites[gone[k]]);
		dp_err_set(msg, -EIO, "%s", dp_proc_errmsg(proc)[0] ? dp_proc_errmsg(proc) :
			   "a thread is inside a window and cannot be moved");
		ret = -EIO;
	} else {
		for (size_t k = 0; k < ngone; k++) {
			struct dpd_site *s = &p->sites[gone[k]];

			if (!hold[k])
				continue;	/* as dpd_write_holds left it */
			if (gone_ok[k]) {
				s->installed = false;
				continue;
			}
			/* Still in place: threads sent back to the original
			 * code go to the trampoline again. */
			put_moves(proc, NULL, SIZE_MAX, s);
			dpd_err("process %d: cannot restore 0x%" PRIx64 ": %s", (int)p->pid,
				s->patch.site, dp_proc_errmsg(proc));
		}
	}
	dpd_fault("written");
	/*
	 * What the detach says, not "no such process" (a process that exited
	 * meanwhile is said so just below).  It does not undo the writes: the
	 * code holds them, so the caller must record them as written, or the
	 * patches would stay with no one to remove them.
	 */
	detached = dp_proc_detach(proc);
	/* Freed once the threads run: a whole program's runs are megabytes. */
	for (size_t k = 0; k < nruns; k++)
		free(runs[k].orig);
	free(runs);
	free(ps.v);
	free(failed);
	free(run_of);
	free(gone_ok);
	free(hold);
	if (detached && dp_proc_alive(p->pid))
		dpd_err("process %d: the threads held to write its code could not all be "
			"let go: %s", (int)p->pid, dp_proc_errmsg(proc));
	/* Killed while held: what was not written failed for that reason,
	 * and what was is gone with it.  A process killed while held can
	 * still be exiting when its threads are let go: when something
	 * failed, it is given 100 ms to be seen dead. */
	if (!ret && (any_fail ? exited_soon(p->pid, 100) : !dp_proc_alive(p->pid))) {
		dp_err_set(msg, -DP_PROC_ENOPROC, "process %d exited during the operation",
			   (int)p->pid);
		for (size_t i = 0; i < n; i++)
			ws[i].fail = true;
		ret = -DP_PROC_ENOPROC;
	}
	/* At info level, with the totals: a benchmark adds these lines up to
	 * know how long the target lost, and the longest stop ends the line
	 * as test-cycles.sh reads it. */
	{
		uint32_t nholds;
		uint64_t total = dp_proc_total_held_ns(proc, &nholds);

		dpd_info("process %d: a batch of %zu sites in %u stops, %.3f ms in all, "
			 "threads held %.3f ms", (int)p->pid, nwrite + ngone, nholds, total / 1e6,
			 dp_proc_max_held_ns(proc) / 1e6);
	}
	dp_proc_close(proc);
	return ret;
}
