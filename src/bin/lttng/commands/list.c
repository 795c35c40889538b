/*
 * lttng list, extended:
 *   list -u --path PATH --sites FUNCTION   every instruction of FUNCTION with
 *       its offset, bytes, mnemonic and how a probe there would be installed
 *       (jump, a led window or a redirect and how, int3 and why, or refused
 *       and why), planned as lttng-dynprobed plans.  No session, no daemon:
 *       the analysis and the planner of libdynprobe run here, on the file.
 *   list -u --path PATH --functions [PATTERN]   the functions of PATH (all,
 *       or those PATTERN or a C++/Rust name matches) by the names their
 *       authors wrote, demangled, with their addresses and sizes; with -v,
 *       their symbols too (as perf probe -F).  No daemon either.
 *   list -u --path PATH --sdt [PROVIDER:NAME]   the statically defined
 *       probes (<sys/sdt.h>) of PATH by provider and name: each site's
 *       address, bytes and placement, its argument spec and what it means.
 *   list -u --path PATH --lines FILE[:FROM-TO]   the source lines of FILE
 *       that have code (from DWARF) and their probe addresses (as perf
 *       probe -L), with the source text when the file is readable.
 *   list -u --path PATH --inlines NAME   every copy of NAME: the
 *       out-of-line body and each inlined copy (caller, call site, ranges),
 *       with their entry and return sites and how each would be placed.
 *   list -u, list SESSION   the stock listing, then the dynamic events
 *       (lttng-dynprobed's, when it runs): specs and sites per process.
 * Everything else is the stock list.
 */
#include <errno.h>
#include <inttypes.h>
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "patch/plan.h"
#include "spec/sdt.h"
#include "dwarf/dwarf.h"
#include "x86/insn.h"

enum {
	OPT_DOMAIN = DP_OPT_OWN,
	OPT_FIELDS,
	OPT_SYSCALL,
	OPT_SITES,
	OPT_FUNCTIONS,
	OPT_SDT,
	OPT_LINES,
	OPT_INLINES,
	OPT_VARS,
};

static struct poptOption options[] = {
	DP_OPT_INCLUDE(dp_opt_domains),
	DP_OPT_INCLUDE(dp_opt_channel),
	{ "domain", 'd', POPT_ARG_NONE, NULL, OPT_DOMAIN, NULL, NULL },
	{ "fields", 'f', POPT_ARG_NONE, NULL, OPT_FIELDS, NULL, NULL },
	{ "syscall", 0, POPT_ARG_NONE, NULL, OPT_SYSCALL, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_path),
	{ "sites", 0, POPT_ARG_STRING, NULL, OPT_SITES, NULL, NULL },
	{ "functions", 0, POPT_ARG_STRING | POPT_ARGFLAG_OPTIONAL, NULL, OPT_FUNCTIONS, NULL, NULL },
	{ "sdt", 0, POPT_ARG_STRING | POPT_ARGFLAG_OPTIONAL, NULL, OPT_SDT, NULL, NULL },
	{ "lines", 0, POPT_ARG_STRING, NULL, OPT_LINES, NULL, NULL },
	{ "inlines", 0, POPT_ARG_STRING, NULL, OPT_INLINES, NULL, NULL },
	{ "vars", 0, POPT_ARG_STRING, NULL, OPT_VARS, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_help),
	DP_OPT_INCLUDE(dp_opt_list_options),
	POPT_TABLEEND
};

#define BYTES_SHOWN 8
#define BYTES_WIDTH (3 * BYTES_SHOWN + 2)

/* The functions --sites names: one, or every one a pattern matches
 * (*fns malloc'd).  0, or -1 once said why. */
static int find_functions(struct dp_object *obj, const char *path, const char *what,
			  const struct dp_function ***fns, size_t *n)
{
	struct dp_location loc;
	struct dp_err err;
	const struct dp_function *fn;

	if (dp_spec_location_parse(what, &loc, &err)) {
		dp_err_prefix(&err, "--sites: ");
		dp_err_print(&err);
		return -1;
	}
	if (loc.kind == DP_LOC_SYMBOL && loc.has_offset) {
		dp_err("--sites takes a function (a name, or an address inside it), not %s", what);
		return -1;
	}
	if (loc.pattern) {
		if (dp_spec_functions_match(obj, path, &loc, fns, n, &err)) {
			dp_err_print(&err);
			return -1;
		}
		return 0;
	}
	/* Any address inside the function will do here. */
	if (dp_spec_function_find(obj, path, &loc, &fn, &err)) {
		dp_err_print(&err);
		return -1;
	}
	*fns = malloc(sizeof(**fns));
	if (!*fns) {
		dp_err("out of memory");
		return -1;
	}
	(*fns)[0] = fn;
	*n = 1;
	return 0;
}

/* The first bytes of an instruction, in hex ("f3 0f 1e fa", ".." past
 * BYTES_SHOWN). */
static void format_bytes(const uint8_t *b, size_t len, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < len && i < BYTES_SHOWN && n < size; i++)
		n += snprintf(buf + n, size - n, "%s%02x", i ? " " : "", b[i]);
	if (len > BYTES_SHOWN && n < size)
		snprintf(buf + n, size - n, " ..");
}

/* As lttng-dynprobed plans: branches led where only an int3 fits
 * otherwise, each patch standing alone (patch/plan.h). */
#define SITES_PLAN_FLAGS (DP_PLAN_REDIRECT | DP_PLAN_ALONE)

/* The count a planned patch adds to: jump (redirects too), int3, refused. */
static unsigned count_of(const struct dp_patch *p)
{
	return p->method == DP_SITE_REDIRECT ? DP_SITE_JUMP :
	       p->method < 3		     ? p->method :
					       DP_SITE_REFUSED;
}

/* How a probe at addr would be installed, counted and printed as the
 * PROBE column ("jump", "jump: led window: ...", "redirect: ...",
 * "int3: reason", "refused: reason"). */
static void print_placement(struct dp_object *obj, uint64_t addr, unsigned counts[3])
{
	struct dp_patch patch;
	char led[160];
	int r = dp_plan_site_flags(obj, addr, SITES_PLAN_FLAGS, &patch);

	if (r) {
		printf("error: %s\n", strerror(-r));
		return;
	}
	dp_plan_refuse_unsafe_traps(obj, &patch, 1);
	counts[count_of(&patch)]++;
	dp_plan_led_str(&patch, led, sizeof(led));
	if (patch.method == DP_SITE_REDIRECT)
		printf("%s\n", led);
	else if (patch.method == DP_SITE_JUMP)
		printf("jump%s%s\n", led[0] ? ": " : "", led);
	else
		printf("%s: %s\n", dp_site_method_str(patch.method), dp_reason_str(patch.reason));
}

/* path made absolute and opened: 0, or -1 once said why. */
static int object_open(const char *upath, char **path, struct dp_object **obj)
{
	struct dp_err err = DP_ERR_INIT;

	*obj = NULL;
	*path = dp_abs_path(upath, &err);
	if (!*path) {
		dp_err_print(&err);
		return -1;
	}
	*obj = dp_object_open(*path);
	if (!*obj) {
		dp_err("%s: %s", *path, dp_elf_strerror(errno));
		return -1;
	}
	return 0;
}

/* --mi xml: one instruction as a <dp:site>; method < 0: not planned
 * (error r). */
static void mi_site(uint64_t off, uint64_t addr, const char *bytes, const char *insn,
		    const struct dp_patch *patch, int r)
{
	printf("<dp:site>");
	dp_mi_elem("dp:offset", "0x%" PRIx64, off);
	dp_mi_elem("dp:address", "0x%" PRIx64, addr);
	dp_mi_elem("dp:bytes", "%s", bytes);
	dp_mi_elem("dp:instruction", "%s", insn);
	if (r) {
		dp_mi_elem("dp:error", "%s", strerror(-r));
	} else {
		char led[160];

		dp_mi_elem("dp:method", "%s", dp_site_method_str(patch->method));
		if (patch->method != DP_SITE_JUMP && patch->method != DP_SITE_REDIRECT)
			dp_mi_elem("dp:reason", "%s", dp_reason_str(patch->reason));
		else if (dp_plan_led_str(patch, led, sizeof(led))[0])
			dp_mi_elem("dp:led", "%s", led);
	}
	printf("</dp:site>");
}

/* One function's table (with mi, its <dp:function>); its sites are added
 * to counts.  0, or -1 once said why. */
static int function_sites(struct dp_object *obj, const char *path,
			  const struct dp_function *fn, unsigned counts[3], bool mi)
{
	char fname[DP_SPEC_SYMBOL_MAX + 32];
	const uint8_t *code = dp_elf_code(dp_object_elf(obj), fn->start, fn->size);

	dp_spec_function_format(fn, fname, sizeof(fname));
	if (!code) {
		dp_err("%s: the code of %s is not in the file (%s)", path, fname, strerror(errno));
		return -1;
	}
	if (mi) {
		printf("<dp:function>");
		dp_mi_elem("dp:name", "%s", fname);
		dp_mi_elem("dp:address", "0x%" PRIx64, fn->start);
		dp_mi_elem("dp:size", "%" PRIu64, fn->size);
		printf("<dp:sites>");
	} else {
		printf("Sites of %s in %s: 0x%" PRIx64 ", %" PRIu64 " bytes, %" PRIu32
		       " instructions\n\n", fname, path, fn->start, fn->size, fn->ninsns);
		printf("  %-8s  %-12s  %-*s  %-12s  %s\n", "OFFSET", "ADDRESS", BYTES_WIDTH, "BYTES",
		       "INSTRUCTION", "PROBE");
	}
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		uint64_t off = fn->insn_off[i], addr = fn->start + off;
		uint64_t end = i + 1 < fn->ninsns ? fn->insn_off[i + 1] : fn->size;
		struct dp_insn insn;
		struct dp_patch patch;
		char offs[24], bytes[BYTES_WIDTH + 1];
		int r;

		r = dp_insn_decode(code + off, fn->size - off, &insn);
		snprintf(offs, sizeof(offs), "+0x%" PRIx64, off);
		format_bytes(code + off, r ? end - off : insn.len, bytes, sizeof(bytes));
		if (mi) {
			const char *m = r ? "(undecoded)" : insn.mnemonic ? insn.mnemonic : "?";

			r = dp_plan_site_flags(obj, addr, SITES_PLAN_FLAGS, &patch);
			if (!r) {
				dp_plan_refuse_unsafe_traps(obj, &patch, 1);
				counts[count_of(&patch)]++;
			}
			mi_site(off, addr, bytes, m, &patch, r);
			continue;
		}
		printf("  %-8s  0x%-10" PRIx64 "  %-*s  %-12s  ", offs, addr, BYTES_WIDTH, bytes,
		       r ? "(undecoded)" : insn.mnemonic ? insn.mnemonic : "?");
		print_placement(obj, addr, counts);
	}
	if (mi) {
		printf("</dp:sites></dp:function>");
		return 0;
	}
	if ((fn->flags & DP_FN_UNDECODED) && fn->ninsns) {
		uint64_t last = fn->insn_off[fn->ninsns - 1];
		struct dp_insn insn;

		if (!dp_insn_decode(code + last, fn->size - last, &insn) &&
		    last + insn.len < fn->size)
			printf("  (0x%" PRIx64 " bytes from +0x%" PRIx64 " do not decode: no probe "
			       "there)\n", fn->size - last - insn.len, last + insn.len);
	}
	return 0;
}

static int list_sites(struct dp_cli *cli, const char *upath, const char *function)
{
	char *path;
	struct dp_object *obj;
	const struct dp_function **fns = NULL;
	unsigned counts[3] = { 0 };
	size_t n = 0;
	int ret = DP_CMD_ERROR;
	bool mi = dp_mi_xml(cli);

	if (object_open(upath, &path, &obj))
		goto out;
	if (find_functions(obj, path, function, &fns, &n))
		goto out;
	if (mi) {
		/* No stock element holds sites: a stock <output> with ours. */
		dp_mi_begin("list");
		printf("<dp:sites xmlns:dp=\"" DP_MI_NS "\">");
		dp_mi_elem("dp:path", "%s", path);
	}
	for (size_t i = 0; i < n; i++) {
		if (i && !mi)
			printf("\n");
		if (function_sites(obj, path, fns[i], counts, mi))
			goto out;
	}
	if (mi) {
		dp_mi_elem("dp:jump", "%u", counts[DP_SITE_JUMP]);
		dp_mi_elem("dp:int3", "%u", counts[DP_SITE_INT3]);
		dp_mi_elem("dp:refused", "%u", counts[DP_SITE_REFUSED]);
		printf("</dp:sites>");
		dp_mi_end(true);
	} else {
		printf("\nSites: %u by jump, %u by int3, %u refused", counts[DP_SITE_JUMP],
		       counts[DP_SITE_INT3], counts[DP_SITE_REFUSED]);
		if (n > 1)
			printf(", in %zu functions", n);
		printf("\n");
	}
	ret = DP_CMD_SUCCESS;
out:
	if (mi && ret != DP_CMD_SUCCESS && n) {
		/* Failed half-way: the document is closed, unsuccessful. */
		printf("</dp:sites>");
		dp_mi_end(false);
	}
	free(fns);
	dp_object_close(obj);
	free(path);
	return ret;
}

/* The functions a --functions PATTERN (or name) means, as users name them. */
static int list_functions(struct dp_cli *cli, const char *upath, const char *pattern)
{
	char name[DP_SPEC_SYMBOL_MAX + 32];
	struct dp_err err;
	char *path = dp_abs_path(upath, &err);
	struct dp_object *obj = NULL;
	const struct dp_function **fns = NULL;
	struct dp_location loc;
	size_t n = 0;
	int ret = DP_CMD_ERROR;

	if (!path) {
		dp_err_print(&err);
		return DP_CMD_ERROR;
	}
	if (dp_spec_location_parse(pattern, &loc, &err)) {
		dp_err_prefix(&err, "--functions: ");
		dp_err_print(&err);
		goto out;
	}
	if (loc.kind != DP_LOC_SYMBOL || loc.has_offset) {
		dp_err("--functions takes a pattern or a function's name, not %s", pattern);
		goto out;
	}
	obj = dp_object_open(path);
	if (!obj) {
		dp_err("%s: %s", path, dp_elf_strerror(errno));
		goto out;
	}
	if (dp_spec_functions_match(obj, path, &loc, &fns, &n, &err)) {
		dp_err_print(&err);
		goto out;
	}
	printf("  %-12s  %7s  %s\n", "ADDRESS", "SIZE", cli->verbose ? "NAME  [SYMBOL]" : "NAME");
	for (size_t i = 0; i < n; i++) {
		dp_spec_function_format(fns[i], name, sizeof(name));
		printf("  0x%-10" PRIx64 "  %7" PRIu64 "  %s", fns[i]->start, fns[i]->size, name);
		if (cli->verbose && fns[i]->name && strcmp(name, fns[i]->name))
			printf("  [%s]", fns[i]->name);
		printf("\n");
	}
	printf("\nFunctions: %zu in %s\n", n, path);
	ret = DP_CMD_SUCCESS;
out:
	free(fns);
	dp_object_close(obj);
	free(path);
	return ret;
}

/* Provider, then name, then address: how --sdt groups sites. */
static int sdt_cmp(const void *a, const void *b)
{
	const struct dp_sdt_probe *x = *(const struct dp_sdt_probe *const *)a;
	const struct dp_sdt_probe *y = *(const struct dp_sdt_probe *const *)b;
	int c = strcmp(x->provider, y->provider);

	if (!c)
		c = strcmp(x->name, y->name);
	return c ? c : x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* What the bytes of a site are: the nop <sys/sdt.h> writes, the newer
 * nop; nop5, or something else (a patched or odd file). */
static const char *sdt_site_form(const uint8_t *b, size_t len)
{
	static const uint8_t nop_nop5[] = { 0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00 };

	if (len >= sizeof(nop_nop5) && !memcmp(b, nop_nop5, sizeof(nop_nop5)))
		return "nop; nop5";
	if (len && b[0] == 0x90)
		return "nop";
	return "not a nop";
}

/* One site: address, bytes, form and placement; its arguments below. */
static void sdt_site(struct dp_object *obj, const struct dp_sdt_probe *p, unsigned counts[3])
{
	struct dp_elf *elf = dp_object_elf(obj);
	char bytes[BYTES_WIDTH + 1], arg[160];
	const uint8_t *code = NULL;
	struct dp_sdt_args args;
	struct dp_err err = DP_ERR_INIT;
	size_t len = BYTES_SHOWN;

	while (len && !(code = dp_elf_code(elf, p->pc, len)))
		len--;
	format_bytes(code, code ? len : 0, bytes, sizeof(bytes));
	printf("    0x%-10" PRIx64 "  %-*s  %-9s  ", p->pc, BYTES_WIDTH, code ? bytes : "(no code)",
	       code ? sdt_site_form(code, len) : "");
	print_placement(obj, p->pc, counts);
	if (p->semaphore)
		printf("      semaphore 0x%" PRIx64 "\n", p->semaphore);
	printf("      arguments: %s\n", p->args[0] ? p->args : "(none)");
	if (dp_spec_sdt_args_parse(p->args, &args, &err)) {
		printf("      error: %s\n", dp_err_str(&err));
		return;
	}
	for (unsigned i = 0; i < args.n; i++) {
		dp_spec_sdt_arg_format(&args.v[i], arg, sizeof(arg));
		printf("      arg%u: %s\n", i, arg);
	}
}

/* The SDT probes --sdt PATTERN names, by provider and name. */
static int list_sdt(const char *upath, const char *pattern)
{
	struct dp_err err = DP_ERR_INIT;
	char *path;
	struct dp_object *obj;
	struct dp_sdt_probe *probes = NULL;
	const struct dp_sdt_probe **m = NULL;
	size_t n = 0, nm = 0, nprobes = 0, nprov = 0;
	unsigned counts[3] = { 0 };
	int ret = DP_CMD_ERROR;

	if (object_open(upath, &path, &obj))
		goto out;
	if (dp_elf_sdt_probes(dp_object_elf(obj), &probes, &n, &err) ||
	    dp_spec_sdt_match(probes, n, pattern, &m, &nm, &err)) {
		dp_err_print(&err);
		goto out;
	}
	qsort(m, nm, sizeof(*m), sdt_cmp);
	printf("  %-12s  %-*s  %-9s  %s\n", "ADDRESS", BYTES_WIDTH, "BYTES", "SITE", "PROBE");
	for (size_t i = 0; i < nm; i++) {
		bool new_prov = !i || strcmp(m[i]->provider, m[i - 1]->provider);

		if (new_prov) {
			printf("\nProvider %s\n", m[i]->provider);
			nprov++;
		}
		if (new_prov || strcmp(m[i]->name, m[i - 1]->name)) {
			printf("  %s:%s\n", m[i]->provider, m[i]->name);
			nprobes++;
		}
		sdt_site(obj, m[i], counts);
	}
	printf("\nSDT probes: %zu in %zu provider%s, %zu site%s in %s: %u by jump, %u by int3, "
	       "%u refused\n", nprobes, nprov, nprov == 1 ? "" : "s", nm, nm == 1 ? "" : "s",
	       path, counts[DP_SITE_JUMP], counts[DP_SITE_INT3], counts[DP_SITE_REFUSED]);
	ret = DP_CMD_SUCCESS;
out:
	free(m);
	free(probes);
	dp_object_close(obj);
	free(path);
	return ret;
}

static void print_event(const struct dp_client_event *ev, bool with_session)
{
	printf("  %s (%s)%s%s, channel %s\n", ev->event,
	       ev->enabled ? "enabled" : "disabled", with_session ? ", session " : "",
	       with_session ? ev->session : "", ev->channel);
	printf("    %s %s in %s", dp_client_kind_str(ev->kind),
	       ev->location, ev->path);
	if (ev->npids) {
		printf(", pid%s", ev->npids > 1 ? "s" : "");
		for (uint32_t i = 0; i < ev->npids; i++)
			printf("%s%" PRIu32, i ? "," : " ", ev->pids[i]);
	}
	if (ev->flags & DP_CLIENT_EVENT_FOLLOW_EXEC)
		printf(", following executed programs");
	printf("\n    events:");
	for (uint32_t i = 0; i < ev->nnames; i++)
		printf(" %s", ev->names[i]);
	printf("\n");
	if (ev->nctx) {
		printf("    contexts:");
		for (uint32_t i = 0; i < ev->nctx; i++)
			printf("%s %s", i ? "," : "", ev->ctx[i]);
		printf("\n");
	}
	if (!ev->nprocs && ev->enabled)
		printf("    no process has its probes now\n");
	for (uint32_t i = 0; i < ev->nprocs; i++) {
		const struct dp_client_proc *p = &ev->procs[i];

		if (p->status)
			printf("    process %" PRIu32 ": %s\n", p->pid, p->message);
		else
			printf("    process %" PRIu32 ": %" PRIu32 " site%s by jump, %" PRIu32
			       " by int3\n", p->pid, p->njump, p->njump == 1 ? "" : "s", p->nint3);
	}
}

/* --mi xml: <dp:events>, the dynamic events of a LIST reply. */
static void mi_events(void *arg)
{
	const struct dp_client_list_reply *l = arg;

	printf("<dp:events xmlns:dp=\"" DP_MI_NS "\">");
	for (uint32_t i = 0; i < l->nevents; i++)
		dp_mi_dynamic_event(&l->events[i]);
	printf("</dp:events>");
}

/* The stock listing (argv: "list" and its arguments), then the dynamic
 * events of `session` ("": all); with --mi xml, the stock document with
 * <dp:events> at the end of its <output>. */
static int list_dynamic(struct dp_cli *cli, int fd, const char *session, int argc,
			const char **argv)
{
	struct dp_client_msg reply;
	const char **args = calloc(argc + 1, sizeof(*args));
	char *doc = NULL;
	struct dp_err err;
	int ret;

	if (!args)
		return DP_CMD_ERROR;
	for (int i = 0; i < argc; i++)
		args[i] = argv[i];
	ret = dp_mi_xml(cli) ? dp_stock_capture(cli, args, &doc) : dp_stock_run(cli, args);
	free(args);
	if (doc) {
		int lret;

		memset(&reply, 0, sizeof(reply));
		lret = dp_daemon_list(fd, session, &reply, &err);
		if (lret) {
			dp_err_print(&err);
		} else if (reply.list_reply.status) {
			dp_err("%s", reply.list_reply.message);
			lret = -1;
		}
		if (!lret && !ret)
			dp_mi_splice(doc, "</output>", mi_events, &reply.list_reply);
		else
			fputs(doc, stdout);
		fflush(stdout);
		dp_client_msg_release(&reply);
		free(doc);
		return ret ? ret : lret ? DP_CMD_ERROR : DP_CMD_SUCCESS;
	}
	if (dp_daemon_list(fd, session, &reply, &err)) {
		dp_err_print(&err);
		return ret ? ret : DP_CMD_ERROR;
	}
	if (reply.list_reply.status) {
		dp_err("%s", reply.list_reply.message);
		ret = ret ? ret : DP_CMD_ERROR;
	} else if (reply.list_reply.nevents) {
		printf("\nDynamic probe events (lttng-dynprobed):\n");
		for (uint32_t i = 0; i < reply.list_reply.nevents; i++)
			print_event(&reply.list_reply.events[i], !*session);
	}
	dp_client_msg_release(&reply);
	fflush(stdout);
	return ret;
}

/* ---- --lines and --inlines ------------------------------------------- */

/* The DWARF of obj, said where it came from; NULL once said why. */
static struct dp_dwarf *dwarf_of(struct dp_object *obj)
{
	struct dp_err err = DP_ERR_INIT;
	struct dp_dwarf *dw;

	if (dp_dwarf_get(dp_object_elf(obj), &dw, &err)) {
		dp_err_print(&err);
		return NULL;
	}
	return dw;
}

/* FILE[:FROM-TO] or FILE:LINE: 0, or -1 once said why. */
static int lines_arg(const char *arg, char *file, size_t size, uint32_t *from, uint32_t *to)
{
	const char *colon = strrchr(arg, ':');
	unsigned long a, b;
	char *end;

	*from = 1;
	*to = UINT32_MAX;
	if (!colon || !colon[1] || colon[1] < '0' || colon[1] > '9') {
		snprintf(file, size, "%s", arg);
		return 0;
	}
	snprintf(file, size, "%.*s", (int)(colon - arg), arg);
	a = strtoul(colon + 1, &end, 10);
	b = a;
	if (*end == '-')
		b = end[1] ? strtoul(end + 1, &end, 10) : UINT32_MAX;
	if (*end || !a || b < a || a > UINT32_MAX) {
		dp_err("--lines %s: expected FILE, FILE:LINE or FILE:FROM-TO (decimal lines, "
		       "from 1)", arg);
		return -1;
	}
	*from = (uint32_t)a;
	*to = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
	return 0;
}

static int list_lines(const char *upath, const char *arg)
{
	char *path = NULL, name[DP_SPEC_SYMBOL_MAX], text[512];
	struct dp_err err = DP_ERR_INIT;
	struct dp_object *obj = NULL;
	const struct dp_dwarf_row *rows;
	struct dp_dwarf *dw;
	const char *file;
	uint32_t from, to, shown = 0, line = 0;
	struct dp_location loc = { 0 };
	uint64_t *addrs = NULL;
	size_t n, na, naddr = 0;
	FILE *src;
	int ret = DP_CMD_ERROR;

	if (lines_arg(arg, name, sizeof(name), &from, &to) || object_open(upath, &path, &obj) ||
	    !(dw = dwarf_of(obj)))
		goto out;
	if (dp_spec_source_file(obj, path, name, &file, &err) ||
	    dp_dwarf_file_rows(dw, file, from, to, &rows, &n, &err)) {
		dp_err_print(&err);
		goto out;
	}
	if (!n) {
		loc.kind = DP_LOC_LINE;
		loc.line = from;
		snprintf(loc.symbol, sizeof(loc.symbol), "%s", file);
		if (from == to && dp_spec_line_resolve(obj, path, &loc, &addrs, &na, NULL, 0, &err))
			dp_err_print(&err);
		else
			dp_err("no line of %s from %" PRIu32 " to %" PRIu32 " has code", file, from,
			       to);
		goto out;
	}
	src = fopen(file, "r");
	printf("Lines of %s in %s (DWARF: %s, %s)\n\n", file, path, dp_dwarf_path(dw),
	       dp_dwarf_origin_str(dp_dwarf_origin(dw)));
	snprintf(loc.symbol, sizeof(loc.symbol), "%s", file);
	loc.kind = DP_LOC_LINE;
	for (size_t i = 0; i < n; i++) {
		if (i && rows[i].line == rows[i - 1].line)
			continue;
		/* The source text up to this line, when the file is here. */
		while (src && line < rows[i].line && fgets(text, sizeof(text), src)) {
			if (!strchr(text, '\n') && !feof(src)) {
				int c;

				while ((c = fgetc(src)) != EOF && c != '\n')
					;
			}
			line++;
		}
		text[strcspn(text, "\n")] = '\0';
		printf("  %6" PRIu32 " ", rows[i].line);
		loc.line = rows[i].line;
		if (!dp_spec_line_resolve(obj, path, &loc, &addrs, &na, NULL, 0, NULL)) {
			for (size_t k = 0; k < na; k++)
				printf(" 0x%" PRIx64, addrs[k]);
			naddr += na;
			free(addrs);
		} else {
			printf(" (no instruction starts there)");
		}
		if (src && line == rows[i].line)
			printf("\t%s", text);
		printf("\n");
		shown++;
	}
	if (src)
		fclose(src);
	printf("\nLines with code: %" PRIu32 ", %zu probe address%s\n", shown, naddr,
	       naddr == 1 ? "" : "es");
	ret = DP_CMD_SUCCESS;
out:
	dp_object_close(obj);
	free(path);
	return ret;
}

static void print_ranges(const struct dp_dwarf_inline *inl)
{
	printf("    ranges  ");
	for (uint32_t r = 0; r < inl->nranges; r++)
		printf(" 0x%" PRIx64 "-0x%" PRIx64, inl->ranges[r].lo, inl->ranges[r].hi);
	printf("%s\n", inl->nranges ? (inl->listed ? "  (DW_AT_ranges)" : "  (low/high pc)") :
			       " none");
}

static int list_inlines(const char *upath, const char *name)
{
	char *path = NULL, where[DP_SPEC_SYMBOL_MAX + 128], fname[DP_SPEC_SYMBOL_MAX + 32];
	struct dp_err err = DP_ERR_INIT;
	struct dp_object *obj = NULL;
	struct dp_spec_fn_sites fs = { 0 };
	struct dp_location loc;
	unsigned counts[3] = { 0 };
	size_t nrefused = 0;
	int ret = DP_CMD_ERROR;

	if (dp_spec_location_parse(name, &loc, &err)) {
		dp_err_prefix(&err, "--inlines: ");
		dp_err_print(&err);
		return DP_CMD_ERROR;
	}
	if (loc.kind != DP_LOC_SYMBOL || loc.pattern || loc.has_offset) {
		dp_err("--inlines takes a function's name, not %s", name);
		return DP_CMD_ERROR;
	}
	if (object_open(upath, &path, &obj) || !dwarf_of(obj))
		goto out;
	if (dp_spec_function_sites(obj, path, &loc, DP_SPEC_COPIES_ALL, &fs, &err)) {
		dp_err_print(&err);
		goto out;
	}
	printf("Copies of %s in %s: %zu out-of-line bod%s, %zu inlined\n", name, path, fs.nfns,
	       fs.nfns == 1 ? "y" : "ies", fs.copies.n);
	for (size_t f = 0; f < fs.nfns; f++) {
		const struct dp_function *fn = fs.fns[f];

		dp_spec_function_format(fn, fname, sizeof(fname));
		printf("\n  out of line: %s, 0x%" PRIx64 ", %" PRIu64 " bytes\n", fname, fn->start,
		       fn->size);
		printf("    entry    0x%-10" PRIx64 "  ", fn->start);
		print_placement(obj, fn->start, counts);
		for (uint32_t i = 0; i < fn->nrets; i++) {
			if (!dp_spec_return_leaves(obj, fn, &fn->rets[i]))
				continue;
			printf("    return   0x%-10" PRIx64 "  ", fn->rets[i].addr);
			print_placement(obj, fn->rets[i].addr, counts);
		}
	}
	for (size_t i = 0; i < fs.copies.n; i++) {
		const struct dp_spec_copy *c = &fs.copies.v[i];

		dp_spec_copy_format(c->inl, where, sizeof(where));
		printf("\n  copy %zu: %s\n", i + 1, where);
		print_ranges(c->inl);
		if (!c->entry) {
			printf("    refused: %s\n", c->why);
			nrefused++;
			continue;
		}
		printf("    entry    0x%-10" PRIx64 "  (%s)  ", c->entry,
		       c->inl->entry_pc ? "DW_AT_entry_pc" : "first range");
		print_placement(obj, c->entry, counts);
		for (uint32_t k = 0; k < c->nrets; k++) {
			printf("    return   0x%-10" PRIx64 "  (%s)  ", c->rets[k],
			       dp_spec_ret_how_str(c->how[k]));
			print_placement(obj, c->rets[k], counts);
		}
	}
	printf("\nSites: %u by jump, %u by int3, %u refused; %zu cop%s without a site\n",
	       counts[DP_SITE_JUMP], counts[DP_SITE_INT3], counts[DP_SITE_REFUSED], nrefused,
	       nrefused == 1 ? "y" : "ies");
	ret = DP_CMD_SUCCESS;
out:
	dp_spec_fn_sites_release(&fs);
	dp_object_close(obj);
	free(path);
	return ret;
}

int dp_cmd_list(struct dp_cli *cli, int argc, const char **argv)
{
	struct dp_opts o = { .set = { false } };
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	int opt = dp_opts_parse(&o, pc), ret = DP_CMD_PASS, fd;
	const char *path = o.arg[DP_OPT_PATH], *sites = o.arg[OPT_SITES];
	bool functions = o.set[OPT_FUNCTIONS], sdt = o.set[OPT_SDT];
	/* Options of listings that show no dynamic event. */
	bool other = o.set[DP_OPT_OTHER_DOMAIN] || o.set[OPT_DOMAIN] || o.set[OPT_FIELDS] ||
		     o.set[OPT_SYSCALL];
	const char **args;

	if (opt < -1) {
		if (path || sites || functions || sdt || o.set[OPT_VARS]) {
			dp_err("%s: %s", poptBadOption(pc, POPT_BADOPTION_NOALIAS), poptStrerror(opt));
			ret = DP_CMD_ERROR;
		}
		goto out;
	}
	if (o.set[DP_OPT_HELP]) {
		ret = dp_show_man("list");
		goto out;
	}
	if (o.set[DP_OPT_LIST_OPTIONS]) {
		ret = dp_opts_list(cli, "list", options);
		goto out;
	}
	args = poptGetArgs(pc);
	if (o.set[OPT_VARS]) {
		ret = DP_CMD_ERROR;
		if (!path)
			dp_err("--vars needs --path PATH (the executable or shared library)");
		else if (sites || functions || sdt || other || o.arg[DP_OPT_CHANNEL] ||
			 (args && args[0]) ||
			 o.set[OPT_LINES] || o.set[OPT_INLINES])
			dp_err("--vars goes with -u and --path only: lttng list -u --path PATH "
			       "--vars LOCATION");
		else if (cli->mi)
			dp_err("the machine interface (--mi) does not cover --vars: run without it");
		else
			ret = dp_list_vars(path, o.arg[OPT_VARS]);
		goto out;
	}
	if (o.set[OPT_LINES] || o.set[OPT_INLINES]) {
		const char *what = o.set[OPT_LINES] ? "--lines" : "--inlines";

		ret = DP_CMD_ERROR;
		if (!path)
			dp_err("%s needs --path PATH (the executable or shared library)", what);
		else if (sites || functions || sdt || (o.set[OPT_LINES] && o.set[OPT_INLINES]))
			dp_err("--lines, --inlines, --sdt, --sites and --functions go one at a time");
		else if (other || o.arg[DP_OPT_CHANNEL] || (args && args[0]))
			dp_err("%s goes with -u and --path only: lttng list -u --path PATH %s", what,
			       o.set[OPT_LINES] ? "--lines FILE[:FROM-TO]" : "--inlines NAME");
		else if (cli->mi)
			dp_err("the machine interface (--mi) does not cover %s: run without it",
			       what);
		else if (o.set[OPT_LINES])
			ret = list_lines(path, o.arg[OPT_LINES]);
		else
			ret = list_inlines(path, o.arg[OPT_INLINES]);
		goto out;
	}
	if (sdt) {
		ret = DP_CMD_ERROR;
		if (!path)
			dp_err("--sdt needs --path PATH (the executable or shared library)");
		else if (sites || functions)
			dp_err("--sdt, --sites and --functions go one at a time");
		else if (other || o.arg[DP_OPT_CHANNEL] || (args && args[0]))
			dp_err("--sdt goes with -u and --path only: lttng list -u --path PATH "
			       "--sdt [PROVIDER:NAME]");
		else if (cli->mi)
			dp_err("the machine interface (--mi) does not cover --sdt: run without it");
		else
			ret = list_sdt(path, o.arg[OPT_SDT] ? o.arg[OPT_SDT] : "*:*");
		goto out;
	}
	if (path || sites || functions) {
		ret = DP_CMD_ERROR;
		if (!path || (!sites == !functions)) {
			dp_err(!path ? "%s needs --path PATH (the executable or shared library)" :
			       sites ? "--sites and --functions go one at a time" :
			       "--path lists nothing alone: add --sites FUNCTION, --functions "
			       "[PATTERN] or --sdt [PROVIDER:NAME]", sites ? "--sites FUNCTION" : "--functions");
		} else if (functions && (other || o.arg[DP_OPT_CHANNEL] || (args && args[0]))) {
			dp_err("--functions goes with -u and --path only: lttng list -u --path PATH "
			       "--functions [PATTERN]");
		} else if (functions && cli->mi) {
			dp_err("the machine interface (--mi) does not cover --functions: run without "
			       "it");
		} else if (functions) {
			ret = list_functions(cli, path, o.arg[OPT_FUNCTIONS] ? o.arg[OPT_FUNCTIONS] :
					     "*");
		} else if (other || o.arg[DP_OPT_CHANNEL] || (args && args[0])) {
			dp_err("--sites goes with -u and --path only: lttng list -u --path PATH "
			       "--sites FUNCTION");
		} else if (!dp_mi_refused(cli)) {
			ret = list_sites(cli, path, sites);
		}
		goto out;
	}
	/* The listings that can show dynamic events: `list -u` (all of them)
	 * and `list SESSION`. */
	if ((cli->mi && !dp_mi_xml(cli)) || other)
		goto out;
	if (!(args && args[0]) && !o.set[DP_OPT_USERSPACE])
		goto out;
	fd = dp_daemon_connect(cli, false, NULL);
	if (fd < 0)
		goto out;
	ret = list_dynamic(cli, fd, args && args[0] ? args[0] : "", argc, argv);
	close(fd);
out:
	poptFreeContext(pc);
	dp_opts_release(&o);
	return ret;
}
