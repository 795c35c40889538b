/*
 * A small client of lttng-dynprobed for the daemon's tests: one request per
 * run, spoken with proto/client.h, the reply printed as lines of key=value
 * words that shell tests grep.  Exit status 0 when the request succeeded, 1
 * when the daemon said no, 2 when it could not be asked.
 *
 *   dpctl ping
 *   dpctl enable SESSION CHANNEL EVENT probe|function LOCATION PATH
 *                [-p PID]... [-c CONTEXT]...
 *   dpctl disable SESSION CHANNEL EVENT
 *   dpctl add-context SESSION CHANNEL EVENT|"" CONTEXT...
 *   dpctl list [SESSION]
 *   dpctl sites PATH FUNCTION
 *   dpctl destroyed SESSION
 *   dpctl raw-type TYPE             a request of a type the daemon cannot know
 *   dpctl enable-each SESSION CHANNEL PID PATH FUNCTION...
 *       one event (named after it) with an entry probe per FUNCTION in PID,
 *       one ENABLE request each, on one connection; prints
 *       "status=S enabled=N failed=F wall_ms=T" (for tests/perf/install-cost.sh)
 *   dpctl enable-many SESSION CHANNEL PID PATH FUNCTION|NAME=LOCATION...
 *       the same events (or probes of LOCATION named NAME) in one
 *       ENABLE_MANY request; prints each event's
 *       report after a line "report I", then the same last line as
 *       enable-each
 *   dpctl cycles N SESSION CHANNEL PID PATH FUNCTION OFFSET SHM OUT
 *       N install/remove cycles of FUNCTION (--function) and FUNCTION+OFFSET
 *       (--probe) in PID, each window lasting a few milliseconds (until a
 *       thread made two calls, on a starved machine); SHM is
 *       the target's counter file: for each window, the calls each thread
 *       completed while every probe was in place go to OUT, one line
 *       "WINDOW THREAD FIRST LAST" (seqs FIRST..LAST must all be recorded)
 *   dpctl calls SHM
 *       the sum of the target's per-thread counters (no daemon needed)
 *
 * Output lines:
 *   status=S message=TEXT
 *   event NAME
 *   proc pid=P status=S jump=J int3=I refused=R message=TEXT
 *   site event=E addr=0xA vaddr=0xV method=M reason=R text=TEXT
 *   dyn session=S channel=C event=E kind=K location=L path=P enabled=B
 *       names=N1,N2 ctx=C1,C2 procs=PID:J:I,...
 *   insn off=O len=L bytes=HEX mnemonic=M method=M reason=R
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "proto/client.h"
#include "target-shm.h"

static int fd = -1;
static uint32_t seq = 1;

static int call(struct dp_client_msg *req, struct dp_client_msg *rep)
{
	enum dp_proto_err why;
	int ret = dp_client_call(fd, req, &seq, rep, DP_CLIENT_CALL_TIMEOUT_MS, &why);

	if (ret) {
		printf("status=%d message=the call failed: %s\n", ret,
		       ret == -EPROTO ? dp_proto_err_str(why) : strerror(-ret));
		return 2;
	}
	return 0;
}

static void print_proc(const struct dp_client_proc *p)
{
	printf("proc pid=%u status=%d jump=%u int3=%u refused=%u message=%s\n", p->pid, p->status,
	       p->njump, p->nint3, p->nrefused, p->message);
	for (uint32_t k = 0; k < p->nsites; k++) {
		const struct dp_client_site *s = &p->sites[k];

		printf("site event=%s addr=0x%" PRIx64 " vaddr=0x%" PRIx64
		       " method=%s reason=%s text=%s\n",
		       s->event, s->addr, s->vaddr, dp_client_method_str(s->method),
		       s->reason[0] ? s->reason : "-", s->text[0] ? s->text : "-");
	}
}

static int print_report(const struct dp_client_report *r)
{
	printf("status=%d message=%s\n", r->status, r->message);
	for (uint32_t i = 0; i < r->nevents; i++)
		printf("event %s\n", r->events[i]);
	for (uint32_t i = 0; i < r->nprocs; i++)
		print_proc(&r->procs[i]);
	return r->status ? 1 : 0;
}

static int do_report(struct dp_client_msg *req, bool quiet)
{
	struct dp_client_msg rep;
	int ret = call(req, &rep);

	if (ret)
		return ret;
	ret = quiet ? (rep.report.status ? 1 : 0) : print_report(&rep.report);
	if (quiet && ret)
		printf("status=%d message=%s\n", rep.report.status, rep.report.message);
	dp_client_msg_release(&rep);
	return ret;
}

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src);
}

static int enable(char **argv, int argc, bool quiet)
{
	struct dp_client_msg req = { .type = DP_CLIENT_ENABLE };
	struct dp_client_enable *e = &req.enable;
	uint32_t pids[64];
	char ctx[DP_CLIENT_MAX_CTX][DP_CLIENT_CTX_MAX];
	int ret;

	if (argc < 6)
		return 2;
	copy(e->session, sizeof(e->session), argv[0]);
	copy(e->channel, sizeof(e->channel), argv[1]);
	copy(e->event, sizeof(e->event), argv[2]);
	e->kind = !strcmp(argv[3], "function") ? DP_CLIENT_KIND_FUNCTION : DP_CLIENT_KIND_PROBE;
	copy(e->location, sizeof(e->location), argv[4]);
	copy(e->path, sizeof(e->path), argv[5]);
	for (int i = 6; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-p") && e->npids < 64)
			pids[e->npids++] = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "-c") && e->nctx < DP_CLIENT_MAX_CTX)
			copy(ctx[e->nctx++], DP_CLIENT_CTX_MAX, argv[i + 1]);
	}
	e->pids = pids;
	e->ctx = ctx;
	ret = do_report(&req, quiet);
	return ret;
}

static int event_ref(uint16_t type, char **argv, int argc, bool quiet)
{
	struct dp_client_msg req = { .type = type };

	if (argc < 3)
		return 2;
	copy(req.disable.session, sizeof(req.disable.session), argv[0]);
	copy(req.disable.channel, sizeof(req.disable.channel), argv[1]);
	copy(req.disable.event, sizeof(req.disable.event), argv[2]);
	return do_report(&req, quiet);
}

static int add_context(char **argv, int argc)
{
	struct dp_client_msg req = { .type = DP_CLIENT_ADD_CONTEXT };
	char ctx[DP_CLIENT_MAX_CTX][DP_CLIENT_CTX_MAX];

	if (argc < 4)
		return 2;
	copy(req.add_context.session, sizeof(req.add_context.session), argv[0]);
	copy(req.add_context.channel, sizeof(req.add_context.channel), argv[1]);
	copy(req.add_context.event, sizeof(req.add_context.event), argv[2]);
	for (int i = 3; i < argc && req.add_context.nctx < DP_CLIENT_MAX_CTX; i++)
		copy(ctx[req.add_context.nctx++], DP_CLIENT_CTX_MAX, argv[i]);
	req.add_context.ctx = ctx;
	return do_report(&req, false);
}

static int list(const char *session)
{
	struct dp_client_msg req = { .type = DP_CLIENT_LIST }, rep;
	int ret;

	copy(req.list, sizeof(req.list), session);
	ret = call(&req, &rep);
	if (ret)
		return ret;
	printf("status=%d message=%s\n", rep.list_reply.status, rep.list_reply.message);
	for (uint32_t i = 0; i < rep.list_reply.nevents; i++) {
		const struct dp_client_event *e = &rep.list_reply.events[i];

		printf("dyn session=%s channel=%s event=%s kind=%s location=%s path=%s enabled=%d "
		       "names=", e->session, e->channel, e->event,
		       e->kind == DP_CLIENT_KIND_FUNCTION ? "function" : "probe", e->location,
		       e->path, e->enabled);
		for (uint32_t k = 0; k < e->nnames; k++)
			printf("%s%s", k ? "," : "", e->names[k]);
		printf(" ctx=");
		for (uint32_t k = 0; k < e->nctx; k++)
			printf("%s%s", k ? "," : "", e->ctx[k]);
		printf(" procs=");
		for (uint32_t k = 0; k < e->nprocs; k++)
			printf("%s%u:%u:%u", k ? "," : "", e->procs[k].pid, e->procs[k].njump,
			       e->procs[k].nint3);
		printf("\n");
	}
	ret = rep.list_reply.status ? 1 : 0;
	dp_client_msg_release(&rep);
	return ret;
}

static int sites(const char *path, const char *fn)
{
	struct dp_client_msg req = { .type = DP_CLIENT_SITES }, rep;
	int ret;

	copy(req.sites.path, sizeof(req.sites.path), path);
	copy(req.sites.function, sizeof(req.sites.function), fn);
	ret = call(&req, &rep);
	if (ret)
		return ret;
	printf("status=%d message=%s\n", rep.sites_reply.status, rep.sites_reply.message);
	printf("function name=%s start=0x%" PRIx64 " size=%" PRIu64 "\n", rep.sites_reply.function,
	       rep.sites_reply.start, rep.sites_reply.size);
	for (uint32_t i = 0; i < rep.sites_reply.ninsns; i++) {
		const struct dp_client_insn *in = &rep.sites_reply.insns[i];

		printf("insn off=%u len=%u bytes=", in->offset, in->len);
		for (uint8_t k = 0; k < in->len; k++)
			printf("%02x", in->bytes[k]);
		printf(" mnemonic=%s method=%s reason=%s\n", in->mnemonic[0] ? in->mnemonic : "-",
		       dp_client_method_str(in->method), in->reason[0] ? in->reason : "-");
	}
	ret = rep.sites_reply.status ? 1 : 0;
	dp_client_msg_release(&rep);
	return ret;
}

static int ping(void)
{
	struct dp_client_msg req = { .type = DP_CLIENT_PING, .ping = 0x1234 }, rep;
	int ret = call(&req, &rep);

	if (ret)
		return ret;
	printf("status=0 pid=%u version=%s cookie=%s\n", rep.ping_reply.daemon_pid,
	       rep.ping_reply.version, rep.ping_reply.cookie == 0x1234 ? "ok" : "bad");
	dp_client_msg_release(&rep);
	return 0;
}

/* A frame of a type this protocol version does not have. */
static int raw_type(const char *type)
{
	uint8_t frame[DP_FRAME_HDR_LEN];
	struct dp_frame_hdr h = {
		.magic = DP_CLIENT_MAGIC, .major = DP_CLIENT_MAJOR, .minor = DP_CLIENT_MINOR,
		.type = (uint16_t)strtoul(type, NULL, 0), .len = 0, .seq = 77,
	};
	struct dp_client_msg rep;
	enum dp_proto_err why;
	int ret;

	dp_frame_hdr_encode(&h, frame);
	if (dp_frame_write_all(fd, frame, sizeof(frame), 2000))
		return 2;
	ret = dp_client_recv(fd, &rep, 5000, &why);
	if (ret)
		return 2;
	printf("status=0 reply=%s unsupported=0x%04x seq=%u\n",
	       dp_client_type_name(rep.type) ? dp_client_type_name(rep.type) : "?", rep.unsupported,
	       rep.seq);
	return 0;
}

/* ---- enable-each --------------------------------------------------------- */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The requests go one after the other on one connection so that the wall
 * time is the daemon's, not that of starting a client per probe. */
static int enable_each(char **argv, int argc)
{
	int enabled = 0, failed = 0;
	double start;

	if (argc < 5) {
		printf("status=-22 message=bad enable-each arguments\n");
		return 2;
	}
	start = now_ms();
	for (int i = 4; i < argc; i++) {
		char *eargs[] = { argv[0], argv[1], argv[i], "probe", argv[i], argv[3],
				  "-p", argv[2] };
		int ret = enable(eargs, 8, true);

		if (ret == 2)
			return ret;
		if (ret)
			failed++;
		else
			enabled++;
	}
	printf("status=%d enabled=%d failed=%d wall_ms=%.3f\n", failed ? 1 : 0, enabled, failed,
	       now_ms() - start);
	return failed ? 1 : 0;
}

/* ---- enable-many -------------------------------------------------------- */

static int enable_many(char **argv, int argc)
{
	struct dp_client_msg req = { .type = DP_CLIENT_ENABLE_MANY }, rep;
	struct dp_client_enable_many *m = &req.enable_many;
	uint32_t pid;
	int enabled = 0, failed = 0, ret;
	double start;

	if (argc < 5) {
		printf("status=-22 message=bad enable-many arguments\n");
		return 2;
	}
	copy(m->session, sizeof(m->session), argv[0]);
	copy(m->channel, sizeof(m->channel), argv[1]);
	pid = (uint32_t)strtoul(argv[2], NULL, 10);
	m->npids = 1;
	m->pids = &pid;
	copy(m->path, sizeof(m->path), argv[3]);
	m->nspecs = (uint32_t)(argc - 4);
	m->specs = calloc(m->nspecs, sizeof(*m->specs));
	if (!m->specs) {
		printf("status=-12 message=out of memory\n");
		return 2;
	}
	for (uint32_t i = 0; i < m->nspecs; i++) {
		const char *arg = argv[4 + i], *eq = strchr(arg, '=');

		snprintf(m->specs[i].event, sizeof(m->specs[i].event), "%.*s",
			 eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		m->specs[i].kind = DP_CLIENT_KIND_PROBE;
		copy(m->specs[i].location, sizeof(m->specs[i].location), eq ? eq + 1 : arg);
	}
	start = now_ms();
	ret = call(&req, &rep);
	free(m->specs);
	if (ret)
		return ret;
	if (rep.type != DP_CLIENT_ENABLE_MANY_REPLY) {
		printf("status=-71 message=reply %s\n", dp_client_type_name(rep.type) ?
		       dp_client_type_name(rep.type) : "?");
		dp_client_msg_release(&rep);
		return 2;
	}
	for (uint32_t i = 0; i < rep.reports.nreports; i++) {
		printf("report %u\n", i);
		if (print_report(&rep.reports.reports[i]))
			failed++;
		else
			enabled++;
	}
	dp_client_msg_release(&rep);
	printf("status=%d enabled=%d failed=%d wall_ms=%.3f\n", failed ? 1 : 0, enabled, failed,
	       now_ms() - start);
	return failed ? 1 : 0;
}

/* ---- cycles ------------------------------------------------------------ */

static struct dp_target_shm *shm_open_file(const char *path)
{
	int sfd = open(path, O_RDONLY | O_CLOEXEC);
	void *p;

	if (sfd < 0)
		return NULL;
	p = mmap(NULL, sizeof(struct dp_target_shm), PROT_READ, MAP_SHARED, sfd, 0);
	close(sfd);
	return p == MAP_FAILED ? NULL : p;
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int cycles(char **argv, int argc)
{
	long n = argc >= 9 ? strtol(argv[0], NULL, 10) : 0;
	const char *session = argv[1], *channel = argv[2], *pid = argv[3], *path = argv[4];
	const char *fn = argv[5], *off = argv[6];
	struct dp_target_shm *shm = shm_open_file(argv[7]);
	FILE *out = fopen(argv[8], "w");
	char loc[DP_CLIENT_LOCATION_MAX];
	char *fargs[] = { (char *)session, (char *)channel, "cyc_fn", "function", (char *)fn,
			  (char *)path, "-p", (char *)pid, "-c", "reg:rdi", "-c", "reg:rsi" };
	char *pargs[] = { (char *)session, (char *)channel, "cyc_off", "probe", loc, (char *)path,
			  "-p", (char *)pid, "-c", "reg:rdi", "-c", "reg:rsi" };
	char *dfn[] = { (char *)session, (char *)channel, "cyc_fn" };
	char *doff[] = { (char *)session, (char *)channel, "cyc_off" };
	uint64_t open_seq[DP_TARGET_MAX_THREADS];

	if (!n || !shm || !out) {
		printf("status=-22 message=bad cycles arguments\n");
		return 2;
	}
	snprintf(loc, sizeof(loc), "%s+%s", fn, off);
	for (long c = 0; c < n; c++) {
		int ret = enable(fargs, 12, true);

		if (!ret)
			ret = enable(pargs, 12, true);
		if (ret) {
			printf("cycle %ld: enable failed\n", c);
			return ret;
		}
		/* Calls that start after this point run with every probe in
		 * place: the one in flight now may have missed its entry. */
		for (unsigned t = 0; t < shm->nthreads; t++)
			open_seq[t] = __atomic_load_n(&shm->done[t], __ATOMIC_ACQUIRE);
		nap_ms(c == 0 ? 300 : 8);
		/* A window in which no thread got a CPU checks nothing: on a
		 * starved machine it stays open until one made two calls (at
		 * most 2 s: a target that never runs again leaves none). */
		for (int waited = 0; c > 0 && waited < 2000; waited += 2) {
			bool ran = false;

			for (unsigned t = 0; t < shm->nthreads && !ran; t++)
				ran = __atomic_load_n(&shm->done[t], __ATOMIC_ACQUIRE) >=
				      open_seq[t] + 2;
			if (ran)
				break;
			nap_ms(2);
		}
		for (unsigned t = 0; t < shm->nthreads; t++) {
			uint64_t close_seq = __atomic_load_n(&shm->done[t], __ATOMIC_ACQUIRE);

			/* The first window lets the session daemon enable the
			 * new event classes: it is not checked. */
			if (c > 0 && close_seq >= open_seq[t] + 2)
				fprintf(out, "%ld %u %" PRIu64 " %" PRIu64 "\n", c, t, open_seq[t] + 2,
					close_seq);
		}
		ret = event_ref(DP_CLIENT_DISABLE, dfn, 3, true);
		if (!ret)
			ret = event_ref(DP_CLIENT_DISABLE, doff, 3, true);
		if (ret) {
			printf("cycle %ld: disable failed\n", c);
			return ret;
		}
		if (shm->errors) {
			printf("status=-1 message=the target saw %" PRIu64 " wrong results at cycle "
			       "%ld\n", shm->errors, c);
			return 1;
		}
		nap_ms(2);
	}
	fclose(out);
	printf("status=0 message=%ld cycles\n", n);
	return 0;
}

/* The calls the target's threads completed, each counter read whole (a
 * reader of the file, od say, may see one half-written). */
static int calls(const char *path)
{
	struct dp_target_shm *shm = shm_open_file(path);
	uint64_t sum = 0;

	if (!shm) {
		fprintf(stderr, "dpctl: cannot map %s: %s\n", path, strerror(errno));
		return 2;
	}
	for (unsigned t = 0; t < DP_TARGET_MAX_THREADS; t++)
		sum += __atomic_load_n(&shm->done[t], __ATOMIC_ACQUIRE);
	printf("%" PRIu64 "\n", sum);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: dpctl COMMAND ARGS... (see the source)\n");
		return 2;
	}
	/* No daemon needed. */
	if (!strcmp(cmd, "calls") && argc >= 3)
		return calls(argv[2]);
	fd = dp_client_connect();
	if (fd < 0) {
		printf("status=%d message=cannot connect to the daemon: %s\n", fd, strerror(-fd));
		return 2;
	}
	argv += 2;
	argc -= 2;
	if (!strcmp(cmd, "ping"))
		ret = ping();
	else if (!strcmp(cmd, "enable"))
		ret = enable(argv, argc, false);
	else if (!strcmp(cmd, "disable"))
		ret = event_ref(DP_CLIENT_DISABLE, argv, argc, false);
	else if (!strcmp(cmd, "add-context"))
		ret = add_context(argv, argc);
	else if (!strcmp(cmd, "list"))
		ret = list(argc ? argv[0] : "");
	else if (!strcmp(cmd, "sites") && argc >= 2)
		ret = sites(argv[0], argv[1]);
	else if (!strcmp(cmd, "destroyed") && argc >= 1) {
		struct dp_client_msg req = { .type = DP_CLIENT_SESSION_DESTROYED };

		copy(req.session_destroyed, sizeof(req.session_destroyed), argv[0]);
		ret = do_report(&req, false);
	} else if (!strcmp(cmd, "raw-type") && argc >= 1)
		ret = raw_type(argv[0]);
	else if (!strcmp(cmd, "enable-each"))
		ret = enable_each(argv, argc);
	else if (!strcmp(cmd, "enable-many"))
		ret = enable_many(argv, argc);
	else if (!strcmp(cmd, "cycles"))
		ret = cycles(argv, argc);
	else {
		fprintf(stderr, "dpctl: unknown command '%s'\n", cmd);
		ret = 2;
	}
	close(fd);
	return ret;
}
