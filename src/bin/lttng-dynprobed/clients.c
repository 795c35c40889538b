/*
 * The client protocol's requests (proto/client.h): who may ask what
 * (SO_PEERCRED: a client targets only processes it could ptrace itself, and
 * sees only its own events; root everything), and what each request does to
 * the daemon's events and the processes.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/proc-status.h"

/* ---- helpers ---------------------------------------------------------- */

static void user_name(uid_t uid, char *out, size_t size)
{
	struct passwd pw, *res = NULL;
	char buf[1024];

	if (!getpwuid_r(uid, &pw, buf, sizeof(buf), &res) && res)
		snprintf(out, size, "%s (uid %u)", res->pw_name, (unsigned)uid);
	else
		snprintf(out, size, "uid %u", (unsigned)uid);
}

/* Whether the client may probe pid.  0 or -errno with a message. */
static int check_pid(const struct dpd_client *c, pid_t pid, struct dp_err *msg)
{
	struct dp_proc_status st;
	const uid_t *uid = st.uid;	/* real, effective, saved */
	pid_t tgid;
	char who[128], you[128];

	/* The owner and the thread group of pid. */
	if (pid <= 0 || dp_proc_status_read(pid, 0, &st) || !st.tgid) {
		dp_err_set(msg, -ESRCH, "no process %d: give the pid of a running process (ps -e "
			   "lists them)", (int)pid);
		return -ESRCH;
	}
	tgid = st.tgid;
	if (tgid != pid) {
		dp_err_set(msg, -EINVAL, "%d is a thread of process %d: give the process id %d",
			   (int)pid, (int)tgid, (int)tgid);
		return -EINVAL;
	}
	if (pid == getpid()) {
		dp_err_set(msg, -EINVAL, "process %d is lttng-dynprobed itself: it cannot be "
			   "probed", (int)pid);
		return -EINVAL;
	}
	if (c->uid == 0)
		return 0;
	if (uid[0] == c->uid && (uid[1] != c->uid || uid[2] != c->uid))
		return dpd_perm_peer(pid, c->uid, c->gid, false, msg);	/* set-user-ID */
	if (uid[0] != c->uid || uid[1] != c->uid || uid[2] != c->uid) {
		user_name(uid[0] != c->uid ? uid[0] : uid[1] != c->uid ? uid[1] : uid[2], who,
			  sizeof(who));
		user_name(c->uid, you, sizeof(you));
		dp_err_set(msg, -EPERM, "process %d belongs to %s, not to you (%s): only its "
			   "owner or root may probe it", (int)pid, who, you);
		return -EPERM;
	}
	/* Its own user's, but maybe still not one it could trace. */
	return dpd_perm_peer(pid, c->uid, c->gid, false, msg);
}

static bool may_see(const struct dpd_client *c, const struct dpd_event *ev)
{
	return c->uid == 0 || ev->owner == c->uid;
}

/* An event by (session, channel, name as typed or as lttng names it). */
static struct dpd_event *find_event(const struct dpd_client *c, const char *session,
				    const char *channel, const char *event)
{
	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		if (!may_see(c, ev) || strcmp(ev->session, session) ||
		    strcmp(ev->channel, channel))
			continue;
		if (!strcmp(ev->event, event))
			return ev;
		for (uint32_t i = 0; i < ev->nnames; i++)
			if (!strcmp(ev->names[i], event))
				return ev;
	}
	return NULL;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static void set_report(struct dp_client_report *r, int status, const struct dp_err *msg)
{
	r->status = status > 0 ? -status : status;
	snprintf(r->message, sizeof(r->message), "%s", msg->msg);
}

static void add_names(struct dp_client_report *r, const struct dpd_event *ev)
{
	for (uint32_t i = 0; i < ev->nnames; i++)
		if (r->nevents < DP_CLIENT_MAX_NAMES)
			dp_client_report_add_event(r, ev->names[i]);
}

/* Installs ev in its processes (explicit pids, or every mapper).  With
 * explicit pids, the first failure is returned (the caller rolls back). */
static int install_all(struct dpd_event *ev, struct dp_client_report *r, struct dp_err *msg)
{
	pid_t *pids = NULL;
	size_t n = 0;
	int ret = 0;

	if (ev->npids) {
		for (uint32_t i = 0; i < ev->npids && !ret; i++) {
			struct dp_client_proc *rp = dp_client_report_add_proc(r);
			struct dp_client_proc tmp;

			if (!rp) {
				memset(&tmp, 0, sizeof(tmp));
				rp = &tmp;
			}
			ret = dpd_install(ev, (pid_t)ev->pids[i], rp);
			if (ret)
				dp_err_set(msg, ret, "%s", rp->message);
			if (rp == &tmp)
				free(tmp.sites);
		}
		return ret;
	}
	dpd_find_mappers(ev, &pids, &n);
	for (size_t i = 0; i < n; i++) {
		struct dp_client_proc *rp = dp_client_report_add_proc(r);
		struct dp_client_proc tmp;

		if (!rp) {
			memset(&tmp, 0, sizeof(tmp));
			rp = &tmp;
		}
		dpd_install(ev, pids[i], rp);
		if (rp == &tmp)
			free(tmp.sites);
	}
	free(pids);
	if (!n)
		dp_err_set(msg, 0, "no process maps %s now: the probes will be installed in "
				   "processes that start with the agent preloaded (lttng trace)",
			   ev->path);
	return 0;
}

static bool same_spec(const struct dpd_event *ev, const struct dp_client_enable *e)
{
	if (ev->kind != e->kind || strcmp(ev->location, e->location) || strcmp(ev->path, e->path) ||
	    ev->npids != e->npids)
		return false;
	for (uint32_t i = 0; i < e->npids; i++)
		if (ev->pids[i] != e->pids[i])
			return false;
	/* Contexts added later (ADD_CONTEXT) are the event's own: an ENABLE
	 * that repeats the first ones is the same event. */
	if (e->nctx > ev->nctx)
		return false;
	for (uint32_t i = 0; i < e->nctx; i++)
		if (strcmp(ev->ctx[i], e->ctx[i]))
			return false;
	return true;
}

/* ---- requests --------------------------------------------------------- */

/*
 * ENABLE up to installing: the event to install (*fresh: created and listed
 * now, to be dropped again if installing fails), or NULL with r set.
 */
static struct dpd_event *enable_begin(const struct dpd_client *c,
				      const struct dp_client_enable *e,
				      struct dp_client_report *r, bool *fresh)
{
	struct dp_err msg = DP_ERR_INIT;
	struct dpd_event *ev;
	int ret;

	*fresh = false;
	if (has_control(e->session) || has_control(e->channel) || has_control(e->event) ||
	    has_control(e->location) || has_control(e->path)) {
		dp_err_set(&msg, -EINVAL, "names, locations and paths may not hold control "
			   "characters");
		set_report(r, -EINVAL, &msg);
		return NULL;
	}
	if (e->path[0] != '/') {
		dp_err_set(&msg, -EINVAL, "the path '%s' is not absolute: give the object's full "
			   "path", e->path);
		set_report(r, -EINVAL, &msg);
		return NULL;
	}
	while ((ev = find_event(c, e->session, e->channel, e->event)) && dpd_event_hold(ev) == -ENOENT)
		;	/* unlinked while we waited: look again */
	if (ev) {
		if (!same_spec(ev, e)) {
			dpd_event_unhold(ev);
			dp_err_set(&msg, -EEXIST, "event '%s' already exists in channel %s of "
				   "session %s with another spec (%s in %s): give it another "
				   "name, or destroy the session", e->event, e->channel, e->session,
				   ev->location, ev->path);
			set_report(r, -EEXIST, &msg);
			return NULL;
		}
		for (uint32_t i = 0; i < ev->npids; i++) {
			ret = check_pid(c, (pid_t)ev->pids[i], &msg);
			if (ret) {
				dpd_event_unhold(ev);
				set_report(r, ret, &msg);
				return NULL;
			}
		}
		add_names(r, ev);
		ev->enabled = true;
		return ev;
	}

	for (uint32_t i = 0; i < e->npids; i++) {
		ret = check_pid(c, (pid_t)e->pids[i], &msg);
		if (ret) {
			set_report(r, ret, &msg);
			return NULL;
		}
	}
	ev = calloc(1, sizeof(*ev));
	if (!ev) {
		dp_err_set(&msg, -ENOMEM, "out of memory");
		set_report(r, -ENOMEM, &msg);
		return NULL;
	}
	ev->owner = c->uid;
	snprintf(ev->session, sizeof(ev->session), "%s", e->session);
	snprintf(ev->channel, sizeof(ev->channel), "%s", e->channel);
	snprintf(ev->event, sizeof(ev->event), "%s", e->event);
	ev->kind = e->kind;
	snprintf(ev->location, sizeof(ev->location), "%s", e->location);
	snprintf(ev->path, sizeof(ev->path), "%s", e->path);
	ev->npids = e->npids;
	ev->pids = calloc(e->npids ? e->npids : 1, sizeof(*ev->pids));
	ev->nctx = e->nctx;
	ev->ctx = calloc(e->nctx ? e->nctx : 1, sizeof(*ev->ctx));
	if (!ev->pids || !ev->ctx) {
		dpd_event_free(ev);
		dp_err_set(&msg, -ENOMEM, "out of memory");
		set_report(r, -ENOMEM, &msg);
		return NULL;
	}
	if (e->npids)
		memcpy(ev->pids, e->pids, e->npids * sizeof(*ev->pids));
	if (e->nctx)
		memcpy(ev->ctx, e->ctx, e->nctx * sizeof(*ev->ctx));
	ret = dpd_event_names(ev, &msg);
	if (!ret)
		ret = dpd_event_resolve(ev, &msg);
	if (ret) {
		dpd_event_free(ev);
		set_report(r, ret, &msg);
		return NULL;
	}
	add_names(r, ev);
	/* Listed before installing: agents that say HELLO meanwhile (an
	 * injected one, a process starting) find it.  Held by this request
	 * until it ends. */
	dpd_event_hold_new(ev);
	ev->enabled = true;
	ev->next = dpd_events;
	dpd_events = ev;
	*fresh = true;
	return ev;
}

/* ENABLE after installing ev, which gave ret (and msg); the state is saved
 * when `save` (a batch saves it once).  The event's hold ends here. */
static void enable_end(struct dpd_event *ev, bool fresh, int ret, const struct dp_err *msg,
		       struct dp_client_report *r, bool save)
{
	if (!fresh) {
		if (ret && ev->npids) {
			/* Off first: no one else installs it meanwhile. */
			ev->enabled = false;
			dpd_remove_everywhere(ev, NULL);
		}
		ev->enabled = !ret;
		if (save)
			dpd_state_save();
		set_report(r, ret, msg);
		dpd_event_unhold(ev);
		return;
	}
	if (ret) {
		/* With explicit pids it is all or nothing. */
		ev->enabled = false;
		dpd_remove_everywhere(ev, NULL);
		dpd_event_unlink(ev);
		dpd_event_unhold(ev);
		dpd_event_drop(ev);
		set_report(r, ret, msg);
		return;
	}
	if (save)
		dpd_state_save();
	dpd_info("enabled %s (%s in %s) for session %s", ev->names[0], ev->location, ev->path,
		 ev->session);
	set_report(r, 0, msg);
	/* What the resolution found worth saying (copies not probed, lines
	 * sharing an address), after the install's own words. */
	if (ev->note[0]) {
		size_t used = strlen(r->message);

		snprintf(r->message + used, sizeof(r->message) - used, "%s%s", used ? "; " : "",
			 ev->note);
	}
	dpd_event_unhold(ev);
}

static void do_enable(const struct dpd_client *c, const struct dp_client_enable *e,
		      struct dp_client_report *r)
{
	struct dp_err msg = DP_ERR_INIT;
	struct dpd_event *ev;
	bool fresh;
	int ret;

	ev = enable_begin(c, e, r, &fresh);
	if (!ev)
		return;
	ret = install_all(ev, r, &msg);
	enable_end(ev, fresh, ret, &msg, r, true);
}

/*
 * ENABLE_MANY: each spec as its own ENABLE up to installing, then each
 * process installed once with every event (one stop of its threads), then
 * each event finished as ENABLE would (with explicit pids, an event whose
 * install failed is removed everywhere).
 */
static void do_enable_many(const struct dpd_client *c, const struct dp_client_enable_many *m,
			   struct dp_client_reports *out)
{
	struct dpd_event **evs = NULL, **held = NULL;
	size_t nheld = 0;
	struct dp_client_proc **rps = NULL;
	uint32_t *idx = NULL;
	bool *fresh = NULL;
	struct dp_err msg = DP_ERR_INIT;
	pid_t *found = NULL;
	size_t k = 0, npids = 0;
	int ret = 0;

	if (!m->nspecs)
		return;
	out->reports = calloc(m->nspecs, sizeof(*out->reports));
	evs = calloc(m->nspecs, sizeof(*evs));
	rps = calloc(m->nspecs, sizeof(*rps));
	idx = calloc(m->nspecs, sizeof(*idx));
	fresh = calloc(m->nspecs, sizeof(*fresh));
	held = calloc(m->nspecs, sizeof(*held));
	if (!out->reports || !evs || !rps || !idx || !fresh || !held) {
		free(out->reports);
		out->reports = NULL;
		goto done;
	}
	out->nreports = m->nspecs;
	/* The events that exist are held all at once (holds taken one by one
	 * could wait for each other across two requests); enable_begin then
	 * holds them again, without waiting. */
	do {
		nheld = 0;
		for (uint32_t i = 0; i < m->nspecs; i++) {
			struct dpd_event *ev = find_event(c, m->session, m->channel,
							  m->specs[i].event);

			if (ev)
				held[nheld++] = ev;
		}
	} while (dpd_events_hold(held, nheld) == -ENOENT);
	for (uint32_t i = 0; i < m->nspecs; i++) {
		struct dp_client_enable e = {
			.kind = m->specs[i].kind, .npids = m->npids, .pids = m->pids,
			.nctx = m->nctx, .ctx = m->ctx,
		};
		struct dp_client_report *r = &out->reports[i];
		bool twice = false;

		/* One event twice in a batch would be patched twice. */
		for (uint32_t j = 0; j < i && !twice; j++)
			twice = !strcmp(m->specs[j].event, m->specs[i].event);
		if (twice) {
			struct dp_err tm;

			dp_err_set(&tm, -EINVAL, "event '%s' is given twice in this request",
				   m->specs[i].event);
			set_report(r, -EINVAL, &tm);
			continue;
		}
		snprintf(e.session, sizeof(e.session), "%s", m->session);
		snprintf(e.channel, sizeof(e.channel), "%s", m->channel);
		snprintf(e.path, sizeof(e.path), "%s", m->path);
		snprintf(e.event, sizeof(e.event), "%s", m->specs[i].event);
		snprintf(e.location, sizeof(e.location), "%s", m->specs[i].location);
		evs[k] = enable_begin(c, &e, r, &fresh[k]);
		if (evs[k])
			idx[k++] = i;
	}
	if (!k)
		goto done;

	if (m->npids)
		npids = m->npids;
	else
		dpd_find_mappers(evs[0], &found, &npids);
	for (size_t j = 0; j < npids && !ret; j++) {
		pid_t pid = m->npids ? (pid_t)m->pids[j] : found[j];

		for (size_t e = 0; e < k; e++) {
			rps[e] = dp_client_report_add_proc(&out->reports[idx[e]]);
			if (!rps[e]) {
				/* Without a place to report to, nothing is
				 * installed in this process. */
				for (size_t f = 0; f < e; f++)
					out->reports[idx[f]].nprocs--;
				ret = -ENOMEM;
				dp_err_set(&msg, -ENOMEM, "out of memory");
				break;
			}
		}
		if (ret)
			break;
		ret = dpd_install_many(evs, k, pid, rps);
		if (ret)
			dp_err_set(&msg, ret, "%s", rps[0]->message);
		/* Without explicit pids a process that fails is only
		 * reported: the others go on. */
		if (!m->npids)
			ret = 0;
	}
	if (!m->npids && !npids)
		dp_err_set(&msg, 0, "no process maps %s now: the probes will be installed in "
				    "processes that start with the agent preloaded (lttng trace)",
			   m->path);
	for (size_t e = 0; e < k; e++)
		enable_end(evs[e], fresh[e], ret, &msg, &out->reports[idx[e]], false);
	dpd_state_save();
done:
	for (size_t i = 0; i < nheld; i++)
		dpd_event_unhold(held[i]);
	free(held);
	free(found);
	free(evs);
	free(rps);
	free(idx);
	free(fresh);
}

static void do_disable(const struct dpd_client *c, const struct dp_client_event_ref *d,
		       struct dp_client_report *r)
{
	struct dp_err msg = DP_ERR_INIT;
	struct dpd_event *ev;

	while ((ev = find_event(c, d->session, d->channel, d->event)) && dpd_event_hold(ev) == -ENOENT)
		;	/* unlinked while we waited: look again */
	if (!ev) {
		dp_err_set(&msg, -ENOENT, "no dynamic event '%s' in channel %s of session %s",
			   d->event, d->channel, d->session);
		set_report(r, -ENOENT, &msg);
		return;
	}
	add_names(r, ev);
	ev->enabled = false;
	dpd_remove_everywhere(ev, r);
	dpd_state_save();
	set_report(r, 0, &msg);
	dpd_event_unhold(ev);
}

static void do_add_context(const struct dpd_client *c, const struct dp_client_add_context *a,
			   struct dp_client_report *r)
{
	struct dp_err msg = DP_ERR_INIT;
	struct dpd_event *match[256];
	size_t n;
	int ret = 0;

	do {
		n = 0;
		for (struct dpd_event *ev = dpd_events; ev && n < 256; ev = ev->next) {
			if (!may_see(c, ev) || strcmp(ev->session, a->session) ||
			    strcmp(ev->channel, a->channel))
				continue;
			if (a->event[0] && ev != find_event(c, a->session, a->channel, a->event))
				continue;
			match[n++] = ev;
		}
	} while (dpd_events_hold(match, n) == -ENOENT);
	if (!n) {
		if (a->event[0])
			dp_err_set(&msg, -ENOENT, "no dynamic event '%s' in channel %s of session "
				   "%s", a->event, a->channel, a->session);
		else
			dp_err_set(&msg, -ENOENT, "no dynamic event in channel %s of session %s",
				   a->channel, a->session);
		set_report(r, -ENOENT, &msg);
		return;
	}
	/* Everything is checked before anything changes. */
	for (size_t i = 0; i < n && !ret; i++) {
		struct dpd_event *ev = match[i];

		if (ev->nctx + a->nctx > DP_CLIENT_MAX_CTX) {
			dp_err_set(&msg, -E2BIG, "event %s would have more than %d contexts",
				   ev->names[0], DP_CLIENT_MAX_CTX);
			ret = -E2BIG;
			break;
		}
		for (uint32_t k = 0; k < a->nctx && !ret; k++) {
			struct dp_ctx nc, oc;

			ret = dpd_resolve_ctx(ev->obj, a->ctx[k], 0, &nc, &msg);
			if (!ret)
				ret = dpd_event_check_ctx(ev, a->ctx[k], &msg);
			for (uint32_t j = 0; j < ev->nctx + k && !ret; j++) {
				const char *spec = j < ev->nctx ? ev->ctx[j] : a->ctx[j - ev->nctx];

				if (dpd_resolve_ctx(ev->obj, spec, 0, &oc, &msg))
					continue;
				if (!strcmp(oc.name, nc.name) && nc.kind != DP_CTX_REGS) {
					dp_err_set(&msg, -EEXIST, "event %s already records a "
						   "field '%s' (context '%s'): choose another name",
						   ev->names[0], nc.name, spec);
					ret = -EEXIST;
				}
			}
		}
	}
	if (ret) {
		set_report(r, ret, &msg);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct dpd_event *ev = match[i];
		char (*v)[DP_CLIENT_CTX_MAX] = realloc(ev->ctx, (ev->nctx + a->nctx) * sizeof(*v));

		if (!v) {
			dp_err_set(&msg, -ENOMEM, "out of memory");
			set_report(r, -ENOMEM, &msg);
			goto out;
		}
		ev->ctx = v;
		memcpy(ev->ctx + ev->nctx, a->ctx, a->nctx * sizeof(*v));
		ev->nctx += a->nctx;
		ev->layout++;
		if (r->nevents < DP_CLIENT_MAX_NAMES)
			add_names(r, ev);
		/* A new field layout is a new event class: the probes are
		 * defined again and the sites re-patched. */
		if (ev->enabled) {
			dpd_remove_everywhere(ev, NULL);
			install_all(ev, r, &msg);
		}
	}
	dpd_state_save();
	set_report(r, 0, &msg);
out:
	for (size_t i = 0; i < n; i++)
		dpd_event_unhold(match[i]);
}

static int fill_event(struct dp_client_event *out, const struct dpd_event *ev)
{
	snprintf(out->session, sizeof(out->session), "%s", ev->session);
	snprintf(out->channel, sizeof(out->channel), "%s", ev->channel);
	snprintf(out->event, sizeof(out->event), "%s", ev->event);
	out->kind = ev->kind;
	snprintf(out->location, sizeof(out->location), "%s", ev->location);
	snprintf(out->path, sizeof(out->path), "%s", ev->path);
	out->enabled = ev->enabled;
	out->npids = ev->npids;
	out->pids = calloc(ev->npids ? ev->npids : 1, sizeof(*out->pids));
	out->nctx = ev->nctx;
	out->ctx = calloc(ev->nctx ? ev->nctx : 1, sizeof(*out->ctx));
	out->nnames = ev->nnames;
	out->names = calloc(ev->nnames ? ev->nnames : 1, sizeof(*out->names));
	if (!out->pids || !out->ctx || !out->names)
		return -ENOMEM;
	memcpy(out->pids, ev->pids, ev->npids * sizeof(*out->pids));
	memcpy(out->ctx, ev->ctx, ev->nctx * sizeof(*out->ctx));
	memcpy(out->names, ev->names, ev->nnames * sizeof(*out->names));
	return 0;
}

static void add_proc_counts(struct dp_client_event *out, const struct dpd_event *ev,
			    const char *orphan)
{
	for (struct dpd_proc *p = dpd_procs; p; p = p->next) {
		uint32_t nj = 0, ni = 0;
		struct dp_client_proc *rp, *v;

		for (uint32_t i = 0; i < p->nsites; i++) {
			const struct dpd_site *s = &p->sites[i];

			if (!s->installed || (ev ? !dpd_site_owned(s, ev) :
					      s->nowners || strcmp(s->event, orphan)))
				continue;
			if (s->patch.method == DP_APP_METHOD_INT3)
				ni++;
			else
				nj++;
		}
		if (!nj && !ni)
			continue;
		v = realloc(out->procs, (out->nprocs + 1) * sizeof(*v));
		if (!v)
			return;
		out->procs = v;
		rp = &out->procs[out->nprocs++];
		memset(rp, 0, sizeof(*rp));
		rp->pid = (uint32_t)p->pid;
		rp->njump = nj;
		rp->nint3 = ni;
	}
}

static void do_list(const struct dpd_client *c, const char *session,
		    struct dp_client_list_reply *l)
{
	size_t n = 0, cap = 0;

	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next)
		cap++;
	/* Patches no event claims (recovered from agents) are listed by their
	 * lttng name under an unknown session, when every session is asked. */
	for (struct dpd_proc *p = dpd_procs; p; p = p->next)
		cap += p->nsites;
	l->events = calloc(cap ? cap : 1, sizeof(*l->events));
	if (!l->events) {
		l->status = -ENOMEM;
		snprintf(l->message, sizeof(l->message), "out of memory");
		return;
	}
	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		if (!may_see(c, ev) || (session[0] && strcmp(ev->session, session)))
			continue;
		if (fill_event(&l->events[n], ev))
			break;
		add_proc_counts(&l->events[n], ev, NULL);
		n++;
	}
	if (!session[0] && c->uid == 0) {
		for (struct dpd_proc *p = dpd_procs; p; p = p->next) {
			for (uint32_t i = 0; i < p->nsites; i++) {
				const struct dpd_site *s = &p->sites[i];
				bool seen = false;

				if (!s->installed || s->nowners || !s->event[0])
					continue;
				for (size_t k = 0; k < n && !seen; k++)
					seen = !strcmp(l->events[k].session, "(unknown)") &&
					       !strcmp(l->events[k].event, s->event);
				if (seen)
					continue;
				struct dp_client_event *out = &l->events[n++];

				snprintf(out->session, sizeof(out->session), "(unknown)");
				snprintf(out->channel, sizeof(out->channel), "(unknown)");
				snprintf(out->event, sizeof(out->event), "%s", s->event);
				out->kind = DP_CLIENT_KIND_PROBE;
				out->enabled = true;
				add_proc_counts(out, NULL, s->event);
			}
		}
	}
	l->nevents = (uint32_t)n;
}

/* EVENT_FLAGS: the event's flags replaced; follow mode follows (follow.c). */
static void do_event_flags(const struct dpd_client *c, const struct dp_client_event_flags *f,
			   struct dp_client_report *r)
{
	struct dp_err msg = DP_ERR_INIT;
	struct dpd_event *ev;

	while ((ev = find_event(c, f->session, f->channel, f->event)) && dpd_event_hold(ev) == -ENOENT)
		;	/* unlinked while we waited: look again */
	if (!ev) {
		dp_err_set(&msg, -ENOENT, "no dynamic event '%s' in channel %s of session %s",
			   f->event, f->channel, f->session);
		set_report(r, -ENOENT, &msg);
		return;
	}
	add_names(r, ev);
	if (ev->flags != f->flags) {
		ev->flags = f->flags;
		dpd_follow_flags_set(ev->flags);
		dpd_state_save();
		dpd_info("event %s of session %s: flags 0x%x", ev->names[0], ev->session,
			 (unsigned)ev->flags);
	}
	set_report(r, 0, &msg);
	dpd_event_unhold(ev);
}

/* LIST_FLAGS: the events with flags, named as LIST names them. */
static void do_list_flags(const struct dpd_client *c, const char *session,
			  struct dp_client_flags_reply *l)
{
	size_t n = 0;

	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next)
		n++;
	l->flags = calloc(n ? n : 1, sizeof(*l->flags));
	if (!l->flags) {
		l->status = -ENOMEM;
		snprintf(l->message, sizeof(l->message), "out of memory");
		return;
	}
	n = 0;
	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		struct dp_client_event_flags *out = &l->flags[n];

		if (!ev->flags || !may_see(c, ev) || (session[0] && strcmp(ev->session, session)))
			continue;
		snprintf(out->session, sizeof(out->session), "%s", ev->session);
		snprintf(out->channel, sizeof(out->channel), "%s", ev->channel);
		snprintf(out->event, sizeof(out->event), "%s", ev->event);
		out->flags = ev->flags;
		n++;
	}
	l->nflags = (uint32_t)n;
}

void dpd_session_drop(const char *name, uid_t uid, struct dp_client_report *rep)
{
	char session[DP_CLIENT_NAME_MAX];
	bool changed = false;
	int ret;

	/* The name may be an event's own, freed below. */
	snprintf(session, sizeof(session), "%s", name);
	/* One event at a time, from the head each time: the list changes
	 * while a removal waits. */
	for (;;) {
		struct dpd_event *ev;

		for (ev = dpd_events; ev; ev = ev->next)
			if (!strcmp(ev->session, session) && (!uid || ev->owner == uid))
				break;
		if (!ev)
			break;
		ret = dpd_event_hold(ev);
		if (ret == -ENOENT)
			continue;
		if (ret)
			break;
		dpd_info("session %s: removing %s", session, ev->names[0]);
		ev->enabled = false;
		dpd_remove_everywhere(ev, rep);
		dpd_event_unlink(ev);
		dpd_event_unhold(ev);
		dpd_event_drop(ev);
		changed = true;
	}
	if (changed) {
		dpd_state_save();
		dpd_follow_sync();
	}
}

/* ---- dispatch --------------------------------------------------------- */

bool dpd_client_reply(const struct dpd_client *c, struct dp_client_msg *rep)
{
	int ret = dp_client_send(c->fd, rep, DP_CLIENT_TIMEOUT_MS);

	if (ret)
		dpd_info("client pid %d: cannot send %s: %s", (int)c->pid,
			 dp_client_type_name(rep->type), strerror(-ret));
	dp_client_msg_release(rep);
	return ret == 0;
}

int dpd_client_request(const struct dpd_client *c, const uint8_t *frame, size_t len,
		       struct dp_client_msg *rep)
{
	struct dp_client_msg req;
	enum dp_proto_err why = DP_PROTO_ERR_NONE;
	int ret;

	ret = dp_client_decode_frame(frame, len, &req, &why);
	memset(rep, 0, sizeof(*rep));
	rep->seq = req.seq;
	if (ret == -EPROTO && why == DP_PROTO_ERR_VERSION) {
		rep->type = DP_CLIENT_REFUSE;
		rep->refuse.major = DP_CLIENT_MAJOR;
		rep->refuse.minor = DP_CLIENT_MINOR;
		snprintf(rep->refuse.reason, sizeof(rep->refuse.reason),
			 "lttng-dynprobed speaks protocol %u.%u, the client %u.%u: use a CLI of "
			 "the same version", DP_CLIENT_MAJOR, DP_CLIENT_MINOR, req.major,
			 req.minor);
		return 1;
	}
	if (ret == -EPROTO && !dp_proto_err_fatal(why) && !(req.type & DP_FRAME_REPLY)) {
		dpd_info("client pid %d: bad %s: %s", (int)c->pid,
			 dp_client_type_name(req.type) ? dp_client_type_name(req.type) : "request",
			 dp_proto_err_str(why));
		rep->type = req.type | DP_FRAME_REPLY;
		if (why == DP_PROTO_ERR_TYPE || req.type == DP_CLIENT_PING) {
			rep->type = DP_CLIENT_UNSUPPORTED;
			rep->unsupported = req.type;
		} else if (req.type == DP_CLIENT_LIST) {
			rep->list_reply.status = -EBADMSG;
			snprintf(rep->list_reply.message, sizeof(rep->list_reply.message), "%s",
				 dp_proto_err_str(why));
		} else if (req.type == DP_CLIENT_LIST_FLAGS) {
			rep->flags_reply.status = -EBADMSG;
			snprintf(rep->flags_reply.message, sizeof(rep->flags_reply.message), "%s",
				 dp_proto_err_str(why));
		} else if (req.type == DP_CLIENT_SITES) {
			rep->sites_reply.status = -EBADMSG;
			snprintf(rep->sites_reply.message, sizeof(rep->sites_reply.message), "%s",
				 dp_proto_err_str(why));
		} else if (req.type == DP_CLIENT_ENABLE_MANY) {
			/* One report says why: the specs could not be read. */
			rep->reports.reports = calloc(1, sizeof(*rep->reports.reports));
			if (rep->reports.reports) {
				rep->reports.nreports = 1;
				rep->reports.reports[0].status = -EBADMSG;
				snprintf(rep->reports.reports[0].message,
					 sizeof(rep->reports.reports[0].message), "%s",
					 dp_proto_err_str(why));
			}
		} else {
			rep->report.status = -EBADMSG;
			snprintf(rep->report.message, sizeof(rep->report.message), "%s",
				 dp_proto_err_str(why));
		}
		return 0;
	}
	if (ret)
		return -1;

	dpd_dbg("client pid %d: %s", (int)c->pid, dp_client_type_name(req.type));
	rep->type = req.type | DP_FRAME_REPLY;
	switch (req.type) {
	case DP_CLIENT_ENABLE:
		do_enable(c, &req.enable, &rep->report);
		break;
	case DP_CLIENT_ENABLE_MANY:
		do_enable_many(c, &req.enable_many, &rep->reports);
		break;
	case DP_CLIENT_DISABLE:
		do_disable(c, &req.disable, &rep->report);
		break;
	case DP_CLIENT_ADD_CONTEXT:
		do_add_context(c, &req.add_context, &rep->report);
		break;
	case DP_CLIENT_LIST:
		do_list(c, req.list, &rep->list_reply);
		break;
	case DP_CLIENT_SITES:
		dpd_sites(req.sites.path, req.sites.function, &rep->sites_reply);
		break;
	case DP_CLIENT_SESSION_DESTROYED:
		dpd_session_drop(req.session_destroyed, c->uid, &rep->report);
		break;
	case DP_CLIENT_EVENT_FLAGS:
		do_event_flags(c, &req.event_flags, &rep->report);
		break;
	case DP_CLIENT_LIST_FLAGS:
		do_list_flags(c, req.list_flags, &rep->flags_reply);
		break;
	case DP_CLIENT_PING:
		rep->ping_reply.cookie = req.ping;
		rep->ping_reply.daemon_pid = (uint32_t)getpid();
		snprintf(rep->ping_reply.version, sizeof(rep->ping_reply.version), "%s",
			 PACKAGE_VERSION);
		break;
	default:
		/* A reply sent to us, or a type this version knows but serves
		 * not: either way, not understood. */
		rep->type = DP_CLIENT_UNSUPPORTED;
		rep->unsupported = req.type;
		break;
	}
	/* What changed the events installed where may change follow mode. */
	if (req.type == DP_CLIENT_ENABLE || req.type == DP_CLIENT_ENABLE_MANY ||
	    req.type == DP_CLIENT_DISABLE || req.type == DP_CLIENT_EVENT_FLAGS ||
	    req.type == DP_CLIENT_ADD_CONTEXT)
		dpd_follow_sync();
	if (rep->type == DP_CLIENT_ENABLE_REPLY || rep->type == DP_CLIENT_DISABLE_REPLY ||
	    rep->type == DP_CLIENT_ADD_CONTEXT_REPLY)
		dpd_dbg("client pid %d: %s: %d %s", (int)c->pid, dp_client_type_name(rep->type),
			rep->report.status, rep->report.message);
	dp_client_msg_release(&req);
	return 0;
}
