/*
 * The dynamic events of a saved session, in its session file.
 *
 * `lttng save` (commands/save.c) appends to SESSION.lttng, after the stock
 * document, an XML comment that holds one line per dynamic event (its spec
 * as lttng-dynprobed lists it); `lttng load` (commands/load.c) reads it
 * back.  A comment, because the stock `lttng load` validates the file
 * against session.xsd, which allows no element of ours, and ignores
 * comments: the file stays loadable by the stock lttng (without the
 * probes), and the probes travel with the file.
 *
 *   <!-- lttng-dynprobe 1 session=NAME
 *   event channel=C name=N kind=K location=L path=P enabled=1
 *         (K: probe, function, function-out-of-line, function-inlined)
 *         [pids=1,2] [ctx=SPEC]... [follow-exec=1]
 *   -->
 *
 * Values are percent-encoded (every byte but letters, digits and
 * "_.,:/+*?[]@^~"), so that no value holds a space, a line break or the
 * "--" a comment may not hold.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define HEADER "<!-- lttng-dynprobe 1 session="

static void put_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("_.,:/+*?[]@^~", c))
			fputc(c, f);
		else
			fprintf(f, "%%%02x", c);
	}
}

static void put_pair(FILE *f, const char *key, const char *value)
{
	fprintf(f, " %s=", key);
	put_value(f, value);
}

int dp_saved_append(const char *file, const char *session, const struct dp_client_event *evs,
		    uint32_t nevs, struct dp_err *err)
{
	FILE *f = fopen(file, "a");

	if (!f)
		return dp_err_set(err, -errno, "cannot add the dynamic probes to %s: %s", file,
				  strerror(errno));
	fputs(HEADER, f);
	put_value(f, session);
	fputs("\n", f);
	for (uint32_t i = 0; i < nevs; i++) {
		const struct dp_client_event *ev = &evs[i];

		if (strcmp(ev->session, session))
			continue;
		fputs("event", f);
		put_pair(f, "channel", ev->channel);
		put_pair(f, "name", ev->event);
		put_pair(f, "kind", dp_client_kind_str(ev->kind));
		put_pair(f, "location", ev->location);
		put_pair(f, "path", ev->path);
		put_pair(f, "enabled", ev->enabled ? "1" : "0");
		if (ev->npids) {
			fputs(" pids=", f);
			for (uint32_t p = 0; p < ev->npids; p++)
				fprintf(f, "%s%" PRIu32, p ? "," : "", ev->pids[p]);
		}
		for (uint32_t c = 0; c < ev->nctx; c++)
			put_pair(f, "ctx", ev->ctx[c]);
		/* A key an older lttng skips: the probes load, not followed. */
		if (ev->flags & DP_CLIENT_EVENT_FOLLOW_EXEC)
			put_pair(f, "follow-exec", "1");
		fputs("\n", f);
	}
	fputs("-->\n", f);
	if (fclose(f))
		return dp_err_set(err, -EIO, "cannot add the dynamic probes to %s: %s", file,
				  strerror(errno));
	return 0;
}

/* Decodes a percent-encoded value of len bytes into out; -EINVAL when bad. */
static int get_value(const char *s, size_t len, char *out, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%') {
			char hex[3];

			if (i + 2 >= len || !isxdigit((unsigned char)s[i + 1]) ||
			    !isxdigit((unsigned char)s[i + 2]))
				return -EINVAL;
			memcpy(hex, s + i + 1, 2);
			hex[2] = '\0';
			c = (char)strtoul(hex, NULL, 16);
			i += 2;
		}
		if (n + 1 >= size || !c)
			return -EINVAL;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

/* One "event ..." line into ev (ctx and pids malloc'd); 0 or -EINVAL. */
static int parse_event(const char *line, struct dp_client_event *ev)
{
	const char *p = line + strlen("event");

	while (*p == ' ') {
		const char *key = ++p, *eq = strchr(p, '='), *end;
		char val[DP_CLIENT_PATH_MAX];
		size_t klen;

		if (!eq)
			return -EINVAL;
		klen = (size_t)(eq - key);
		end = eq + 1 + strcspn(eq + 1, " \n");
		if (get_value(eq + 1, (size_t)(end - eq - 1), val, sizeof(val)))
			return -EINVAL;
		p = end;
#define KEY(k) (klen == strlen(k) && !strncmp(key, k, klen))
		if (KEY("channel")) {
			snprintf(ev->channel, sizeof(ev->channel), "%s", val);
		} else if (KEY("name")) {
			snprintf(ev->event, sizeof(ev->event), "%s", val);
		} else if (KEY("kind")) {
			ev->kind = dp_client_kind_parse(val);
			if (!ev->kind)
				ev->kind = DP_CLIENT_KIND_PROBE;
		} else if (KEY("location")) {
			snprintf(ev->location, sizeof(ev->location), "%s", val);
		} else if (KEY("path")) {
			snprintf(ev->path, sizeof(ev->path), "%s", val);
		} else if (KEY("enabled")) {
			ev->enabled = !strcmp(val, "1");
		} else if (KEY("pids")) {
			if (dp_parse_pids(val, &ev->pids, &ev->npids, NULL))
				return -EINVAL;
		} else if (KEY("follow-exec")) {
			if (!strcmp(val, "1"))
				ev->flags |= DP_CLIENT_EVENT_FOLLOW_EXEC;
		} else if (KEY("ctx")) {
			char (*grown)[DP_CLIENT_CTX_MAX];

			if (ev->nctx >= DP_CLIENT_MAX_CTX || strlen(val) >= DP_CLIENT_CTX_MAX)
				return -EINVAL;
			grown = realloc(ev->ctx, (ev->nctx + 1) * sizeof(*ev->ctx));
			if (!grown)
				return -ENOMEM;
			ev->ctx = grown;
			snprintf(ev->ctx[ev->nctx++], DP_CLIENT_CTX_MAX, "%s", val);
		}
		/* Keys of later versions are skipped. */
#undef KEY
	}
	return ev->event[0] && ev->location[0] && ev->path[0] ? 0 : -EINVAL;
}

void dp_saved_release(struct dp_saved *s)
{
	for (uint32_t i = 0; i < s->nevents; i++) {
		free(s->events[i].pids);
		free(s->events[i].ctx);
	}
	free(s->events);
	memset(s, 0, sizeof(*s));
}

int dp_saved_read(const char *file, struct dp_saved *s, struct dp_err *err)
{
	FILE *f = fopen(file, "r");
	char *line = NULL;
	size_t cap = 0;
	bool in = false;
	int ret = 0, lineno = 0;

	memset(s, 0, sizeof(*s));
	if (!f)
		return dp_err_set(err, -errno, "%s: %s", file, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		if (!in) {
			if (strncmp(line, HEADER, strlen(HEADER)))
				continue;
			in = true;
			s->found = true;
			if (get_value(line + strlen(HEADER), strcspn(line + strlen(HEADER), " \n"),
				      s->session, sizeof(s->session)))
				goto bad;
			continue;
		}
		if (!strncmp(line, "-->", 3)) {
			in = false;
			continue;
		}
		if (!strncmp(line, "event ", 6)) {
			struct dp_client_event *grown = realloc(s->events, (s->nevents + 1) *
								sizeof(*s->events));

			if (!grown) {
				ret = dp_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			s->events = grown;
			memset(&s->events[s->nevents], 0, sizeof(*s->events));
			snprintf(s->events[s->nevents].session, DP_CLIENT_NAME_MAX, "%s", s->session);
			if (parse_event(line, &s->events[s->nevents++]))
				goto bad;
		}
	}
	goto out;
bad:
	ret = dp_err_set(err, -EINVAL, "%s:%d: a dynamic probe line that lttng-dynprobe cannot "
			 "read (edited by hand?): fix it, or save the session again", file, lineno);
out:
	free(line);
	fclose(f);
	if (ret)
		dp_saved_release(s);
	return ret;
}
