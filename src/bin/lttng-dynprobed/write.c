/*
 * Step 6 of patching (install.c's comment tells them all): one stop of every
 * thread of a process writes a batch of patches and restores the sites that
 * go, moving the threads whose PCs lie in bytes that change.  Install and
 * removal share it: a patch is written whole while every thread is held, or
 * not at all.
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

/* Writes a patch's bytes (patch/write.h builds them), threads held: a
 * jump's hop first (nothing reaches it before the rel8 exists), then its
 * site; or the int3. */
static int put_patch(struct dp_proc *proc, const struct dp_app_patch *ap, uint64_t entry)
{
	const struct dp_patch_place place = {
		.method = ap->method == DP_APP_METHOD_INT3 ? DP_SITE_INT3 : DP_SITE_JUMP,
		.addr = ap->site,
		.len = ap->len,
		.hop = ap->hop,
		.hop_len = ap->hop_len,
	};
	struct dp_patch_bytes b;
	int ret = dp_patch_bytes_fill(&place, entry, &b);

	if (!ret && b.hop_len)
		ret = dp_proc_write(proc, ap->hop, b.hop, b.hop_len);
	if (!ret)
		ret = dp_proc_write(proc, ap->site, b.site, b.site_len);
	return ret;
}

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
 * Puts a site's original bytes back, threads held: the site first, then the
 * hop (a thread between the two has taken the rel8: it goes on to the
 * trampoline's entry); a thread about to run a hook goes back to the
 * original code, its event being out from now on.  Only threads whose PC in
 * pcs (held_pcs) lies there are looked at.  0 or -errno.
 */
static int restore_site(struct dp_proc *proc, const uint64_t *pcs, size_t npcs,
			const struct dpd_site *s)
{
	const struct dp_app_patch *ap = &s->patch;
	uint8_t cur[DP_APP_HOP_LEN];
	uint64_t entry = s->entry;
	int ret;

	ret = dp_proc_write(proc, ap->site, ap->orig, ap->len);
	if (ap->hop_len && !ret) {
		if (!dp_proc_read(proc, ap->hop, cur, sizeof(cur)) && cur[0] == 0xe9) {
			int32_t rel;

			memcpy(&rel, cur + 1, 4);
			entry = ap->hop + 5 + (int64_t)rel;
		}
		struct dp_pc_move mv = { ap->hop, entry };

		if (pc_within(pcs, npcs, ap->hop, ap->hop + 1))
			dp_proc_move_pcs(proc, ap->hop, ap->hop + 1, &mv, 1, NULL);
		ret = dp_proc_write(proc, ap->hop, ap->hop_orig, ap->hop_len);
	}
	for (uint8_t i = 0; i < s->ninsns && ap->method == DP_APP_METHOD_JUMP; i++) {
		struct dp_pc_move mv = { s->insn_at[i], ap->site + s->off[i] };

		if (pc_within(pcs, npcs, s->insn_at[i], s->insn_at[i] + 1))
			dp_proc_move_pcs(proc, s->insn_at[i], s->insn_at[i] + 1, &mv, 1, NULL);
	}
	return ret;
}

/* Puts the patch of record s, threads held: threads inside its window
 * moved to the matching relocated instruction first.  0 or -errno. */
static int put_moving(struct dp_proc *proc, const uint64_t *pcs, size_t npcs,
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
	return put_patch(proc, ap, s->entry);
}

/*
 * Writes w's patch, threads held: threads inside a new window moved to the
 * matching relocated instruction (a patch in place has none there: its
 * window is entered by its first byte only), then the bytes.  One that
 * cannot be written is dropped, and what it changed put back as it was.
 */
static void write_patch(struct dp_proc *proc, struct dpd_proc *p, const uint64_t *pcs,
			size_t npcs, struct dpd_work *w)
{
	if (w->replaces ? !put_patch(proc, &w->rec.patch, w->rec.entry) :
			  !put_moving(proc, pcs, npcs, &w->rec))
		return;
	dpd_work_fail(p->pid, w, DP_REASON_NONE, dp_proc_errmsg(proc));
	/* Nothing half-written stays. */
	if (w->replaces)
		put_patch(proc, &p->sites[w->old].patch, p->sites[w->old].entry);
	else
		/* Threads this patch just moved are not where pcs says:
		 * every one is checked. */
		restore_site(proc, NULL, SIZE_MAX, &w->rec);
}

/*
 * An all-or-nothing batch whose work i failed: the works written before it
 * taken back and the sites restored put back, so that the process holds
 * what it held before the stop.
 */
static void undo_batch(struct dp_proc *proc, struct dpd_proc *p, struct dpd_work *ws,
		       size_t i, const uint32_t *gone, size_t ngone)
{
	while (i-- > 0) {
		struct dpd_work *w = &ws[i];

		if (w->replaces)
			put_patch(proc, &p->sites[w->old].patch, p->sites[w->old].entry);
		else
			restore_site(proc, NULL, SIZE_MAX, &w->rec);
		w->fail = true;
	}
	for (size_t k = 0; k < ngone; k++) {
		struct dpd_site *s = &p->sites[gone[k]];

		if (!s->installed && !put_moving(proc, NULL, SIZE_MAX, s))
			s->installed = true;
	}
}

/*
 * Whether p still runs the program its agent said HELLO from, its threads
 * held (no exec can happen now).  When an exec replaced it, what p records
 * went with the old program: every site is marked gone, every work
 * dropped, the connection (closed by the exec) let go, and true returned
 * with msg; a new agent's HELLO makes a new record.
 */
static bool dpd_write_same_image(struct dpd_proc *p, struct dpd_work *ws, size_t n,
				 struct dp_err *msg)
{
	uint8_t now[DPD_IMAGE_ID_LEN];

	if (!p->image_known || dpd_image_id(p->pid, now) || !memcmp(now, p->image, sizeof(now)))
		return false;
	dp_err_set(msg, -ESTALE, "process %d executed another program during the operation: "
		   "the patches went with the old one, nothing was written", (int)p->pid);
	dpd_info("%s", msg->msg);
	for (uint32_t i = 0; i < p->nsites; i++)
		p->sites[i].installed = false;
	for (size_t i = 0; i < n; i++)
		dpd_work_fail(p->pid, &ws[i], DP_REASON_NONE, msg->msg);
	dpd_agent_close(p);
	return true;
}

/*
 * Whether a site to restore holds what its record says, its threads held:
 * then true; else nothing is written (claims.c says why): a site that holds
 * its original bytes already is marked gone, any other stays.
 */
static bool dpd_write_holds(struct dpd_proc *p, const struct dp_maps *maps,
			    struct dpd_site *s)
{
	struct dp_err why = DP_ERR_INIT;
	int ret;

	if (!maps->n)
		return true;	/* unreadable: the write will say why */
	ret = dpd_claim_check(p->pid, maps, &s->patch, s->ninsns != 0, &why);
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
 * Step 6: one stop of p's threads restores the sites `gone` (indexes in
 * p->sites), marking them not installed, then writes the works' patches.
 * 0, or -errno with msg when the threads could not be held (every work
 * dropped) or let go, or, `all` set, when anything failed: then the process
 * holds what it held before.
 */
int dpd_write_batch(struct dpd_proc *p, struct dpd_work *ws, size_t n, const uint32_t *gone,
		    size_t ngone, bool all, struct dp_err *msg)
{
	struct dp_maps maps = { 0 };
	struct dp_proc *proc;
	uint64_t *pcs;
	size_t npcs, nwrite = 0;
	int ret, detached;

	for (size_t i = 0; i < n; i++)
		nwrite += !ws[i].fail;
	if (!nwrite && !ngone)
		return 0;
	proc = dp_proc_open(p->pid);
	if (!proc) {
		dp_err_set(msg, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	ret = dp_proc_attach(proc, 0);
	if (ret) {
		if (ret == -DP_PROC_ENOPROC)
			dp_err_set(msg, ret, "process %d exited during the operation", (int)p->pid);
		else
			dp_err_set(msg, ret, "%s", dp_proc_errmsg(proc));
		dp_proc_close(proc);
		for (size_t i = 0; i < n; i++)
			ws[i].fail = true;
		return ret;
	}
	pcs = held_pcs(proc, &npcs);
	dpd_fault("held");
	if (dpd_write_same_image(p, ws, n, msg)) {
		ret = nwrite ? -ESTALE : 0;
		ngone = n = 0;
	}
	/* The sites that go first: a window that replaces them may cover
	 * their bytes (threads they send back to the original code are then
	 * moved again, into the new trampoline: their PCs are read again). */
	if (ngone && dp_maps_read(p->pid, &maps))
		maps = (struct dp_maps){ 0 };
	for (size_t k = 0; k < ngone; k++) {
		struct dpd_site *s = &p->sites[gone[k]];

		if (!dpd_write_holds(p, &maps, s))
			continue;
		if (restore_site(proc, pcs, npcs, s))
			dpd_err("process %d: cannot restore 0x%" PRIx64 ": %s", (int)p->pid,
				s->patch.site, dp_proc_errmsg(proc));
		else
			s->installed = false;
	}
	if (ngone) {
		dp_maps_free(&maps);
		free(pcs);
		pcs = held_pcs(proc, &npcs);
	}
	/* Each patch stands alone: one that cannot be written is dropped
	 * (and reported) whole, the others go on; unless the batch is all or
	 * nothing. */
	for (size_t i = 0; i < n; i++) {
		if (ws[i].fail)
			continue;
		write_patch(proc, p, pcs, npcs, &ws[i]);
		if (ws[i].fail && all) {
			undo_batch(proc, p, ws, i, gone, ngone);
			dp_err_set(msg, -EIO, "%s", dp_proc_errmsg(proc));
			ret = -EIO;
			break;
		}
	}
	for (size_t k = 0; all && !ret && k < ngone; k++)
		if (p->sites[gone[k]].installed) {
			undo_batch(proc, p, ws, n, gone, ngone);
			dp_err_set(msg, -EIO, "cannot restore 0x%" PRIx64 ": %s",
				   p->sites[gone[k]].patch.site, dp_proc_errmsg(proc));
			ret = -EIO;
		}
	free(pcs);
	dpd_fault("written");
	/* What the detach says, not "no such process": a process that
	 * exited meanwhile is said so just below. */
	detached = dp_proc_detach(proc);
	if (detached && !ret && dp_proc_alive(p->pid)) {
		dp_err_set(msg, detached, "process %d: the threads held to write its code "
			   "could not all be let go: %s", (int)p->pid, dp_proc_errmsg(proc));
		ret = detached;
	}
	/* Killed while held: what was not written failed for that reason,
	 * and what was is gone with it. */
	if (!ret && !dp_proc_alive(p->pid)) {
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
