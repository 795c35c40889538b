/*
 * The machine interface (--mi xml) of the extended commands.
 *
 * A document is the stock lttng's (MI schema 4.1 of lttng-tools 2.13:
 * <command><name/><output/><success/></command> in its namespace), with
 * the stock elements where they fit (an enabled event name is a stock
 * <event>).  What the schema has no element for (a probe's location, path,
 * pids, dynamic contexts, the processes it is installed in, the sites of a
 * function) is in elements of our namespace, DP_MI_NS, prefix "dp":
 * removing every element of that namespace leaves a document valid against
 * the stock schema.  Each element of ours that a stock document holds
 * declares the namespace itself, so that it can be put into the stock
 * lttng's own output.  lttng-dynprobe(7) describes those elements.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define STOCK_NS "https://lttng.org/xml/ns/lttng-mi"

bool dp_mi_xml(const struct dp_cli *cli)
{
	return cli->mi && !strcmp(cli->mi, "xml");
}

bool dp_mi_refused(const struct dp_cli *cli)
{
	if (!cli->mi || dp_mi_xml(cli))
		return false;
	dp_err("machine interface '%s' is not supported: the only one is --mi xml", cli->mi);
	return true;
}

void dp_mi_text(const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", stdout); break;
		case '>': fputs("&gt;", stdout); break;
		case '&': fputs("&amp;", stdout); break;
		case '"': fputs("&quot;", stdout); break;
		default:
			/* XML 1.0 has no other control characters than these. */
			if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
				putchar(*s);
		}
	}
}

void dp_mi_elem(const char *name, const char *fmt, ...)
{
	char buf[DP_CLIENT_PATH_MAX + 64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("<%s>", name);
	dp_mi_text(buf);
	printf("</%s>", name);
}

void dp_mi_begin(const char *command)
{
	printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<command xmlns=\"" STOCK_NS "\" xmlns:dp=\"" DP_MI_NS "\" schemaVersion=\"4.1\">");
	dp_mi_elem("name", "%s", command);
	printf("<output>");
}

void dp_mi_end(bool success)
{
	printf("</output><success>%s</success></command>\n", success ? "true" : "false");
	fflush(stdout);
}

/* The stock lttng's <event> of an enabled (or disabled) event name. */
void dp_mi_stock_event(const char *name, bool enabled, const char *filter, bool success)
{
	printf("<event>");
	dp_mi_elem("name", "%s", name);
	printf("<type>TRACEPOINT</type><enabled>%s</enabled>", enabled ? "true" : "false");
	if (filter)
		dp_mi_elem("filter_expression", "%s", filter);
	printf("<exclusions/><success>%s</success></event>", success ? "true" : "false");
}

static void mi_procs(const struct dp_client_proc *procs, uint32_t n)
{
	printf("<dp:processes>");
	for (uint32_t i = 0; i < n; i++) {
		const struct dp_client_proc *p = &procs[i];

		printf("<dp:process>");
		dp_mi_elem("dp:pid", "%" PRIu32, p->pid);
		if (p->status) {
			dp_mi_elem("dp:error", "%s", p->message);
		} else {
			dp_mi_elem("dp:jump", "%" PRIu32, p->njump);
			dp_mi_elem("dp:int3", "%" PRIu32, p->nint3);
			dp_mi_elem("dp:refused", "%" PRIu32, p->nrefused);
		}
		printf("</dp:process>");
	}
	printf("</dp:processes>");
}

void dp_mi_dynamic_event(const struct dp_client_event *ev)
{
	printf("<dp:event xmlns:dp=\"" DP_MI_NS "\">");
	dp_mi_elem("dp:name", "%s", ev->event);
	dp_mi_elem("dp:session", "%s", ev->session);
	dp_mi_elem("dp:channel", "%s", ev->channel);
	dp_mi_elem("dp:enabled", "%s", ev->enabled ? "true" : "false");
	dp_mi_elem("dp:kind", "%s", dp_client_kind_str(ev->kind));
	dp_mi_elem("dp:location", "%s", ev->location);
	dp_mi_elem("dp:path", "%s", ev->path);
	dp_mi_elem("dp:follow_exec", "%s",
		   ev->flags & DP_CLIENT_EVENT_FOLLOW_EXEC ? "true" : "false");
	printf("<dp:pids>");
	for (uint32_t i = 0; i < ev->npids; i++)
		dp_mi_elem("dp:pid", "%" PRIu32, ev->pids[i]);
	printf("</dp:pids><dp:event_names>");
	for (uint32_t i = 0; i < ev->nnames; i++)
		dp_mi_elem("dp:name", "%s", ev->names[i]);
	printf("</dp:event_names><dp:contexts>");
	for (uint32_t i = 0; i < ev->nctx; i++)
		dp_mi_elem("dp:context", "%s", ev->ctx[i]);
	printf("</dp:contexts>");
	mi_procs(ev->procs, ev->nprocs);
	printf("</dp:event>");
}

void dp_mi_report(const struct dp_client_report *r)
{
	printf("<dp:report xmlns:dp=\"" DP_MI_NS "\">");
	if (r->message[0])
		dp_mi_elem(r->status ? "dp:error" : "dp:message", "%s", r->message);
	mi_procs(r->procs, r->nprocs);
	printf("</dp:report>");
}

void dp_mi_splice(const char *doc, const char *tag, void (*insert)(void *), void *arg)
{
	const char *at = NULL;

	for (const char *p = strstr(doc, tag); p; p = strstr(p + 1, tag))
		at = p;
	if (!at) {
		fputs(doc, stdout);
		return;
	}
	fwrite(doc, 1, (size_t)(at - doc), stdout);
	insert(arg);
	fputs(at, stdout);
	fflush(stdout);
}
