/*
 * Dynamic events: the daemon's list of what clients asked for (session,
 * channel, event, spec), their lttng names, their resolution against the
 * object, and the state file that lets a restarted daemon (after SIGKILL)
 * know again which events the patches its agents report belong to.
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

#include "daemon.h"
#include "spec/spec.h"

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

void dpd_event_unlink(struct dpd_event *ev)
{
	for (struct dpd_event **pp = &dpd_events; *pp; pp = &(*pp)->next) {
		if (*pp == ev) {
			*pp = ev->next;
			break;
		}
	}
	/* Patches it could not be taken out of still serve its probes. */
	for (struct dpd_proc *p = dpd_procs; p; p = p->next)
		for (uint32_t i = 0; i < p->nsites; i++)
			dpd_site_disown(&p->sites[i], ev);
}

void dpd_event_free(struct dpd_event *ev)
{
	if (!ev)
		return;
	free(ev->pids);
	free(ev->ctx);
	free(ev->points);
	free(ev->plan);
	free(ev);
}

/* What spec/ accepts, the agent (and lttng-ust) can register. */
_Static_assert(DP_SPEC_EVENT_MAX <= DP_NAME_MAX, "event names longer than the agent's");

int dpd_event_names(struct dpd_event *ev, struct dp_err *msg)
{
	struct dp_err err;

	ev->nnames = ev->kind == DP_CLIENT_KIND_FUNCTION ? 2 : 1;
	for (uint32_t i = 0; i < ev->nnames; i++) {
		const char *suffix = ev->kind != DP_CLIENT_KIND_FUNCTION ? "" :
				     i ? "_return" : "_entry";
		int ret = dp_spec_event_name(ev->event, suffix, ev->names[i],
					     sizeof(ev->names[i]), &err);

		if (ret) {
			dpd_msg_set(msg, "%s", err.msg);
			return ret;
		}
	}
	return 0;
}

int dpd_event_resolve(struct dpd_event *ev, struct dp_err *msg)
{
	uint64_t *vaddrs;
	int ret;

	ev->obj = dpd_object_get(ev->path, msg);
	if (!ev->obj)
		return -ENOENT;
	ret = dpd_resolve_location(ev->obj, ev->location, ev->kind, &ev->points, &ev->npoints,
				   msg);
	if (ret)
		return ret;
	/* Contexts are checked now, with the object's symbols at bias 0: a
	 * process only changes the numbers. */
	for (uint32_t i = 0; i < ev->nctx; i++) {
		struct dp_ctx c;

		ret = dpd_resolve_ctx(ev->obj, ev->ctx[i], 0, &c, msg);
		if (ret)
			return ret;
	}
	vaddrs = calloc(ev->npoints, sizeof(*vaddrs));
	if (!vaddrs) {
		dpd_msg_set(msg, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < ev->npoints; i++)
		vaddrs[i] = ev->points[i].vaddr;
	ret = dp_plan_sites(ev->obj->obj, vaddrs, ev->npoints, &ev->plan, &ev->nplan);
	free(vaddrs);
	if (ret) {
		dpd_msg_set(msg, "the analysis of %s failed: %s", ev->path, strerror(-ret));
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
			dpd_msg_set(msg, "the site 0x%" PRIx64 " (%s) of %s is refused: %s",
				    pt->vaddr, ev->location, ev->path, dp_reason_str(pl->reason));
			return -ENOTSUP;
		}
	}
	return 0;
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
