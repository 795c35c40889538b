/*
 * The daemon's state, in one place: its settings; the dynamic events (what
 * clients asked for: session, channel, event, spec), their lttng names and
 * their resolution against the object; the processes we know, with the
 * probes and patches each holds, and the geometry of patch windows (which
 * are the same, which meet); and the state file that lets a restarted daemon
 * (after SIGKILL) know again which events the patches its agents report
 * belong to.  Every other file reads and changes the state through here;
 * nothing here talks to an agent or a process.
 *
 * The state file holds one event per line, tab-separated fields with \t,
 * \n and \\ escaped; it is rewritten whole (to a temporary file, renamed)
 * after every change, and removed at a clean exit, when nothing is left
 * installed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "daemon.h"
#include "proc/proc-status.h"
#include "dwarf/dwarf-var.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "spec/spec.h"

#ifndef DP_AGENT_PATH
#define DP_AGENT_PATH "/usr/local/lib/liblttng-ust-dynprobe.so"
#endif

/* Filled by main.c from the options, read everywhere. */
struct dpd_config dpd_cfg = {
	.agent_path = DP_AGENT_PATH,
	.poll_ms = 1000,
};

struct dpd_event *dpd_events;

struct dpd_event *dpd_event_find(const char *session, const char *channel, const char *event)
{
	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next)
		if (!strcmp(ev->session, session) && !strcmp(ev->channel, channel) &&
		    !strcmp(ev->event, event))
			return ev;
	return NULL;
}

const char *dpd_event_point_name(const struct dpd_event *ev, const struct dpd_point *pt)
{
	return pt->role == DPD_ROLE_RETURN && ev->nnames > 1 ? ev->names[1] : ev->names[0];
}

void dpd_proc_disown(struct dpd_proc *p, const struct dpd_event *ev)
{
	for (uint32_t j = 0; j < p->nsites; j++)
		dpd_site_disown(&p->sites[j], ev);
	for (uint32_t j = 0; j < p->nholds;)
		if (p->holds[j].ev == ev)
			p->holds[j] = p->holds[--p->nholds];
		else
			j++;
}

void dpd_event_unlink(struct dpd_event *ev)
{
	size_t n = 0, k = 0;
	pid_t *pids;

	for (struct dpd_event **pp = &dpd_events; *pp; pp = &(*pp)->next) {
		if (*pp == ev) {
			*pp = ev->next;
			break;
		}
	}
	ev->unlinked = true;
	dpd_changed();
	/* Patches it could not be taken out of still serve its probes (and
	 * their semaphores stay raised: no event to lower them for).  Each
	 * process's record is its holder's: held in turn (a record that
	 * cannot be listed is swept without: out of memory). */
	for (struct dpd_proc *p = dpd_procs; p; p = p->next)
		n++;
	pids = calloc(n ? n : 1, sizeof(*pids));
	for (struct dpd_proc *p = dpd_procs; p && pids; p = p->next)
		pids[k++] = p->pid;
	for (size_t i = 0; i < (pids ? k : 1); i++) {
		bool held = pids && !dpd_hold(pids[i]);

		for (struct dpd_proc *p = dpd_procs; p; p = p->next)
			if (!pids || p->pid == pids[i])
				dpd_proc_disown(p, ev);
		if (held)
			dpd_unhold(pids[i]);
	}
	free(pids);
}

void dpd_event_free(struct dpd_event *ev)
{
	if (!ev)
		return;
	free(ev->pids);
	free(ev->ctx);
	free(ev->points);
	free(ev->plan);
	dp_spec_sdt_event_release(&ev->sdt);
	dpd_object_put(ev->obj);
	while (ev->shares) {
		struct dpd_share *sh = ev->shares;

		ev->shares = sh->next;
		free(sh);
	}
	free(ev);
}

/* Whether two plan entries place the same hooks the same way. */
static bool same_share(const struct dp_patch *a, const struct dp_patch *b)
{
	return a->method == b->method && a->win.addr == b->win.addr && a->win.len == b->win.len &&
	       a->hop.addr == b->hop.addr && a->hop.len == b->hop.len &&
	       a->npoints == b->npoints &&
	       !memcmp(a->points, b->points, a->npoints * sizeof(a->points[0])) &&
	       !memcmp(a->point_ids, b->point_ids, a->npoints * sizeof(a->point_ids[0]));
}

const struct dp_patch *dpd_event_share(struct dpd_event *ev, const struct dp_patch *pl)
{
	struct dpd_share *sh;

	/* Its own plan's entry when the window and the hooks are those. */
	for (size_t i = 0; i < ev->nplan; i++)
		if (same_share(&ev->plan[i], pl))
			return &ev->plan[i];
	for (sh = ev->shares; sh; sh = sh->next)
		if (same_share(&sh->pl, pl))
			return &sh->pl;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return NULL;
	sh->pl = *pl;
	sh->next = ev->shares;
	ev->shares = sh;
	return &sh->pl;
}

/* What spec/ accepts, the agent (and lttng-ust) can register. */
_Static_assert(DP_SPEC_EVENT_MAX <= DP_NAME_MAX, "event names longer than the agent's");

int dpd_event_names(struct dpd_event *ev, struct dp_err *msg)
{
	struct dp_err err;

	ev->nnames = dp_client_kind_function(ev->kind) ? 2 : 1;
	for (uint32_t i = 0; i < ev->nnames; i++) {
		const char *suffix = !dp_client_kind_function(ev->kind) ? "" :
				     i ? "_return" : "_entry";
		int ret = dp_spec_event_name(ev->event, suffix, ev->names[i],
					     sizeof(ev->names[i]), &err);

		if (ret) {
			dp_err_set(msg, ret, "%s", err.msg);
			return ret;
		}
	}
	return 0;
}

int dpd_event_check_ctx(const struct dpd_event *ev, const char *spec, struct dp_err *msg)
{
	struct dp_ctx c[DP_DWARF_ARGS_MAX];
	size_t n;
	int ret = dpd_resolve_ctx(ev->obj, spec, 0, c, msg);

	/* A variable is looked up at every point: one missing or optimized
	 * out at any of them refuses the context, naming the point. */
	for (uint32_t i = 0; i < ev->npoints && !ret; i++) {
		ret = dpd_resolve_ctx_at(ev->obj, spec, 0, &ev->points[i], c, DP_DWARF_ARGS_MAX,
					 &n, msg);
		if (ret && ev->npoints > 1)
			dp_err_prefix(msg, "at %s 0x%" PRIx64 ": ",
				      ev->points[i].role == DPD_ROLE_ENTRY ? "entry" : "site",
				      ev->points[i].vaddr);
	}
	return ret;
}

/* Some entry (or probe point) of ev can be placed: when every one may be
 * left out (inlined copies, a pattern's functions), not all of them.
 * 0, or -ENOTSUP with the first reason. */
static int some_entry(const struct dpd_event *ev, struct dp_err *msg)
{
	const struct dp_patch *first = NULL;

	for (size_t i = 0; i < ev->nplan; i++) {
		const struct dp_patch *pl = &ev->plan[i];

		for (unsigned k = 0; k < pl->npoints; k++) {
			if (ev->points[pl->point_ids[k]].role == DPD_ROLE_RETURN)
				continue;
			if (pl->method != DP_SITE_REFUSED)
				return 0;
			if (!first)
				first = pl;
		}
	}
	if (!first)
		return 0;
	return dp_err_set(msg, -ENOTSUP, "every entry of %s in %s is refused: the first, "
			  "0x%" PRIx64 ": %s", ev->location, ev->path, first->points[0],
			  dp_reason_str(first->reason));
}

int dpd_event_resolve(struct dpd_event *ev, struct dp_err *msg)
{
	uint64_t *vaddrs;
	int ret;

	ev->ret_state = 0;
	/* By pid: the path as the (first) process sees it (a container's). */
	ev->obj = dpd_object_get_for(ev->path, ev->npids ? (pid_t)ev->pids[0] : 0, msg);
	if (!ev->obj)
		return -ENOENT;
	if (ev->kind == DP_CLIENT_KIND_SDT)
		ret = dpd_resolve_sdt(ev->obj, ev->location, &ev->sdt, &ev->points, &ev->npoints,
				      msg);
	else
		ret = dpd_resolve_location(ev->obj, ev->location, ev->kind, &ev->points,
					   &ev->npoints, ev->note, sizeof(ev->note), msg);
	if (ret)
		return ret;
	/* Every site's arguments compile now, at bias 0: a process only
	 * changes the numbers. */
	for (size_t i = 0; i < ev->sdt.nsites; i++) {
		struct dp_ctx args[DP_SDT_ARGS_MAX];

		ret = dpd_resolve_sdt_args(ev->obj, &ev->sdt, i, 0, args, msg);
		if (ret)
			return ret;
	}
	/* Contexts are checked now, with the object's symbols at bias 0: a
	 * process only changes the numbers. */
	for (uint32_t i = 0; i < ev->nctx; i++) {
		ret = dpd_event_check_ctx(ev, ev->ctx[i], msg);
		if (ret)
			return ret;
	}
	vaddrs = calloc(ev->npoints, sizeof(*vaddrs));
	if (!vaddrs) {
		dp_err_set(msg, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < ev->npoints; i++)
		vaddrs[i] = ev->points[i].vaddr;
	ret = dp_plan_sites_flags(ev->obj->obj, vaddrs, ev->npoints, DPD_PLAN_FLAGS, &ev->plan,
				  &ev->nplan);
	free(vaddrs);
	if (ret) {
		dp_err_set(msg, ret, "the analysis of %s failed: %s", ev->path, strerror(-ret));
		return ret;
	}
	dp_plan_refuse_unsafe_traps(ev->obj->obj, ev->plan, ev->nplan);
	/* The probe point itself (or a function's entry) must be placeable;
	 * return sites (and a pattern's functions) refused alone are reported,
	 * not fatal. */
	for (size_t i = 0; i < ev->nplan; i++) {
		const struct dp_patch *pl = &ev->plan[i];

		if (pl->method != DP_SITE_REFUSED)
			continue;
		for (unsigned k = 0; k < pl->npoints; k++) {
			const struct dpd_point *pt = &ev->points[pl->point_ids[k]];

			if (pt->optional)
				continue;
			dp_err_set(msg, -ENOTSUP, "the site 0x%" PRIx64 " (%s) of %s is refused: "
				   "%s", pt->vaddr, ev->location, ev->path,
				   dp_reason_str(pl->reason));
			return -ENOTSUP;
		}
	}
	return some_entry(ev, msg);
}

/* ---- processes and their patches ----------------------------------------- */

struct dpd_proc *dpd_procs;
struct dpd_proc *dpd_proc_find(pid_t pid)
{
	for (struct dpd_proc *p = dpd_procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

struct dpd_proc *dpd_proc_add(pid_t pid)
{
	struct dpd_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->fd = -1;
	p->next_id = 1;
	p->next = dpd_procs;
	dpd_procs = p;
	return p;
}

void dpd_proc_forget(struct dpd_proc *p)
{
	struct dpd_proc **pp;

	for (pp = &dpd_procs; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	dpd_info("process %d forgotten (%u sites)", (int)p->pid, p->nsites);
	if (p->fd >= 0) {
		dpd_watch_clear(p->pid, p->fd);
		close(p->fd);
	}
	for (uint32_t i = 0; i < p->nprobes; i++)
		free(p->probes[i].sig);
	free(p->probes);
	dp_u64map_free(&p->probe_ix);
	dp_u64map_free(&p->id_ix);
	free(p->sites);
	free(p->leds);
	free(p->code);
	free(p->holds);
	free(p);
}

int dpd_proc_reserve(struct dpd_proc *p, uint32_t probes, uint32_t sites)
{
	int ret = 0;

	if (probes)
		ret = dp_array_reserve(&p->probes, &p->probes_cap,
				       (size_t)p->nprobes + probes - 1, sizeof(*p->probes), 64);
	if (!ret && sites)
		ret = dp_array_reserve(&p->sites, &p->sites_cap, (size_t)p->nsites + sites - 1,
				       sizeof(*p->sites), 16);
	return ret;
}

void dpd_proc_probes_cut(struct dpd_proc *p)
{
	dp_u64map_clear(&p->id_ix);
	p->id_done = 0;
}

/* The first probe with that id, by walking them (ids are unique but for a
 * forged HELLO; id 0, or memory that ran out). */
static const struct dpd_probe *probe_walk(const struct dpd_proc *p, uint32_t id)
{
	for (uint32_t i = 0; i < p->nprobes; i++)
		if (p->probes[i].id == id)
			return &p->probes[i];
	return NULL;
}

const struct dpd_probe *dpd_proc_probe(struct dpd_proc *p, uint32_t id)
{
	uint32_t v;

	/* Probes are appended, or cut from the end (dpd_proc_probes_cut). */
	if (p->id_done > p->nprobes)
		dpd_proc_probes_cut(p);
	for (; p->id_done < p->nprobes; p->id_done++) {
		uint32_t key = p->probes[p->id_done].id;

		if (!key || dp_u64map_get(&p->id_ix, key, &v))
			continue;	/* the first of an id answers */
		if (dp_u64map_put(&p->id_ix, key, p->id_done + 1)) {
			dpd_proc_probes_cut(p);
			return probe_walk(p, id);
		}
	}
	if (!id)
		return probe_walk(p, id);
	return dp_u64map_get(&p->id_ix, id, &v) && v <= p->nprobes && p->probes[v - 1].id == id ?
	       &p->probes[v - 1] : NULL;
}

bool dpd_site_owned(const struct dpd_site *s, const struct dpd_event *ev)
{
	for (uint32_t i = 0; i < s->nowners; i++)
		if (s->owners[i].ev == ev)
			return true;
	return false;
}

void dpd_site_disown(struct dpd_site *s, const struct dpd_event *ev)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < s->nowners; i++)
		if (s->owners[i].ev != ev)
			s->owners[k++] = s->owners[i];
	s->nowners = k;
}

uint32_t dpd_proc_count_sites(const struct dpd_proc *p, const struct dpd_event *ev,
			      uint32_t *njump, uint32_t *nint3)
{
	uint32_t n = 0;

	*njump = *nint3 = 0;
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dpd_site *s = &p->sites[i];

		if (!s->installed || (ev && !dpd_site_owned(s, ev)))
			continue;
		n++;
		if (s->patch.method == DP_APP_METHOD_INT3)
			(*nint3)++;
		else
			(*njump)++;
	}
	return n;
}

/* The window of plan entry pl at load bias `bias`, as the agent records it. */
void dpd_patch_window(const struct dp_patch *pl, uint64_t bias, struct dp_app_patch *ap)
{
	memset(ap, 0, sizeof(*ap));
	ap->site = pl->win.addr + bias;
	ap->method = pl->method == DP_SITE_INT3	    ? DP_APP_METHOD_INT3 :
		     pl->method == DP_SITE_REDIRECT ? DP_APP_METHOD_REDIRECT :
						      DP_APP_METHOD_JUMP;
	ap->len = pl->win.len;
	memcpy(ap->orig, pl->win.bytes, pl->win.len);
	/* A led window's hop serves its branches: a write of its led. */
	if (pl->method == DP_SITE_JUMP && pl->hop.len && !pl->led) {
		ap->hop = pl->hop.addr + bias;
		ap->hop_len = pl->hop.len;
		memcpy(ap->hop_orig, pl->hop.bytes, pl->hop.len);
	}
}

void dpd_patch_led(const struct dp_patch *pl, struct dp_object *obj, uint64_t bias,
		   struct dpd_led *led)
{
	memset(led, 0, sizeof(*led));
	if (pl->method != DP_SITE_REDIRECT && !(pl->method == DP_SITE_JUMP && pl->led))
		return;
	led->want = (uint8_t)(pl->nredirects + (pl->hop.len ? 1 : 0));
	for (unsigned i = 0; i < pl->nredirects && led->nwrites < DP_APP_MAX_WRITES; i++) {
		const struct dp_redirect *r = &pl->redirects[i];
		struct dp_app_write *w = &led->w[led->nwrites];
		const uint8_t *code = dp_elf_code(dp_object_elf(obj), r->addr, r->len);

		/* Never planned (a branch of more than 8 bytes): the patch is
		 * refused, its led being short of `want` (stage.c). */
		if (!code || r->len > DP_APP_MAX_WRITE_LEN || (r->disp_len != 1 && r->disp_len != 4) ||
		    r->disp_off + r->disp_len != r->len ||
		    memcmp(code + r->disp_off, r->bytes, r->disp_len))
			continue;
		w->addr = r->addr + bias;
		w->kind = DP_APP_WRITE_BRANCH;
		w->len = r->len;
		memcpy(w->orig, code, r->len);
		led->disp_len[led->nwrites] = r->disp_len;
		led->to[led->nwrites++] = r->to;
	}
	if (pl->hop.len && led->nwrites < DP_APP_MAX_WRITES) {
		struct dp_app_write *w = &led->w[led->nwrites];

		w->addr = pl->hop.addr + bias;
		w->kind = DP_APP_WRITE_HOP;
		w->len = DP_APP_HOP_LEN;
		memcpy(w->orig, pl->hop.bytes, DP_APP_HOP_LEN);
		led->to[led->nwrites++] = pl->hop_to;
	}
}

const struct dpd_led *dpd_site_led(const struct dpd_proc *p, const struct dpd_site *s)
{
	return s->led && s->led <= p->nleds ? &p->leds[s->led - 1] : NULL;
}

int dpd_site_set_led(struct dpd_proc *p, struct dpd_site *s, const struct dpd_led *led)
{
	s->led = 0;
	if (!led || (!led->nwrites && !led->partial))
		return 0;
	if (DP_ARRAY_RESERVE(p->leds, p->leds_cap, p->nleds, 16))
		return -ENOMEM;
	p->leds[p->nleds++] = *led;
	s->led = p->nleds;
	return 0;
}

/* Whether two leds write the same bytes (NULL: none). */
static bool same_led(const struct dpd_led *a, const struct dpd_led *b)
{
	unsigned na = a ? a->nwrites : 0, nb = b ? b->nwrites : 0;

	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++)
		if (a->w[i].addr != b->w[i].addr || a->w[i].len != b->w[i].len ||
		    a->w[i].kind != b->w[i].kind)
			return false;
	return true;
}

/* Whether two patches overwrite the same bytes the same way: then they can
 * be one patch serving the probes of both. */
bool dpd_same_window(const struct dp_app_patch *a, const struct dpd_led *la,
		     const struct dp_app_patch *b, const struct dpd_led *lb)
{
	return a->site == b->site && a->method == b->method && a->len == b->len &&
	       a->hop == b->hop && a->hop_len == b->hop_len && same_led(la, lb);
}

/* Whether two byte ranges meet. */
static bool meets(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/* Whether a's window or hop meets a write of lb. */
static bool meets_led(const struct dp_app_patch *a, const struct dpd_led *lb)
{
	for (unsigned i = 0; lb && i < lb->nwrites; i++)
		if (meets(a->site, a->len, lb->w[i].addr, lb->w[i].len) ||
		    meets(a->hop, a->hop_len, lb->w[i].addr, lb->w[i].len))
			return true;
	return false;
}

/* Whether two patches write some byte in common, hops included. */
bool dpd_patches_meet(const struct dp_app_patch *a, const struct dpd_led *la,
		      const struct dp_app_patch *b, const struct dpd_led *lb)
{
	if (meets(a->site, a->len, b->site, b->len) ||
	    meets(a->site, a->len, b->hop, b->hop_len) ||
	    meets(a->hop, a->hop_len, b->site, b->len) ||
	    meets(a->hop, a->hop_len, b->hop, b->hop_len) || meets_led(a, lb) ||
	    meets_led(b, la))
		return true;
	for (unsigned i = 0; la && lb && i < la->nwrites; i++)
		for (unsigned k = 0; k < lb->nwrites; k++)
			if (meets(la->w[i].addr, la->w[i].len, lb->w[k].addr, lb->w[k].len))
				return true;
	return false;
}

static int site_cmp(const void *a, const void *b, void *arg)
{
	const struct dpd_site *sites = arg;
	uint64_t x = sites[*(const uint32_t *)a].patch.site, y = sites[*(const uint32_t *)b].patch.site;

	return x < y ? -1 : x > y;
}

int dpd_site_ix_build(const struct dpd_proc *p, struct dpd_site_ix *ix)
{
	ix->n = p->nsites;
	ix->idx = malloc((ix->n ? ix->n : 1) * sizeof(*ix->idx));
	if (!ix->idx)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nsites; i++)
		ix->idx[i] = i;
	qsort_r(ix->idx, ix->n, sizeof(*ix->idx), site_cmp, p->sites);
	ix->nleds = 0;
	ix->leds = malloc((ix->n ? ix->n : 1) * sizeof(*ix->leds));
	if (!ix->leds) {
		free(ix->idx);
		ix->idx = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->nsites; i++)
		if (p->sites[i].installed && p->sites[i].led)
			ix->leds[ix->nleds++] = i;
	return 0;
}

void dpd_site_ix_free(struct dpd_site_ix *ix)
{
	free(ix->idx);
	free(ix->leds);
	ix->idx = NULL;
	ix->leds = NULL;
	ix->n = ix->nleds = 0;
}

/* The one of site i that dpd_site_meeting looks for, or NULL. */
static const struct dpd_site *meeting(const struct dpd_proc *p, uint32_t i,
				      const struct dp_app_patch *ap, const struct dpd_led *led,
				      bool same)
{
	const struct dpd_site *s = &p->sites[i];
	const struct dpd_led *sl = dpd_site_led(p, s);

	if (!s->installed || !dpd_patches_meet(&s->patch, sl, ap, led) ||
	    dpd_same_window(&s->patch, sl, ap, led) != same)
		return NULL;
	return s;
}

const struct dpd_site *dpd_site_meeting(const struct dpd_proc *p, const struct dpd_site_ix *ix,
					const struct dp_app_patch *ap, const struct dpd_led *led,
					bool same, uint32_t *at)
{
	unsigned nw = led ? led->nwrites : 0;

	for (unsigned r = 0; r <= nw; r++) {
		uint64_t a = r < nw ? led->w[r].addr : ap->site;
		size_t from, to;

		dpd_site_ix_range(p, ix, a > DPD_PATCH_REACH * 2 ? a - DPD_PATCH_REACH * 2 : 0,
				  a + DPD_PATCH_REACH * 2, &from, &to);
		for (size_t k = from; k < to; k++)
			if (meeting(p, ix->idx[k], ap, led, same)) {
				*at = ix->idx[k];
				return &p->sites[*at];
			}
	}
	for (size_t k = 0; k < ix->nleds; k++)
		if (meeting(p, ix->leds[k], ap, led, same)) {
			*at = ix->leds[k];
			return &p->sites[*at];
		}
	return NULL;
}

void dpd_site_ix_range(const struct dpd_proc *p, const struct dpd_site_ix *ix, uint64_t lo,
		       uint64_t hi, size_t *from, size_t *to)
{
	size_t a = 0, b = ix->n;

	/* The first record at lo or after. */
	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (p->sites[ix->idx[m]].patch.site < lo)
			a = m + 1;
		else
			b = m;
	}
	*from = a;
	while (a < ix->n && p->sites[ix->idx[a]].patch.site <= hi)
		a++;
	*to = a;
}

const struct dp_patch *dpd_event_window(const struct dpd_event *ev, uint64_t bias,
					const struct dp_app_patch *ap, const struct dpd_led *led)
{
	for (size_t i = 0; i < ev->nplan; i++) {
		struct dp_app_patch w;
		struct dpd_led wl;

		if (ev->plan[i].method == DP_SITE_REFUSED || ev->plan[i].win.addr + bias != ap->site)
			continue;
		dpd_patch_window(&ev->plan[i], bias, &w);
		dpd_patch_led(&ev->plan[i], ev->obj->obj, bias, &wl);
		if (dpd_same_window(&w, &wl, ap, led))
			return &ev->plan[i];
	}
	return NULL;
}

/* ---- the state file ---------------------------------------------------- */

static void put_field(FILE *f, const char *s)
{
	fputc('\t', f);
	for (; *s; s++) {
		if (*s == '\t')
			fputs("\\t", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '\\')
			fputs("\\\\", f);
		else
			fputc(*s, f);
	}
}

void dpd_state_save(void)
{
	char tmp[sizeof(dpd_cfg.state_path) + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", dpd_cfg.state_path);
	f = fopen(tmp, "we");
	if (!f) {
		dpd_err("cannot write %s: %s", tmp, strerror(errno));
		return;
	}
	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		char num[64];

		fprintf(f, "event\t%u", (unsigned)ev->owner);
		put_field(f, ev->session);
		put_field(f, ev->channel);
		put_field(f, ev->event);
		fprintf(f, "\t%u\t%d", ev->kind, ev->enabled);
		put_field(f, ev->location);
		put_field(f, ev->path);
		fprintf(f, "\t%u", ev->npids);
		for (uint32_t i = 0; i < ev->npids; i++) {
			snprintf(num, sizeof(num), "%u", ev->pids[i]);
			put_field(f, num);
		}
		fprintf(f, "\t%u", ev->nctx);
		for (uint32_t i = 0; i < ev->nctx; i++)
			put_field(f, ev->ctx[i]);
		/* Added later: a daemon that does not know it skips it. */
		if (ev->flags)
			fprintf(f, "\tflags=%u", ev->flags);
		fputc('\n', f);
	}
	if (fclose(f) || rename(tmp, dpd_cfg.state_path))
		dpd_err("cannot write %s: %s", dpd_cfg.state_path, strerror(errno));
}

/* Splits a line into unescaped fields, in place. */
static size_t split(char *line, char **fields, size_t max)
{
	size_t n = 0;
	char *r = line, *w = line;

	fields[n++] = w;
	while (*r && *r != '\n') {
		if (*r == '\t') {
			*w++ = '\0';
			r++;
			if (n == max)
				return n;
			fields[n++] = w;
		} else if (*r == '\\' && r[1]) {
			*w++ = r[1] == 't' ? '\t' : r[1] == 'n' ? '\n' : r[1];
			r += 2;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return n;
}

static struct dpd_event *parse_event(char **f, size_t n)
{
	struct dpd_event *ev;
	size_t at = 9;

	if (n < 10 || strcmp(f[0], "event"))
		return NULL;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return NULL;
	ev->owner = (uid_t)strtoul(f[1], NULL, 10);
	snprintf(ev->session, sizeof(ev->session), "%s", f[2]);
	snprintf(ev->channel, sizeof(ev->channel), "%s", f[3]);
	snprintf(ev->event, sizeof(ev->event), "%s", f[4]);
	ev->kind = (uint8_t)strtoul(f[5], NULL, 10);
	ev->enabled = f[6][0] == '1';
	snprintf(ev->location, sizeof(ev->location), "%s", f[7]);
	snprintf(ev->path, sizeof(ev->path), "%s", f[8]);
	ev->npids = (uint32_t)strtoul(f[at++], NULL, 10);
	if (ev->npids > DP_CLIENT_MAX_PIDS || at + ev->npids >= n)
		goto bad;
	ev->pids = calloc(ev->npids ? ev->npids : 1, sizeof(*ev->pids));
	if (!ev->pids)
		goto bad;
	for (uint32_t i = 0; i < ev->npids; i++)
		ev->pids[i] = (uint32_t)strtoul(f[at++], NULL, 10);
	ev->nctx = (uint32_t)strtoul(f[at++], NULL, 10);
	if (ev->nctx > DP_CLIENT_MAX_CTX || at + ev->nctx > n)
		goto bad;
	ev->ctx = calloc(ev->nctx ? ev->nctx : 1, sizeof(*ev->ctx));
	if (!ev->ctx)
		goto bad;
	for (uint32_t i = 0; i < ev->nctx; i++)
		snprintf(ev->ctx[i], sizeof(ev->ctx[i]), "%s", f[at++]);
	if (at < n && !strncmp(f[at], "flags=", 6))
		ev->flags = (uint32_t)strtoul(f[at] + 6, NULL, 10) & DP_CLIENT_EVENT_FLAGS_ALL;
	dpd_follow_flags_set(ev->flags);
	return ev;
bad:
	dpd_event_free(ev);
	return NULL;
}

void dpd_state_load(void)
{
	FILE *f = fopen(dpd_cfg.state_path, "re");
	struct dpd_event **tail = &dpd_events;
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		char *fields[16 + DP_CLIENT_MAX_PIDS + DP_CLIENT_MAX_CTX];
		size_t n = split(line, fields, sizeof(fields) / sizeof(fields[0]));
		struct dpd_event *ev = parse_event(fields, n);
		struct dp_err msg = DP_ERR_INIT;

		if (!ev) {
			dpd_err("%s: a line that does not parse was skipped", dpd_cfg.state_path);
			continue;
		}
		if (dpd_event_names(ev, &msg) || dpd_event_resolve(ev, &msg)) {
			dpd_err("event %s of session %s dropped: %s", ev->event, ev->session,
				msg.msg);
			dpd_event_free(ev);
			continue;
		}
		*tail = ev;
		tail = &ev->next;
		dpd_info("recovered event %s of session %s (%s %s)", ev->names[0], ev->session,
			 ev->location, ev->path);
	}
	free(line);
	fclose(f);
}

bool dpd_event_reaches(const struct dpd_event *ev, pid_t pid)
{
	for (int up = 0; pid > 1 && up < 64; up++) {
		struct dp_proc_status st;

		for (uint32_t i = 0; i < ev->npids; i++)
			if ((pid_t)ev->pids[i] == pid)
				return true;
		if (dp_proc_status_read(pid, 0, &st))
			return false;
		pid = st.ppid;
	}
	return false;
}
