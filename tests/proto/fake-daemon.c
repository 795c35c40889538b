/*
 * A stand-in for lttng-dynprobed's app socket, for the agent's tests: it
 * listens where agents connect, and talks to them with the app protocol's
 * own API, as the daemon does.  A test drives it with one command per line
 * on stdin; each answer is one line on stdout ("key=value" words), a state
 * several lines ending with "end".
 *
 *   accept MS                     wait for an agent, read its HELLO, welcome it;
 *                                 it becomes the current connection
 *   accept-refuse MS              ... and answer REFUSE instead
 *   accept-major MS MAJOR         ... and answer a HELLO_REPLY of another major
 *   use N                         the Nth accepted connection becomes current
 *   alloc NEAR SIZE               ALLOC_CODE
 *   define ID SITE FLAGS EVENT [CTX...]
 *                                 DEFINE_PROBE; CTX: regs | retval | reg:NUM:WIDTH:NAME
 *   installed SITE jump|int3 ORIGHEX TRAMP TRAMPLEN RESUME ID[,ID...]
 *                                 NOTE_INSTALLED (records only: nothing is written)
 *   removed SITE                  NOTE_REMOVED
 *   define-many FIRST N SITE STEP DEFINE_PROBES of N probes, ids FIRST..., sites
 *                                 SITE + k * STEP, of two classes in turn
 *                                 (batch_entry, flags 1; batch_return, retval)
 *   installed-many FIRST N SITE STEP [BAD]
 *                                 NOTE_INSTALLED_MANY of N jump patches (records
 *                                 only) at SITE + k * STEP, patch k serving probe
 *                                 FIRST + k; patch BAD (from 0) names no probe
 *   removed-many N SITE STEP [EXTRA]
 *                                 NOTE_REMOVED_MANY of those N sites (and EXTRA)
 *   list                          LIST
 *   ping COOKIE                   PING
 *   unknown TYPE                  a request of a type the agent cannot know
 *   malformed                     a DEFINE_PROBE with one context too many
 *   patch-jump ID SITE PROBE      a real patch: ALLOC_CODE, a trampoline calling
 *                                 dp_probe_hit(PROBE) written through /proc/PID/mem,
 *                                 the jump, NOTE_INSTALLED
 *   patch-int3 ID SITE PROBE      a real int3 patch: the relocated instruction in
 *                                 ALLOC_CODE memory, NOTE_INSTALLED (the trap site
 *                                 must be known first), then the int3
 *   unpatch SITE                  the original bytes the agent reports (LIST) put
 *                                 back, NOTE_REMOVED: what a restarted daemon does
 *   wait-close MS                 until the agent closes the current connection
 *   quit
 *
 * Unlike the daemon it does not stop the target's threads before writing
 * code: the tests only patch functions no thread is running.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "patch/tramp.h"
#include "proto/app.h"
#include "x86/emit.h"
#include "x86/insn.h"

#define MAX_CONNS 16

struct conn {
	int fd;
	pid_t pid;
	uint64_t probe_hit;
	uint32_t seq;
};

static struct conn conns[MAX_CONNS];
static unsigned nconns, cur;
static int listen_fd = -1;

static void print_state(const struct dp_app_state *s)
{
	printf("state probes=%u patches=%u traps_ours=%" PRIu64 " traps_chained=%" PRIu64
	       " traps_reasserted=%" PRIu64 "\n",
	       s->nprobes, s->npatches, s->traps_ours, s->traps_chained, s->traps_reasserted);
	for (uint32_t i = 0; i < s->nprobes; i++) {
		const struct dp_app_probe *p = &s->probes[i];

		printf("probe id=%u site=0x%" PRIx64 " flags=%u event=%s hits=%" PRIu64
		       " recursions=%" PRIu64 " recorded=%" PRIu64 " mem_errors=%" PRIu64 "\n",
		       p->id, p->site, p->flags, p->event, p->hits, p->recursions, p->recorded,
		       p->mem_errors);
	}
	for (uint32_t i = 0; i < s->npatches; i++) {
		const struct dp_app_patch *p = &s->patches[i];

		printf("patch site=0x%" PRIx64 " method=%s len=%u orig=", p->site,
		       p->method == DP_APP_METHOD_JUMP ? "jump" : "int3", p->len);
		for (unsigned b = 0; b < p->len; b++)
			printf("%02x", p->orig[b]);
		printf(" tramp=0x%" PRIx64 " tramp_len=%u resume=0x%" PRIx64 " probes=", p->tramp,
		       p->tramp_len, p->resume);
		for (uint32_t k = 0; k < p->nprobes; k++)
			printf("%s%u", k ? "," : "", p->probes[k]);
		printf("\n");
	}
	printf("end\n");
}

/* Prints a failed exchange: "error op=OP ret=-N why=...". */
static void print_error(const char *op, int ret, enum dp_proto_err why)
{
	printf("error op=%s ret=%d why=%s\n", op, ret,
	       ret == -EPROTO ? dp_proto_err_str(why) : strerror(-ret));
}

static void print_result(const char *op, const struct dp_app_result *r)
{
	printf("%s status=%d value=0x%" PRIx64 " error=%s\n", op, r->status, r->value, r->error);
}

static int setup(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	/* A daemon that died leaves its socket file behind. */
	unlink(path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	if (bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(listen_fd, 16) < 0)
		return -errno;
	return 0;
}

enum accept_mode { WELCOME, REFUSE, OTHER_MAJOR };

static void cmd_accept(int ms, enum accept_mode mode, int major)
{
	struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };
	struct dp_app_msg m, rep = { 0 };
	enum dp_proto_err why;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd, ret;

	if (poll(&pfd, 1, ms) <= 0) {
		printf("error op=accept ret=%d why=no agent came\n", -ETIMEDOUT);
		return;
	}
	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		print_error("accept", -errno, DP_PROTO_ERR_NONE);
		return;
	}
	ret = dp_app_recv(fd, &m, DP_APP_TIMEOUT_MS, &why);
	if (ret || m.type != DP_APP_HELLO) {
		print_error("hello", ret ? ret : -EPROTO, why);
		dp_app_msg_release(&m);
		close(fd);
		return;
	}
	/* As the daemon will: the pid the kernel vouches for must be the one
	 * the agent gives. */
	getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
	printf("hello pid=%u peer_pid=%d major=%u minor=%u probe_hit=0x%" PRIx64 " version=%s\n",
	       m.hello.pid, (int)cred.pid, m.major, m.minor, m.hello.probe_hit,
	       m.hello.agent_version);
	print_state(&m.hello.state);

	rep.seq = m.seq;
	if (mode == REFUSE) {
		rep.type = DP_APP_REFUSE;
		rep.refuse.major = DP_APP_MAJOR;
		rep.refuse.minor = DP_APP_MINOR;
		snprintf(rep.refuse.reason, sizeof(rep.refuse.reason), "test refusal");
		dp_app_send(fd, &rep, DP_APP_TIMEOUT_MS);
		close(fd);
	} else if (mode == OTHER_MAJOR) {
		struct dp_wbuf w;

		rep.type = DP_APP_HELLO_REPLY;
		rep.hello_reply = (struct dp_app_hello_reply){ (uint8_t)major, 0, (uint32_t)getpid() };
		if (!dp_app_encode(&rep, &w)) {
			w.data[4] = (uint8_t)major;	/* the header's major */
			dp_frame_write_all(fd, w.data, w.len, DP_APP_TIMEOUT_MS);
		}
		dp_wbuf_release(&w);
		/* The agent answers a stranger with REFUSE, and says why. */
		dp_app_msg_release(&m);
		ret = dp_app_recv(fd, &m, DP_APP_TIMEOUT_MS, &why);
		if (!ret && m.type == DP_APP_REFUSE)
			printf("refused major=%u minor=%u reason=%s\n", m.refuse.major,
			       m.refuse.minor, m.refuse.reason);
		else
			print_error("refuse", ret ? ret : -EPROTO, why);
		close(fd);
	} else if (nconns < MAX_CONNS) {
		rep.type = DP_APP_HELLO_REPLY;
		rep.hello_reply = (struct dp_app_hello_reply){ DP_APP_MAJOR, DP_APP_MINOR,
							       (uint32_t)getpid() };
		dp_app_send(fd, &rep, DP_APP_TIMEOUT_MS);
		conns[nconns] = (struct conn){ .fd = fd, .pid = (pid_t)m.hello.pid,
					       .probe_hit = m.hello.probe_hit, .seq = 1 };
		cur = nconns++;
	} else {
		close(fd);
	}
	dp_app_msg_release(&m);
}

/* One request on the current connection; prints errors itself. */
static int call(struct dp_app_msg *req, struct dp_app_msg *rep, const char *op)
{
	enum dp_proto_err why = DP_PROTO_ERR_NONE;
	int ret;

	if (cur >= nconns) {
		printf("error op=%s ret=%d why=no connection\n", op, -ENOTCONN);
		return -ENOTCONN;
	}
	ret = dp_app_call(conns[cur].fd, req, &conns[cur].seq, rep, DP_APP_TIMEOUT_MS, &why);
	if (ret)
		print_error(op, ret, why);
	return ret;
}

static int parse_ctx(const char *tok, struct dp_ctx *c)
{
	unsigned num, width;
	char name[DP_FIELD_NAME_MAX];

	memset(c, 0, sizeof(*c));
	if (!strcmp(tok, "regs")) {
		c->kind = DP_CTX_REGS;
		strcpy(c->name, "regs");
	} else if (!strcmp(tok, "retval")) {
		c->kind = DP_CTX_RETVAL;
		strcpy(c->name, "ret");
	} else if (sscanf(tok, "reg:%u:%u:%63s", &num, &width, name) == 3) {
		c->kind = DP_CTX_REG;
		c->reg = (uint8_t)num;
		c->width = (uint8_t)width;
		strcpy(c->name, name);
	} else {
		return -EINVAL;
	}
	return 0;
}

static void cmd_define(char *args)
{
	struct dp_app_msg req = { .type = DP_APP_DEFINE_PROBE }, rep;
	struct dp_app_define_probe *d = &req.define_probe;
	struct dp_ctx ctx[DP_APP_MAX_CTX];
	char *tok, *save = NULL;
	int field = 0;

	d->ctx = ctx;
	for (tok = strtok_r(args, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		switch (field++) {
		case 0: d->id = (uint32_t)strtoul(tok, NULL, 0); break;
		case 1: d->site = strtoull(tok, NULL, 0); break;
		case 2: d->flags = (uint32_t)strtoul(tok, NULL, 0); break;
		case 3: snprintf(d->event, sizeof(d->event), "%s", tok); break;
		default:
			if (d->nctx < DP_APP_MAX_CTX && !parse_ctx(tok, &ctx[d->nctx]))
				d->nctx++;
		}
	}
	if (!call(&req, &rep, "define"))
		print_result("define", &rep.result);
	dp_app_msg_release(&rep);
}

static int parse_hex(const char *hex, uint8_t *out, size_t max)
{
	size_t n = strlen(hex) / 2;

	if (n > max)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return (int)n;
}

/* NOTE_INSTALLED: 0 and *res, or the call's error (printed). */
static int note_installed(const struct dp_app_patch *p, struct dp_app_result *res)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_INSTALLED }, rep;
	int ret;

	req.note_installed = *p;
	ret = call(&req, &rep, "installed");
	if (!ret)
		*res = rep.result;
	dp_app_msg_release(&rep);
	return ret;
}

static void send_installed(const struct dp_app_patch *p)
{
	struct dp_app_result res;

	if (!note_installed(p, &res))
		print_result("installed", &res);
}

static void cmd_installed(const char *args)
{
	struct dp_app_patch p = { 0 };
	char method[8], orig[2 * DP_APP_MAX_ORIG + 1], ids[256], *tok, *save = NULL;
	uint64_t site, tramp, resume;
	unsigned tramp_len;
	int n;

	if (sscanf(args, "%" SCNi64 " %7s %64s %" SCNi64 " %u %" SCNi64 " %255s", &site, method,
		   orig, &tramp, &tramp_len, &resume, ids) != 7) {
		printf("error op=installed ret=%d why=usage\n", -EINVAL);
		return;
	}
	p.site = site;
	p.method = !strcmp(method, "jump") ? DP_APP_METHOD_JUMP : DP_APP_METHOD_INT3;
	n = parse_hex(orig, p.orig, sizeof(p.orig));
	p.len = (uint8_t)(n > 0 ? n : 0);
	p.tramp = tramp;
	p.tramp_len = tramp_len;
	p.resume = resume;
	for (tok = strtok_r(ids, ",", &save); tok && p.nprobes < DP_APP_MAX_PATCH_PROBES;
	     tok = strtok_r(NULL, ",", &save))
		p.probes[p.nprobes++] = (uint32_t)strtoul(tok, NULL, 0);
	send_installed(&p);
}

static void cmd_removed(uint64_t site)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_REMOVED }, rep;

	req.note_removed = site;
	if (!call(&req, &rep, "removed"))
		print_result("removed", &rep.result);
	dp_app_msg_release(&rep);
}

static void cmd_define_many(const char *args)
{
	struct dp_app_msg req = { .type = DP_APP_DEFINE_PROBES }, rep;
	struct dp_app_define_probes *d = &req.define_probes;
	struct dp_app_probe_class cls[2] = {
		{ DP_APP_PROBE_AT_ENTRY, "dynprobe:batch_entry", 0, NULL },
		{ 0, "dynprobe:batch_return", 1, NULL },
	};
	struct dp_ctx ret;
	uint64_t first, n, site, step;

	if (sscanf(args, "%" SCNi64 " %" SCNi64 " %" SCNi64 " %" SCNi64, &first, &n, &site,
		   &step) != 4 || !n || n > DP_APP_MAX_BATCH) {
		printf("error op=define-many ret=%d why=usage\n", -EINVAL);
		return;
	}
	parse_ctx("retval", &ret);
	cls[1].ctx = &ret;
	d->nclasses = 2;
	d->classes = cls;
	d->nprobes = (uint32_t)n;
	d->probes = calloc(n, sizeof(*d->probes));
	for (uint32_t k = 0; d->probes && k < n; k++)
		d->probes[k] = (struct dp_app_probe_def){ (uint32_t)(first + k), site + k * step,
							  k % 2 };
	if (d->probes && !call(&req, &rep, "define-many"))
		printf("define-many status=%d defined=%u error=%s\n", rep.define_probes_reply.status,
		       rep.define_probes_reply.nhandles, rep.define_probes_reply.error);
	free(d->probes);
	dp_app_msg_release(&rep);
}

static void cmd_installed_many(const char *args)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_INSTALLED_MANY }, rep;
	uint64_t first, n, site, step, bad = UINT64_MAX;
	struct dp_app_patch *v;

	if (sscanf(args, "%" SCNi64 " %" SCNi64 " %" SCNi64 " %" SCNi64 " %" SCNi64, &first, &n,
		   &site, &step, &bad) < 4 || !n || n > DP_APP_MAX_BATCH) {
		printf("error op=installed-many ret=%d why=usage\n", -EINVAL);
		return;
	}
	v = calloc(n, sizeof(*v));
	for (uint32_t k = 0; v && k < n; k++) {
		v[k].site = site + k * step;
		v[k].method = DP_APP_METHOD_JUMP;
		v[k].len = 5;
		memset(v[k].orig, 0x90, 5);
		v[k].tramp = 0x10000;
		v[k].tramp_len = 16;
		v[k].nprobes = 1;
		v[k].probes[0] = k == bad ? 0x7fffffff : (uint32_t)(first + k);
	}
	req.note_many.npatches = (uint32_t)n;
	req.note_many.patches = v;
	if (v && !call(&req, &rep, "installed-many"))
		print_result("installed-many", &rep.result);
	free(v);
	dp_app_msg_release(&rep);
}

static void cmd_removed_many(const char *args)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_REMOVED_MANY }, rep;
	uint64_t n, site, step, extra = 0, *v;
	uint32_t k;

	if (sscanf(args, "%" SCNi64 " %" SCNi64 " %" SCNi64 " %" SCNi64, &n, &site, &step,
		   &extra) < 3 || !n || n >= DP_APP_MAX_BATCH) {
		printf("error op=removed-many ret=%d why=usage\n", -EINVAL);
		return;
	}
	v = calloc(n + 1, sizeof(*v));
	for (k = 0; v && k < n; k++)
		v[k] = site + k * step;
	if (v && extra)
		v[k++] = extra;
	req.removed_many.nsites = k;
	req.removed_many.sites = v;
	if (v && !call(&req, &rep, "removed-many"))
		print_result("removed-many", &rep.result);
	free(v);
	dp_app_msg_release(&rep);
}

static int alloc_code(uint64_t near, uint32_t size, uint64_t *addr, bool print)
{
	struct dp_app_msg req = { .type = DP_APP_ALLOC_CODE }, rep;
	int ret;

	req.alloc_code = (struct dp_app_alloc_code){ near, size };
	ret = call(&req, &rep, "alloc");
	if (!ret) {
		if (print)
			print_result("alloc", &rep.result);
		ret = rep.result.status;
		*addr = rep.result.value;
	}
	dp_app_msg_release(&rep);
	return ret;
}

/* Reads or writes the current agent's memory, as the daemon does. */
static int mem_rw(uint64_t addr, void *buf, size_t len, bool write_it)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)conns[cur].pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write_it ? pwrite(fd, buf, len, (off_t)addr) : pread(fd, buf, len, (off_t)addr);
	close(fd);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static void cmd_patch_jump(uint32_t id, uint64_t site, uint64_t probe)
{
	enum dp_vec_save vec = dp_vec_save_detect();
	size_t cap = dp_tramp_max_len(1, vec);
	struct dp_tramp_hook hook = { .addr = site, .arg = (void *)(uintptr_t)probe };
	struct dp_window w = { .addr = site };
	struct dp_app_patch p = { .site = site, .method = DP_APP_METHOD_JUMP };
	enum dp_reason why = DP_REASON_NONE;
	uint8_t bytes[DP_WINDOW_MAX_LEN], jump[DP_WINDOW_MAX_LEN], *code;
	struct dp_tramp tramp;
	struct dp_emit e;
	uint64_t at = 0;
	int ret;

	if (cur >= nconns || mem_rw(site, bytes, sizeof(bytes), false)) {
		printf("error op=patch-jump ret=%d why=cannot read the site\n", -EIO);
		return;
	}
	/* Whole instructions covering the 5 bytes of a jmp rel32. */
	while (w.len < 5 && w.ninsns < DP_WINDOW_MAX_INSNS) {
		ret = dp_insn_decode(bytes + w.len, sizeof(bytes) - w.len, &w.insns[w.ninsns]);
		if (ret) {
			printf("error op=patch-jump ret=%d why=undecodable\n", ret);
			return;
		}
		w.off[w.ninsns] = w.len;
		w.len += w.insns[w.ninsns++].len;
	}
	memcpy(w.bytes, bytes, w.len);

	ret = alloc_code(site, (uint32_t)cap, &at, false);
	if (ret) {
		printf("error op=patch-jump ret=%d why=alloc\n", ret);
		return;
	}
	code = calloc(1, cap);
	dp_emit_init(&e, code, cap, at);
	ret = dp_tramp_build(&e, &w, &hook, 1, (dp_handler_fn)(uintptr_t)conns[cur].probe_hit,
			     vec, &tramp, &why);
	/* The trampoline first, then the jump that leads to it. */
	if (!ret)
		ret = mem_rw(at, code, tramp.len, true);
	if (!ret) {
		int32_t rel = (int32_t)(tramp.entry - (site + 5));

		memset(jump, 0xcc, w.len);
		jump[0] = 0xe9;
		memcpy(jump + 1, &rel, 4);
		ret = mem_rw(site, jump, w.len, true);
	}
	free(code);
	if (ret) {
		printf("error op=patch-jump ret=%d why=%s\n", ret,
		       why ? dp_reason_str(why) : "write");
		return;
	}
	p.len = w.len;
	memcpy(p.orig, w.bytes, w.len);
	p.tramp = at;
	p.tramp_len = (uint32_t)tramp.len;
	p.nprobes = 1;
	p.probes[0] = id;
	send_installed(&p);
}

static void cmd_patch_int3(uint32_t id, uint64_t site, uint64_t probe)
{
	enum dp_vec_save vec = dp_vec_save_detect();
	size_t cap = dp_tramp_max_len(0, vec);
	struct dp_window w = { .addr = site, .ninsns = 1 };
	struct dp_app_patch p = { .site = site, .method = DP_APP_METHOD_INT3 };
	enum dp_reason why = DP_REASON_NONE;
	struct dp_app_result res;
	uint8_t bytes[DP_WINDOW_MAX_LEN], int3 = 0xcc, *code;
	struct dp_tramp tramp;
	struct dp_emit e;
	uint64_t at = 0;
	int ret;

	(void)probe;	/* int3 sites reach their probes through the agent's table */
	if (cur >= nconns || mem_rw(site, bytes, sizeof(bytes), false) ||
	    dp_insn_decode(bytes, sizeof(bytes), &w.insns[0])) {
		printf("error op=patch-int3 ret=%d why=cannot read the site\n", -EIO);
		return;
	}
	w.len = w.insns[0].len;
	memcpy(w.bytes, bytes, w.len);
	ret = alloc_code(site, (uint32_t)cap, &at, false);
	if (ret) {
		printf("error op=patch-int3 ret=%d why=alloc\n", ret);
		return;
	}
	/* No hooks: only the relocated instruction and the jump back, where a
	 * trapped thread resumes. */
	code = calloc(1, cap);
	dp_emit_init(&e, code, cap, at);
	ret = dp_tramp_build(&e, &w, NULL, 0, (dp_handler_fn)(uintptr_t)conns[cur].probe_hit,
			     vec, &tramp, &why);
	if (!ret)
		ret = mem_rw(at, code, tramp.len, true);
	free(code);
	if (ret) {
		printf("error op=patch-int3 ret=%d why=%s\n", ret,
		       why ? dp_reason_str(why) : "write");
		return;
	}
	p.len = w.len;
	memcpy(p.orig, w.bytes, w.len);
	p.tramp = at;
	p.tramp_len = (uint32_t)tramp.len;
	p.resume = tramp.insn_at[0];
	p.nprobes = 1;
	p.probes[0] = id;
	/* The agent knows the trap site before the int3 can run. */
	if (note_installed(&p, &res))
		return;
	if (!res.status && mem_rw(site, &int3, 1, true))
		res.status = -EIO;
	print_result("installed", &res);
}

static void cmd_unpatch(uint64_t site)
{
	struct dp_app_msg req = { .type = DP_APP_LIST }, rep;
	const struct dp_app_patch *p = NULL;
	int ret;

	if (call(&req, &rep, "unpatch"))
		return;
	for (uint32_t i = 0; i < rep.list_reply.npatches && !p; i++)
		if (rep.list_reply.patches[i].site == site)
			p = &rep.list_reply.patches[i];
	if (!p) {
		printf("error op=unpatch ret=%d why=not installed there\n", -ENOENT);
	} else {
		ret = mem_rw(site, (void *)p->orig, p->len, true);
		if (ret)
			printf("error op=unpatch ret=%d why=write\n", ret);
		else
			cmd_removed(site);
	}
	dp_app_msg_release(&rep);
}

static void cmd_list(void)
{
	struct dp_app_msg req = { .type = DP_APP_LIST }, rep;

	if (!call(&req, &rep, "list"))
		print_state(&rep.list_reply);
	dp_app_msg_release(&rep);
}

static void cmd_ping(uint64_t cookie)
{
	struct dp_app_msg req = { .type = DP_APP_PING }, rep;

	req.ping = cookie;
	if (!call(&req, &rep, "ping"))
		printf("ping cookie=%" PRIu64 "\n", rep.ping);
	dp_app_msg_release(&rep);
}

/* A request of a type this version does not have, with a payload to skip. */
static void cmd_unknown(uint16_t type)
{
	struct dp_frame_hdr h = { DP_APP_MAGIC, DP_APP_MAJOR, DP_APP_MINOR, type, 3, 0 };
	uint8_t frame[DP_FRAME_HDR_LEN + 3] = { 0 };
	struct dp_app_msg rep;
	enum dp_proto_err why;
	int ret;

	if (cur >= nconns)
		return;
	h.seq = conns[cur].seq++;
	dp_frame_hdr_encode(&h, frame);
	ret = dp_frame_write_all(conns[cur].fd, frame, sizeof(frame), DP_APP_TIMEOUT_MS);
	if (!ret)
		ret = dp_app_recv(conns[cur].fd, &rep, DP_APP_TIMEOUT_MS, &why);
	if (ret) {
		print_error("unknown", ret, why);
		return;
	}
	printf("reply type=0x%04x seq_ok=%d unsupported=0x%04x\n", rep.type, rep.seq == h.seq,
	       rep.unsupported);
	dp_app_msg_release(&rep);
}

/* A DEFINE_PROBE whose context count is above the bound. */
static void cmd_malformed(void)
{
	struct dp_app_msg req = { .type = DP_APP_DEFINE_PROBE }, rep;
	struct dp_ctx ctx;
	enum dp_proto_err why;
	struct dp_wbuf w;
	size_t at;
	int ret;

	if (cur >= nconns)
		return;
	parse_ctx("regs", &ctx);
	req.seq = conns[cur].seq++;
	req.define_probe = (struct dp_app_define_probe){ .id = 77, .site = 0x1000, .nctx = 1,
							 .ctx = &ctx };
	strcpy(req.define_probe.event, "dynprobe:malformed");
	ret = dp_app_encode(&req, &w);
	/* id, site, flags, event (2 + 18 bytes), then the count. */
	at = DP_FRAME_HDR_LEN + 4 + 8 + 4 + 2 + strlen(req.define_probe.event);
	if (!ret) {
		w.data[at] = DP_APP_MAX_CTX + 1;
		ret = dp_frame_write_all(conns[cur].fd, w.data, w.len, DP_APP_TIMEOUT_MS);
	}
	dp_wbuf_release(&w);
	if (!ret)
		ret = dp_app_recv(conns[cur].fd, &rep, DP_APP_TIMEOUT_MS, &why);
	if (ret) {
		print_error("malformed", ret, why);
		return;
	}
	if (rep.type == DP_APP_DEFINE_PROBE_REPLY)
		print_result("malformed", &rep.result);
	else
		printf("error op=malformed ret=0 why=reply of type 0x%04x\n", rep.type);
	dp_app_msg_release(&rep);
}

static void cmd_wait_close(int ms)
{
	struct pollfd pfd;
	char c;

	if (cur >= nconns)
		return;
	pfd = (struct pollfd){ .fd = conns[cur].fd, .events = POLLIN };
	if (poll(&pfd, 1, ms) > 0 && recv(conns[cur].fd, &c, 1, MSG_DONTWAIT) == 0)
		printf("closed\n");
	else
		printf("error op=wait-close ret=%d why=still open\n", -ETIMEDOUT);
}

int main(int argc, char **argv)
{
	char line[1024];
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: fake-daemon SOCKET < commands\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = setup(argv[1]);
	if (ret) {
		printf("error op=listen ret=%d why=%s\n", ret, strerror(-ret));
		return 1;
	}
	printf("listening\n");
	while (fgets(line, sizeof(line), stdin)) {
		char cmd[32] = "";
		uint64_t a = 0, b = 0, c = 0;
		int off = 0;

		if (sscanf(line, "%31s %n", cmd, &off) < 1)
			continue;
		sscanf(line + off, "%" SCNi64 " %" SCNi64 " %" SCNi64, &a, &b, &c);
		if (!strcmp(cmd, "accept"))
			cmd_accept((int)a, WELCOME, 0);
		else if (!strcmp(cmd, "accept-refuse"))
			cmd_accept((int)a, REFUSE, 0);
		else if (!strcmp(cmd, "accept-major"))
			cmd_accept((int)a, OTHER_MAJOR, (int)b);
		else if (!strcmp(cmd, "use"))
			cur = (unsigned)a;
		else if (!strcmp(cmd, "alloc")) {
			uint64_t addr;

			alloc_code(a, (uint32_t)b, &addr, true);
		} else if (!strcmp(cmd, "define"))
			cmd_define(line + off);
		else if (!strcmp(cmd, "installed"))
			cmd_installed(line + off);
		else if (!strcmp(cmd, "removed"))
			cmd_removed(a);
		else if (!strcmp(cmd, "define-many"))
			cmd_define_many(line + off);
		else if (!strcmp(cmd, "installed-many"))
			cmd_installed_many(line + off);
		else if (!strcmp(cmd, "removed-many"))
			cmd_removed_many(line + off);
		else if (!strcmp(cmd, "list"))
			cmd_list();
		else if (!strcmp(cmd, "ping"))
			cmd_ping(a);
		else if (!strcmp(cmd, "unknown"))
			cmd_unknown((uint16_t)a);
		else if (!strcmp(cmd, "malformed"))
			cmd_malformed();
		else if (!strcmp(cmd, "patch-jump"))
			cmd_patch_jump((uint32_t)a, b, c);
		else if (!strcmp(cmd, "patch-int3"))
			cmd_patch_int3((uint32_t)a, b, c);
		else if (!strcmp(cmd, "unpatch"))
			cmd_unpatch(a);
		else if (!strcmp(cmd, "wait-close"))
			cmd_wait_close((int)a);
		else if (!strcmp(cmd, "quit"))
			break;
		else
			printf("error op=%s ret=%d why=unknown command\n", cmd, -EINVAL);
	}
	for (unsigned i = 0; i < nconns; i++)
		close(conns[i].fd);
	close(listen_fd);
	return 0;
}
