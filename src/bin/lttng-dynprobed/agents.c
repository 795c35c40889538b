/*
 * Agents: the processes whose agent talks to us over the app socket, what
 * each one holds (probes defined, patches written), and the requests we
 * make of them.
 *
 * The agent is the source of truth: its HELLO lists what is installed, so a
 * restarted daemon rebuilds a process's record from it and matches each
 * patch to the events that own it (by the event names of its probes; one
 * patch may serve several events).  A HELLO is served in two steps: the
 * record and HELLO_REPLY at once (also while an install waits for an
 * injected agent), then, from the main loop, the installs pending for that
 * process (the probes of `lttng trace`) and GO.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/maps.h"
#include "proc/proc-status.h"

int dpd_app_listen_fd = -1;

/* The agent connection is gone: forget the process if it exited, else wait
 * for the agent to reconnect (it will, and say HELLO again). */
static void conn_lost(struct dpd_proc *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	if (!dp_proc_alive(p->pid))
		dpd_proc_forget(p);
	else
		dpd_info("agent of process %d disconnected; it will reconnect", (int)p->pid);
}

/* Whether a probe of the patch records one of ev's lttng names. */
static bool names_probe(const struct dpd_proc *p, const struct dpd_event *ev,
			const struct dp_app_patch *ap)
{
	for (uint32_t i = 0; i < ap->nprobes; i++) {
		const struct dpd_probe *pr = dpd_proc_probe(p, ap->probes[i]);

		for (uint32_t k = 0; pr && k < ev->nnames; k++)
			if (!strcmp(ev->names[k], pr->event))
				return true;
	}
	return false;
}

/*
 * The owners of the installed patches of p that no event claims (recovered
 * from the agent): every enabled event meant for this process whose plan has
 * the patch's window here and one of whose lttng names a probe of the patch
 * records.  Several events may claim one patch: they shared it.
 */
static void claim_sites(struct dpd_proc *p)
{
	uint32_t *idx = calloc(p->nsites ? p->nsites : 1, sizeof(*idx)), n = 0;

	for (uint32_t i = 0; idx && i < p->nsites; i++)
		if (p->sites[i].installed && !p->sites[i].nowners)
			idx[n++] = i;
	for (struct dpd_event *ev = n ? dpd_events : NULL; ev; ev = ev->next) {
		/* By pid: its processes and their descendants (a forked
		 * child reports the patches it inherited). */
		bool listed = !ev->npids || dpd_event_reaches(ev, p->pid), biased = false;
		uint64_t bias = 0;

		if ((ev->owner && ev->owner != p->uid) || !ev->enabled || !ev->obj || !listed)
			continue;
		for (uint32_t i = 0; i < n; i++) {
			struct dpd_site *s = &p->sites[idx[i]];
			const struct dp_patch *pl;

			if (s->nowners == DPD_SITE_MAX_OWNERS || !names_probe(p, ev, &s->patch))
				continue;
			if (!biased && dpd_object_bias(ev->obj, p->pid, &bias))
				break;
			biased = true;
			pl = dpd_event_window(ev, bias, &s->patch);
			if (pl)
				s->owners[s->nowners++] = (struct dpd_owner){ ev, pl, bias };
		}
	}
	free(idx);
}

/* What HELLO says is installed, merged into our record of the process. */
static int adopt_state(struct dpd_proc *p, const struct dp_app_state *s)
{
	struct dp_maps maps = { 0 };
	uint32_t nbad = 0;

	if (dpd_proc_reserve(p, s->nprobes, 0))
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nprobes; i++) {
		const struct dp_app_probe *ap = &s->probes[i];
		struct dpd_probe *dp;

		if (dpd_proc_probe(p, ap->id))
			continue;
		dp = &p->probes[p->nprobes++];
		memset(dp, 0, sizeof(*dp));
		dp->id = ap->id;
		dp->site = ap->site;
		dp->flags = ap->flags;
		snprintf(dp->event, sizeof(dp->event), "%s", ap->event);
		/* Its contexts are unknown (sig NULL): it is never reused for a
		 * new patch, only recognised in the patches that name it. */
		if (ap->id >= p->next_id)
			p->next_id = ap->id + 1;
	}
	/* Unreadable (the process exited): no claim can be believed. */
	if (s->npatches && dp_maps_read(p->pid, &maps))
		maps = (struct dp_maps){ 0 };
	for (uint32_t i = 0; i < s->npatches; i++) {
		const struct dp_app_patch *ap = &s->patches[i];
		const struct dpd_probe *first = dpd_proc_probe(p, ap->probes[0]);
		struct dpd_site *site, *v;
		uint32_t at = p->nsites;
		struct dp_err why = DP_ERR_INIT;

		/* Never believed blindly: restoring it writes its bytes. */
		if (dpd_claim_check(p->pid, &maps, ap, false, &why) < 0) {
			dpd_err("process %d: its agent reports a patch at 0x%" PRIx64 " that cannot "
				"be: %s; ignored, nothing is written there", (int)p->pid, ap->site,
				why.msg);
			nbad++;
			continue;
		}

		/* Our own record of that trampoline, when we wrote it. */
		for (uint32_t k = 0; k < p->nsites; k++)
			if (p->sites[k].patch.site == ap->site && p->sites[k].patch.tramp == ap->tramp)
				at = k;
		if (at == p->nsites) {
			if (dpd_proc_reserve(p, 0, 1)) {
				dp_maps_free(&maps);
				return -ENOMEM;
			}
			v = p->sites;
			memset(&v[p->nsites++], 0, sizeof(*v));
			v[at].entry = ap->tramp;
		}
		/* The agent knows which one the code holds. */
		for (uint32_t k = 0; k < p->nsites; k++)
			if (p->sites[k].patch.site == ap->site)
				p->sites[k].installed = false;
		site = &p->sites[at];
		site->patch = *ap;
		site->installed = true;
		if (first)
			snprintf(site->event, sizeof(site->event), "%s", first->event);
		p->recovered = true;
	}
	dp_maps_free(&maps);
	claim_sites(p);
	if (s->npatches)
		dpd_info("process %d: recovered %u patches and %u probes from its agent",
			 (int)p->pid, s->npatches - nbad, s->nprobes);
	return 0;
}

static void refuse(int fd, uint8_t major, uint8_t minor)
{
	struct dp_app_msg m = { .type = DP_APP_REFUSE };

	m.refuse.major = DP_APP_MAJOR;
	m.refuse.minor = DP_APP_MINOR;
	snprintf(m.refuse.reason, sizeof(m.refuse.reason),
		 "lttng-dynprobed speaks protocol %u.%u, the agent %u.%u: use an agent of the "
		 "same version", DP_APP_MAJOR, DP_APP_MINOR, major, minor);
	dp_app_send(fd, &m, DP_APP_TIMEOUT_MS);
}

int dpd_agent_accept(void)
{
	struct dp_app_msg hello, rep = { .type = DP_APP_HELLO_REPLY };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	enum dp_proto_err why;
	struct dp_err why_perm = DP_ERR_INIT;
	uint8_t image[DPD_IMAGE_ID_LEN];
	bool image_known;
	struct dpd_proc *p;
	int fd, ret;

	fd = accept4(dpd_app_listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		close(fd);
		return 0;
	}
	/* The socket is ours alone (0600); this is the second lock. */
	if (cred.uid != geteuid() && geteuid() != 0) {
		dpd_err("agent of pid %d belongs to uid %u: refused", (int)cred.pid,
			(unsigned)cred.uid);
		close(fd);
		return 0;
	}
	/* Root's socket is everyone's: the process must still run as the
	 * user who connected (no set-user-ID program executed since). */
	if (dpd_perm_peer(cred.pid, cred.uid, cred.gid, true, &why_perm)) {
		dpd_err("agent of pid %d (uid %u) refused: %s", (int)cred.pid,
			(unsigned)cred.uid, why_perm.msg);
		close(fd);
		return 0;
	}
	ret = dp_app_recv(fd, &hello, DP_APP_TIMEOUT_MS, &why);
	if (ret == -EPROTO && why == DP_PROTO_ERR_VERSION) {
		refuse(fd, hello.major, hello.minor);
		dpd_err("agent of pid %d speaks protocol %u.%u, we %u.%u: refused", (int)cred.pid,
			hello.major, hello.minor, DP_APP_MAJOR, DP_APP_MINOR);
		close(fd);
		return 0;
	}
	if (ret || hello.type != DP_APP_HELLO) {
		dpd_err("agent of pid %d: no HELLO (%s)", (int)cred.pid,
			ret == -EPROTO ? dp_proto_err_str(why) : strerror(-ret));
		dp_app_msg_release(&hello);
		close(fd);
		return 0;
	}
	if ((pid_t)hello.hello.pid != cred.pid)
		dpd_info("agent says pid %u, its socket says %d: using %d", hello.hello.pid,
			 (int)cred.pid, (int)cred.pid);

	p = dpd_proc_find(cred.pid);
	image_known = !dpd_image_id(cred.pid, image);
	if (p && ((p->probe_hit && p->probe_hit != hello.hello.probe_hit) ||
		  (p->image_known && image_known && memcmp(p->image, image, sizeof(image))))) {
		/* Another agent in that pid: the process executed a new image
		 * (its agent followed it), or the pid was reused.  What we
		 * knew of it is gone with the old image. */
		dpd_info("process %d runs a new image", (int)p->pid);
		dpd_proc_forget(p);
		p = NULL;
	}
	if (!p)
		p = dpd_proc_add(cred.pid);
	if (!p) {
		dp_app_msg_release(&hello);
		close(fd);
		return 0;
	}
	if (p->fd >= 0)
		close(p->fd);
	p->fd = fd;
	p->uid = cred.uid;
	p->gid = cred.gid;
	p->image_known = image_known;
	if (image_known)
		memcpy(p->image, image, sizeof(image));
	p->seq = 1;
	p->probe_hit = hello.hello.probe_hit;
	/* The version the agent says it speaks, in the header and in HELLO
	 * (when HELLO's major is ours): the lower one (an agent may announce
	 * less than it knows). */
	p->minor = hello.hello.major == DP_APP_MAJOR && hello.hello.minor < hello.minor ?
		   hello.hello.minor : hello.minor;
	if (adopt_state(p, &hello.hello.state))
		dpd_err("process %d: out of memory recording its state", (int)p->pid);
	dpd_fault("hello");
	rep.seq = hello.seq;
	dp_app_msg_release(&hello);

	rep.hello_reply.major = DP_APP_MAJOR;
	rep.hello_reply.minor = DP_APP_MINOR;
	rep.hello_reply.daemon_pid = (uint32_t)getpid();
	ret = dp_app_send(fd, &rep, DP_APP_TIMEOUT_MS);
	if (ret) {
		dpd_err("process %d: cannot answer HELLO: %s", (int)p->pid, strerror(-ret));
		conn_lost(p);
		return 0;
	}
	p->go_pending = true;
	dpd_info("agent of process %d connected (uid %u, protocol %u.%u)", (int)p->pid,
		 (unsigned)p->uid, DP_APP_MAJOR, p->minor);
	/* At once: an install waiting for this agent (dpd_agent_wait) must not
	 * take a patch the agent still reports, but which is not in the code
	 * (restored while it was away), for one in place. */
	if (p->recovered)
		dpd_agent_reconcile(p);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct dpd_proc *dpd_agent_wait(pid_t pid, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		struct dpd_proc *p = dpd_proc_find(pid);
		struct pollfd pfd = { .fd = dpd_app_listen_fd, .events = POLLIN };
		int64_t left = deadline - now_ms();

		if (p && p->fd >= 0)
			return p;
		if (left <= 0 || !dp_proc_alive(pid))
			return NULL;
		/* Short naps: a process that dies meanwhile is noticed. */
		if (poll(&pfd, 1, left > 100 ? 100 : (int)left) > 0)
			while (dpd_agent_accept() == 0)
				;
	}
}

/* A MAPPED (an agent's only request): its installs and its reply are to do
 * from the main loop (a newer cookie covers the older ones). */
static void agent_request(void *arg, struct dp_app_msg *m)
{
	struct dpd_proc *p = arg;

	if (m->type != DP_APP_MAPPED) {
		dpd_dbg("process %d: unexpected %s", (int)p->pid,
			dp_app_type_name(m->type) ? dp_app_type_name(m->type) : "message");
		return;
	}
	dpd_dbg("process %d: MAPPED %" PRIu64, (int)p->pid, m->mapped);
	if (m->mapped > p->mapped) {
		p->mapped = m->mapped;
		p->mapped_seq = m->seq;
	}
}

int dpd_agent_mapped_reply(struct dpd_proc *p, uint64_t cookie, uint32_t seq)
{
	struct dp_app_msg rep = { .type = DP_APP_MAPPED_REPLY, .seq = seq };
	int ret;

	rep.mapped = cookie;
	if (p->mapped == cookie)
		p->mapped = 0;
	if (p->fd < 0)
		return -ENOTCONN;
	ret = dp_app_send(p->fd, &rep, DP_APP_TIMEOUT_MS);
	if (ret) {
		dpd_dbg("MAPPED_REPLY to %d: %s", (int)p->pid, strerror(-ret));
		conn_lost(p);
	}
	return ret;
}

int dpd_agent_call(struct dpd_proc *p, struct dp_app_msg *req, struct dp_app_msg *rep,
		   struct dp_err *msg)
{
	enum dp_proto_err why = DP_PROTO_ERR_NONE;
	const char *name = dp_app_type_name(req->type);
	int ret;

	memset(rep, 0, sizeof(*rep));
	if (p->fd < 0) {
		dp_err_set(msg, -ENOTCONN, "the agent of process %d is not connected", (int)p->pid);
		return -ENOTCONN;
	}
	ret = dp_app_call_cb(p->fd, req, &p->seq, rep, DP_APP_TIMEOUT_MS, &why, agent_request, p);
	if (ret == -EOPNOTSUPP) {
		dp_err_set(msg, ret, "the agent of process %d does not know %s: it is older than "
				     "this daemon", (int)p->pid, name);
		return ret;
	}
	if (ret) {
		bool alive = dp_proc_alive(p->pid);

		if (!alive)
			dp_err_set(msg, -ESRCH, "process %d exited during the operation",
				   (int)p->pid);
		else
			dp_err_set(msg, ret, "the agent of process %d did not answer %s: %s",
				   (int)p->pid, name,
				   ret == -EPROTO ? dp_proto_err_str(why) : strerror(-ret));
		dpd_dbg("%s to %d: %s", name, (int)p->pid, msg->msg);
		/* The stream cannot be trusted after a failed call. */
		if (p->fd >= 0)
			close(p->fd);
		p->fd = -1;
		return alive ? ret : -ESRCH;
	}
	switch (rep->type) {
	case DP_APP_DEFINE_PROBE_REPLY:
	case DP_APP_DEFINE_PROBE_EXT_REPLY:
	case DP_APP_ALLOC_CODE_REPLY:
	case DP_APP_NOTE_INSTALLED_REPLY:
	case DP_APP_NOTE_REMOVED_REPLY:
	case DP_APP_NOTE_INSTALLED_MANY_REPLY:
	case DP_APP_NOTE_REMOVED_MANY_REPLY:
		if (rep->result.status)
			return dp_err_set(msg, rep->result.status, "process %d: %s", (int)p->pid,
					  rep->result.error);
		break;
	default:
		break;
	}
	return 0;
}

int dpd_agent_note(struct dpd_proc *p, const struct dp_app_patch *ap, struct dp_err *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_INSTALLED }, rep;
	int ret;

	req.note_installed = *ap;
	ret = dpd_agent_call(p, &req, &rep, msg);
	dp_app_msg_release(&rep);
	return ret;
}

int dpd_agent_note_removed(struct dpd_proc *p, uint64_t site, struct dp_err *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_REMOVED }, rep;
	int ret;

	req.note_removed = site;
	ret = dpd_agent_call(p, &req, &rep, msg);
	dp_app_msg_release(&rep);
	return ret;
}

void dpd_agent_readable(struct dpd_proc *p)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	struct dp_app_msg m;
	enum dp_proto_err why;
	int ret;

	/* The loop's readiness may be stale (the descriptor served meanwhile,
	 * or reused by another connection): look again, without waiting. */
	if (poll(&pfd, 1, 0) <= 0)
		return;
	/* Agents answer, and say MAPPED; anything else is a closed connection
	 * or noise. */
	ret = dp_app_recv(p->fd, &m, DP_APP_TIMEOUT_MS, &why);
	if (ret == 0) {
		agent_request(p, &m);
		dp_app_msg_release(&m);
		return;
	}
	if (ret == -EPROTO && !dp_proto_err_fatal(why))
		return;
	conn_lost(p);
}

/*
 * What the agent reports against the process's code: a patch whose site
 * holds its original bytes is not there (a daemon died between noting an
 * int3 and writing it, or restored a site while the agent was away): the
 * agent is told, and the record dropped.
 */
void dpd_agent_reconcile(struct dpd_proc *p)
{
	for (uint32_t i = 0; i < p->nsites && p->fd >= 0; i++) {
		struct dpd_site *s = &p->sites[i];
		uint8_t cur[DP_APP_MAX_ORIG];
		struct dp_err msg;

		if (!s->installed || dp_proc_mem_read(p->pid, s->patch.site, cur, s->patch.len) ||
		    memcmp(cur, s->patch.orig, s->patch.len))
			continue;
		dpd_info("process %d: the patch at 0x%" PRIx64 " its agent reports is not in "
			 "its code: forgotten", (int)p->pid, s->patch.site);
		s->installed = false;
		dpd_agent_note_removed(p, s->patch.site, &msg);
	}
}

void dpd_procs_reap(void)
{
	bool again = true;

	/* Processes whose agent went away are not polled: look at them. */
	while (again) {
		again = false;
		for (struct dpd_proc *p = dpd_procs; p; p = p->next) {
			if (p->fd >= 0 || dp_proc_alive(p->pid))
				continue;
			dpd_proc_forget(p);
			again = true;
			break;
		}
	}
}
