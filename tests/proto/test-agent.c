/*
 * The agent's control thread in real processes: a target program with the
 * built agent preloaded, and fake daemons (fake-daemon.c) on a socket in a
 * private directory.
 *
 *  - the agent connects and says HELLO with the target's pid; its thread is
 *    named, blocks asynchronous signals, and its socket is close-on-exec;
 *  - ALLOC_CODE gives read+execute memory, never writable, within 2 GiB;
 *  - DEFINE_PROBE, NOTE_INSTALLED (jump and int3), NOTE_REMOVED, LIST,
 *    PING, an unknown request, a malformed one;
 *  - a real jump patch to a trampoline calling dp_probe_hit, and a real
 *    int3 patch: the probes count the target's calls;
 *  - the daemon killed and another started: the agent reconnects and
 *    reports what is installed;
 *  - fork: the child connects as its own pid, the parent stays connected;
 *  - a daemon of another major version, and a refusal: a clear message on
 *    both sides;
 *  - the batches of minor 3: thousands of probes defined and patches noted
 *    and forgotten in one message each, a batch stopping at its first bad
 *    element (the reply says how far it went), the state the agent
 *    reports after each;
 *  - no daemon at all: the target runs as without the agent, silently.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "proto/app.h"
#include "tap.h"

#define AGENT TOP_BUILDDIR "/src/lib/lttng-ust-dynprobe/.libs/liblttng-ust-dynprobe.so"
#define FAKE_DAEMON PROTO_BUILDDIR "/fake-daemon"
#define TARGET PROTO_BUILDDIR "/target"
#define WAIT_MS 15000

static char tmpdir[64], sock_path[128];

/* ---- child processes, driven line by line ------------------------------ */

struct proc {
	pid_t pid;
	int in, out;		/* its stdin (we write), its stdout (we read) */
	char buf[1 << 16];
	size_t len;
};

/* Starts argv[0] with extra environment ("NAME=VALUE", NULL-terminated) and
 * stderr into err_path (or ours).  0 or -errno. */
static int proc_start(struct proc *p, char *const argv[], char *const env[],
		      const char *err_path)
{
	int to[2], from[2];

	memset(p, 0, sizeof(*p));
	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		return -errno;
	p->pid = tap_fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		if (err_path) {
			int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (fd >= 0)
				dup2(fd, 2);
		}
		for (size_t i = 0; env && env[i]; i++)
			putenv(env[i]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	p->in = to[1];
	p->out = from[0];
	return 0;
}

__attribute__((format(printf, 2, 3)))
static void proc_send(struct proc *p, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(p->in, line, (size_t)n) != n)
		tap_diag("cannot write to process %d", (int)p->pid);
}

/* The next line of its output, within ms (leaving out the time this
 * process could not run: deadline.h): 0, or -ETIMEDOUT / -EPIPE. */
static int proc_line(struct proc *p, char *out, size_t size, int ms)
{
	struct dp_deadline d;

	dp_deadline_start(&d, ms, NULL);
	for (;;) {
		char *nl = memchr(p->buf, '\n', p->len);
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - p->buf);

			snprintf(out, size, "%.*s", (int)l, p->buf);
			memmove(p->buf, nl + 1, p->len - l - 1);
			p->len -= l + 1;
			return 0;
		}
		if (dp_deadline_poll(&pfd, 1, &d) <= 0)
			return -ETIMEDOUT;
		n = read(p->out, p->buf + p->len, sizeof(p->buf) - p->len - 1);
		if (n <= 0)
			return -EPIPE;
		p->len += (size_t)n;
	}
}

/*
 * A time bound on several steps of the test, each of which may block
 * longer than a slice: a thread checks the deadline every 50 ms, so that a
 * stop of this machine while they wait is left out (deadline.h) rather
 * than failing the bound.
 */
struct watch {
	struct dp_deadline d;
	pthread_mutex_t lock;
	bool done;
	pthread_t thread;
};

static void *watch_main(void *arg)
{
	struct watch *w = arg;

	for (;;) {
		pthread_mutex_lock(&w->lock);
		if (w->done) {
			pthread_mutex_unlock(&w->lock);
			return NULL;
		}
		dp_deadline_left(&w->d);
		pthread_mutex_unlock(&w->lock);
		usleep(50000);
	}
}

static int watch_start(struct watch *w, int ms)
{
	dp_deadline_start(&w->d, ms, NULL);
	pthread_mutex_init(&w->lock, NULL);
	w->done = false;
	return -pthread_create(&w->thread, NULL, watch_main, w);
}

/* Ends the watch: the running time it saw, in ms (the bound once passed). */
static int64_t watch_end(struct watch *w)
{
	int64_t left;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	left = dp_deadline_left(&w->d);
	pthread_mutex_destroy(&w->lock);
	return w->d.timeout_ms - left;
}

/* Sends a command and returns its one-line answer ("" on timeout). */
__attribute__((format(printf, 4, 5)))
static const char *ask(struct proc *p, char *out, size_t size, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	proc_send(p, "%s", line);
	if (proc_line(p, out, size, WAIT_MS))
		out[0] = '\0';
	return out;
}

static int proc_wait(struct proc *p, int ms)
{
	struct dp_deadline d;
	int status;

	close(p->in);
	dp_deadline_start(&d, ms, NULL);
	while (!dp_deadline_passed(&d)) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);

		if (r == p->pid) {
			close(p->out);
			p->pid = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static void proc_kill(struct proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		close(p->in);
		close(p->out);
		p->pid = 0;
	}
}

/* ---- answers ------------------------------------------------------------ */

static uint64_t field(const char *line, const char *key)
{
	char k[64];
	const char *at;

	snprintf(k, sizeof(k), " %s=", key);
	at = strstr(line, k);
	if (!at && !strncmp(line, k + 1, strlen(k + 1)))
		at = line - 1;
	return at ? strtoull(at + strlen(k), NULL, 0) : UINT64_MAX;
}

static int64_t sfield(const char *line, const char *key)
{
	return (int64_t)field(line, key);
}

/* The rest of the line after key= (the last field, it may hold spaces). */
static const char *tail(const char *line, const char *key)
{
	char k[64];
	const char *at;

	snprintf(k, sizeof(k), " %s=", key);
	at = strstr(line, k);
	return at ? at + strlen(k) : "";
}

/* A state as the fake daemon prints it: its lines, up to "end". */
struct state {
	char head[512];
	char probes[8][1024];
	char patches[8][1024];
	unsigned nprobes, npatches;
};

static int read_state(struct proc *d, struct state *s)
{
	char line[1024];

	memset(s, 0, sizeof(*s));
	if (proc_line(d, s->head, sizeof(s->head), WAIT_MS) || strncmp(s->head, "state ", 6))
		return -1;
	while (!proc_line(d, line, sizeof(line), WAIT_MS)) {
		if (!strcmp(line, "end"))
			return 0;
		if (!strncmp(line, "probe ", 6) && s->nprobes < 8)
			snprintf(s->probes[s->nprobes++], sizeof(s->probes[0]), "%s", line);
		else if (!strncmp(line, "patch ", 6) && s->npatches < 8)
			snprintf(s->patches[s->npatches++], sizeof(s->patches[0]), "%s", line);
	}
	return -1;
}

/* The patch line of a state for a site, or "". */
static const char *state_patch(const struct state *s, uint64_t site)
{
	for (unsigned i = 0; i < s->npatches; i++)
		if (field(s->patches[i], "site") == site)
			return s->patches[i];
	return "";
}

static const char *state_probe(const struct state *s, unsigned id)
{
	for (unsigned i = 0; i < s->nprobes; i++)
		if (field(s->probes[i], "id") == id)
			return s->probes[i];
	return "";
}

/* ---- the target's insides, from /proc --------------------------------- */

/* The tid of the thread named `name`, or 0. */
static pid_t find_thread(pid_t pid, const char *name)
{
	char path[320], comm[32];
	struct dirent *de;
	pid_t found = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && (de = readdir(dir)) && !found) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, de->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
		    comm[strlen(name)] == '\n')
			found = (pid_t)atoi(de->d_name);
		if (f)
			fclose(f);
	}
	if (dir)
		closedir(dir);
	return found;
}

static uint64_t sigblk(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	uint64_t mask = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigBlk:", 7))
			mask = strtoull(line + 7, NULL, 16);
	if (f)
		fclose(f);
	return mask;
}

/* How many socket descriptors the process has, and how many lack CLOEXEC. */
static void sockets(pid_t pid, unsigned *n, unsigned *inheritable)
{
	char path[320], link[64], line[128];
	struct dirent *de;
	DIR *dir;

	*n = *inheritable = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	while (dir && (de = readdir(dir))) {
		ssize_t l;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)pid, de->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		if (strncmp(link, "socket:", 7))
			continue;
		(*n)++;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, de->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "flags:", 6) && !(strtoul(line + 6, NULL, 8) & O_CLOEXEC))
				(*inheritable)++;
		if (f)
			fclose(f);
	}
	if (dir)
		closedir(dir);
}

/* The permissions of the mapping holding addr ("r-xp"), or "". */
static const char *map_perms(pid_t pid, uint64_t addr, char out[5])
{
	char path[64], line[512];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		uint64_t lo, hi;
		char perms[5];

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s", &lo, &hi, perms) == 3 &&
		    addr >= lo && addr < hi) {
			memcpy(out, perms, 5);
			break;
		}
	}
	if (f)
		fclose(f);
	return out;
}

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static int file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (int)st.st_size;
}

static bool file_has(const char *path, const char *needle)
{
	char buf[1 << 15];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/* Whether the file comes to hold needle within ms (another process writes it). */
static bool file_gets(const char *path, const char *needle, int ms)
{
	struct dp_deadline d;

	dp_deadline_start(&d, ms, NULL);
	while (!file_has(path, needle)) {
		if (dp_deadline_passed(&d))
			return false;
		usleep(10000);
	}
	return true;
}

static void cleanup(void)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/target.err", tmpdir);
	unlink(path);
	unlink(sock_path);
	rmdir(tmpdir);
}

/* ---- the tests ---------------------------------------------------------- */

static char env_preload[256], env_socket[256], env_home[128], env_lttng_home[128];

static int start_target(struct proc *t, const char *socket_env, bool debug, const char *err,
			uint64_t *func, uint64_t *func2)
{
	char *argv[] = { TARGET, NULL };
	char *env[] = { env_preload, (char *)socket_env, env_home, env_lttng_home,
			"LTTNG_UST_REGISTER_TIMEOUT=0",
			debug ? "LTTNG_DYNPROBE_DEBUG=1" : "LTTNG_DYNPROBE_DEBUG=", NULL };
	char line[256];

	if (proc_start(t, argv, env, err) || proc_line(t, line, sizeof(line), WAIT_MS))
		return -1;
	*func = field(line, "func");
	*func2 = field(line, "func2");
	return (pid_t)field(line, "pid") == t->pid ? 0 : -1;
}

static int start_daemon(struct proc *d)
{
	char *argv[] = { FAKE_DAEMON, sock_path, NULL };
	char line[256];

	if (proc_start(d, argv, NULL, NULL) || proc_line(d, line, sizeof(line), WAIT_MS))
		return -1;
	return strcmp(line, "listening") ? -1 : 0;
}

/* accept, and the HELLO line with its state. */
static bool accept_agent(struct proc *d, char *hello, size_t size, struct state *s)
{
	ask(d, hello, size, "accept %d", WAIT_MS);
	return !strncmp(hello, "hello ", 6) && !read_state(d, s);
}

int main(void)
{
	struct proc d1, d2, d3, t, t2, t3;
	struct state s;
	char line[1024], hello[512], perms[5], errlog[128];
	uint64_t func = 0, func2 = 0, probe1, probe2, code, resume = 0;
	pid_t tid, child;
	unsigned nsock, inheritable;
	int64_t t0;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	snprintf(tmpdir, sizeof(tmpdir), "%s/dp-proto.XXXXXX",
		 getenv("TMPDIR") && strlen(getenv("TMPDIR")) < 40 ? getenv("TMPDIR") : "/tmp");
	if (!tap_ok(mkdtemp(tmpdir) != NULL, "a private directory: %s", tmpdir))
		return tap_done();
	atexit(cleanup);
	if (!tap_ok(file_size(AGENT) > 0, "the agent is built: %s", AGENT))
		return tap_done();
	snprintf(sock_path, sizeof(sock_path), "%s/app.sock", tmpdir);
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", AGENT);
	snprintf(env_socket, sizeof(env_socket), "LTTNG_DYNPROBE_APP_SOCKET=%s", sock_path);
	snprintf(env_home, sizeof(env_home), "HOME=%s", tmpdir);
	snprintf(env_lttng_home, sizeof(env_lttng_home), "LTTNG_HOME=%s", tmpdir);
	snprintf(errlog, sizeof(errlog), "%s/target.err", tmpdir);

	/* --- first contact --- */
	if (!tap_ok(!start_daemon(&d1), "a fake daemon listens on %s", sock_path))
		return tap_done();
	rc = start_target(&t, env_socket, true, errlog, &func, &func2);
	if (!tap_ok(!rc, "the target starts with the agent preloaded (pid %d)", (int)t.pid)) {
		proc_kill(&d1);
		return tap_done();
	}
	rc = accept_agent(&d1, hello, sizeof(hello), &s);
	if (!tap_ok(rc && field(hello, "pid") == (uint64_t)t.pid &&
		    field(hello, "peer_pid") == (uint64_t)t.pid,
		    "the agent connects and says HELLO with the target's pid: %s", hello)) {
		/* Everything after needs a connected agent. */
		tap_diag("no HELLO: is control.c linked into the agent library?");
		proc_kill(&t);
		proc_kill(&d1);
		return tap_done();
	}
	tap_ok(field(hello, "major") == DP_APP_MAJOR && field(hello, "minor") == DP_APP_MINOR &&
	       field(hello, "probe_hit") != 0 && field(hello, "probe_hit") != UINT64_MAX &&
	       strstr(hello, "version=0."),
	       "HELLO carries the protocol version, dp_probe_hit's address and the agent's version");
	tap_ok(field(s.head, "probes") == 0 && field(s.head, "patches") == 0,
	       "a fresh process reports nothing installed: %s", s.head);

	tid = find_thread(t.pid, "lttng-dynprobe");
	tap_ok(tid > 0, "the control thread is named lttng-dynprobe (tid %d)", (int)tid);
	{
		uint64_t m = sigblk(t.pid, tid);
		uint64_t want = 1ull << (SIGINT - 1) | 1ull << (SIGTERM - 1) |
				1ull << (SIGUSR1 - 1) | 1ull << (SIGALRM - 1) |
				1ull << (SIGCHLD - 1) | 1ull << (SIGPIPE - 1) | 1ull << (SIGHUP - 1);
		uint64_t sync = 1ull << (SIGTRAP - 1) | 1ull << (SIGSEGV - 1) |
				1ull << (SIGBUS - 1) | 1ull << (SIGILL - 1) | 1ull << (SIGFPE - 1);

		tap_ok(tid > 0 && (m & want) == want && !(m & sync),
		       "it blocks the program's signals, not the synchronous ones (SigBlk %016" PRIx64
		       ")", m);
	}
	sockets(t.pid, &nsock, &inheritable);
	tap_ok(nsock >= 1 && inheritable == 0,
	       "every socket of the target is close-on-exec (%u sockets)", nsock);

	/* --- ALLOC_CODE --- */
	ask(&d1, line, sizeof(line), "alloc 0x%" PRIx64 " 4096", func);
	code = field(line, "value");
	tap_ok(sfield(line, "status") == 0 && code && distance(code, func) < (1ull << 31) &&
	       distance(code + 4096, func) < (1ull << 31),
	       "ALLOC_CODE gives 4096 bytes within 2 GiB of the code: %s", line);
	map_perms(t.pid, code, perms);
	tap_ok(!strcmp(perms, "r-xp"),
	       "the memory is read+execute, never writable (/proc/PID/maps: %s)", perms);
	ask(&d1, line, sizeof(line), "alloc 0x%" PRIx64 " 100", func);
	tap_ok(sfield(line, "status") == 0 && field(line, "value") != code &&
	       !strcmp(map_perms(t.pid, field(line, "value"), perms), "r-xp"),
	       "a second ALLOC_CODE gets other memory: %s", line);

	/* --- DEFINE_PROBE --- */
	ask(&d1, line, sizeof(line), "define 1 0x%" PRIx64 " 0 dynprobe:func2 regs", func2);
	probe1 = field(line, "value");
	tap_ok(sfield(line, "status") == 0 && probe1 && probe1 != UINT64_MAX,
	       "DEFINE_PROBE returns the probe's address: %s", line);
	ask(&d1, line, sizeof(line), "define 2 0x%" PRIx64 " 1 func_entry reg:7:8:rdi retval",
	    func);
	probe2 = field(line, "value");
	tap_ok(sfield(line, "status") == 0 && probe2 && probe2 != probe1,
	       "a second probe, with flags and contexts: %s", line);
	ask(&d1, line, sizeof(line), "define 1 0x%" PRIx64 " 0 dynprobe:again", func2);
	tap_ok(sfield(line, "status") == -EEXIST && *tail(line, "error"),
	       "an id already defined is refused with a message: %s", line);
	ask(&d1, line, sizeof(line), "define 3 0x%" PRIx64 " 0 dynprobe:twice regs regs", func2);
	tap_ok(sfield(line, "status") == -EINVAL && strstr(line, "twice"),
	       "the agent's own refusal comes back with its message: %s", line);

	/* --- NOTE_INSTALLED --- */
	ask(&d1, line, sizeof(line), "installed 0x%" PRIx64 " int3 8d4701 0 0 0x%" PRIx64 " 1",
	    func2, code);
	tap_ok(sfield(line, "status") == 0, "NOTE_INSTALLED of an int3 site: %s", line);
	ask(&d1, line, sizeof(line), "installed 0x%" PRIx64 " int3 8d4701 0 0 0x%" PRIx64 " 9",
	    func2 + 3, code);
	tap_ok(sfield(line, "status") == -ENOENT, "a patch naming an unknown probe is refused: %s",
	       line);

	/* --- a real patch: the trampoline calls dp_probe_hit with probe 2 --- */
	ask(&d1, line, sizeof(line), "patch-jump 2 0x%" PRIx64 " 0x%" PRIx64, func, probe2);
	tap_ok(sfield(line, "status") == 0, "a jump patch written and noted: %s", line);
	ask(&t, line, sizeof(line), "call 5");
	tap_ok(!strcmp(line, "called ret=15"), "the patched function still works: %s", line);
	ask(&t, line, sizeof(line), "call 7");
	tap_ok(!strcmp(line, "called ret=21"), "and again: %s", line);

	/* --- a real int3, replacing the record-only one at the same site --- */
	ask(&d1, line, sizeof(line), "patch-int3 1 0x%" PRIx64 " 0x%" PRIx64, func2, probe1);
	tap_ok(sfield(line, "status") == 0,
	       "an int3 patch: noted (the trap site registered), then written: %s", line);
	ask(&t, line, sizeof(line), "call2 4");
	tap_ok(!strcmp(line, "called ret=5"), "the trapping function still works: %s", line);
	ask(&t, line, sizeof(line), "call2 5");
	tap_ok(!strcmp(line, "called ret=6"), "and again: %s", line);

	proc_send(&d1, "list");
	rc = read_state(&d1, &s);
	tap_ok(!rc && s.nprobes == 2 && s.npatches == 2 &&
	       field(state_probe(&s, 2), "hits") == 2 && field(state_probe(&s, 1), "hits") == 2,
	       "LIST: 2 probes, 2 patches, each probe counted its 2 calls: %s | %s",
	       state_probe(&s, 1), state_probe(&s, 2));
	tap_ok(field(s.head, "traps_ours") == 2, "the two traps were the agent's: %s", s.head);
	resume = field(state_patch(&s, func2), "resume");
	tap_ok(strstr(state_patch(&s, func2), "method=int3 len=3 orig=8d4701") &&
	       resume && resume != code && field(state_patch(&s, func2), "tramp") != 0 &&
	       strstr(state_patch(&s, func), "method=jump len=6 orig=554889e589f8") &&
	       strstr(state_patch(&s, func), "probes=2"),
	       "LIST shows both patches as last noted: %s | %s", state_patch(&s, func2),
	       state_patch(&s, func));

	/* --- the protocol's other paths --- */
	ask(&d1, line, sizeof(line), "ping 4242");
	tap_ok(field(line, "cookie") == 4242, "PING: %s", line);
	ask(&d1, line, sizeof(line), "unknown 0x0042");
	tap_ok(field(line, "type") == 0xfffe && field(line, "unsupported") == 0x42 &&
	       field(line, "seq_ok") == 1,
	       "an unknown request gets UNSUPPORTED: %s", line);
	ask(&d1, line, sizeof(line), "malformed");
	tap_ok(sfield(line, "status") == -EBADMSG && strstr(line, "bound"),
	       "a malformed request gets an error reply: %s", line);
	ask(&d1, line, sizeof(line), "ping 7");
	tap_ok(field(line, "cookie") == 7, "and the connection goes on: %s", line);

	/* --- the daemon dies; another one comes --- */
	proc_kill(&d1);
	tap_ok(!start_daemon(&d2), "a new daemon listens on the same path");
	t0 = dp_now_ms();
	rc = accept_agent(&d2, hello, sizeof(hello), &s);
	tap_ok(rc && field(hello, "pid") == (uint64_t)t.pid,
	       "the agent reconnects to it (%" PRId64 " ms): %s", dp_now_ms() - t0, hello);
	tap_ok(s.nprobes == 2 && s.npatches == 2 && strstr(state_probe(&s, 1), "event=dynprobe:func2") &&
	       strstr(state_probe(&s, 2), "event=func_entry") &&
	       field(state_probe(&s, 2), "flags") == 1 && field(state_probe(&s, 2), "hits") == 2,
	       "and reports its probes, with their counters: %s", state_probe(&s, 2));
	tap_ok(strstr(state_patch(&s, func2), "method=int3 len=3 orig=8d4701") &&
	       field(state_patch(&s, func2), "resume") == resume &&
	       strstr(state_patch(&s, func), "method=jump len=6 orig=554889e589f8") &&
	       field(state_patch(&s, func), "tramp") != 0 &&
	       field(state_patch(&s, func), "tramp_len") > 0,
	       "and its patches, as they were noted: %s", state_patch(&s, func));
	ask(&t, line, sizeof(line), "call 1");
	proc_send(&d2, "list");
	rc = read_state(&d2, &s);
	tap_ok(!strcmp(line, "called ret=3") && !rc &&
	       field(state_probe(&s, 2), "hits") == 3,
	       "the probe still counts: %s", state_probe(&s, 2));

	/* --- fork --- */
	ask(&t, line, sizeof(line), "fork");
	child = (pid_t)field(line, "pid");
	if (!strncmp(line, "forked", 6) || !strncmp(line, "child", 5)) {
		char other[256];

		/* Both lines come, in either order. */
		proc_line(&t, other, sizeof(other), WAIT_MS);
		child = (pid_t)field(!strncmp(line, "child", 5) ? line : other, "pid");
	}
	rc = accept_agent(&d2, hello, sizeof(hello), &s);
	tap_ok(rc && field(hello, "pid") == (uint64_t)child &&
	       field(hello, "peer_pid") == (uint64_t)child,
	       "the forked child connects as its own pid %d: %s", (int)child, hello);
	tap_ok(s.nprobes == 2 && s.npatches == 2,
	       "and reports what it inherited: %s", s.head);
	ask(&d2, line, sizeof(line), "ping 11");
	tap_ok(field(line, "cookie") == 11, "the child's connection answers");
	proc_send(&d2, "use 0");
	ask(&d2, line, sizeof(line), "ping 12");
	tap_ok(field(line, "cookie") == 12, "the parent's connection still answers: %s", line);
	if (child > 0)
		kill(child, SIGKILL);
	proc_send(&d2, "use 1");
	ask(&d2, line, sizeof(line), "wait-close 5000");
	tap_ok(!strcmp(line, "closed"), "the child's connection closes when it dies");

	/* --- removal --- */
	proc_send(&d2, "use 0");
	ask(&d2, line, sizeof(line), "unpatch 0x%" PRIx64, func2);
	tap_ok(sfield(line, "status") == 0,
	       "the int3 undone (original byte back, then NOTE_REMOVED): %s", line);
	ask(&d2, line, sizeof(line), "removed 0x%" PRIx64, func2);
	tap_ok(sfield(line, "status") == -ENOENT, "NOTE_REMOVED a second time: %s", line);
	ask(&d2, line, sizeof(line), "unpatch 0x%" PRIx64, func);
	tap_ok(sfield(line, "status") == 0,
	       "the new daemon undoes the jump patch from what the agent reported: %s", line);
	ask(&t, line, sizeof(line), "call 2");
	ask(&t, hello, sizeof(hello), "call2 2");
	proc_send(&d2, "list");
	rc = read_state(&d2, &s);
	tap_ok(!strcmp(line, "called ret=6") && !strcmp(hello, "called ret=3") && !rc &&
	       s.npatches == 0 && field(state_probe(&s, 2), "hits") == 3 &&
	       field(state_probe(&s, 1), "hits") == 2,
	       "both functions run unprobed, nothing is left installed: %s", s.head);

	/* --- exit --- */
	proc_send(&t, "exit");
	rc = proc_wait(&t, WAIT_MS);
	tap_ok(rc == 0, "the target exits 0 (%d)", rc);
	ask(&d2, line, sizeof(line), "wait-close 5000");
	tap_ok(!strcmp(line, "closed"), "its connection closes");
	tap_ok(file_has(errlog, "connected to the daemon"),
	       "with LTTNG_DYNPROBE_DEBUG set, the agent told its story on stderr");

	/* --- versions: a clear message on both sides --- */
	if (start_target(&t2, env_socket, true, errlog, &func, &func2) == 0) {
		char refused[32], versions[64];

		/* The fake daemon speaks major 2 with our minor. */
		snprintf(refused, sizeof(refused), "refused major=%d", DP_APP_MAJOR);
		snprintf(versions, sizeof(versions), "protocol %d.%d, the daemon 2.%d",
			 DP_APP_MAJOR, DP_APP_MINOR, DP_APP_MINOR);
		ask(&d2, hello, sizeof(hello), "accept-major %d 2", WAIT_MS);
		read_state(&d2, &s);
		proc_line(&d2, line, sizeof(line), WAIT_MS);
		tap_ok(strstr(line, refused) && strstr(line, versions),
		       "an agent refuses a daemon of another major version, and says why: %s",
		       line);
		proc_send(&t2, "exit");
		rc = proc_wait(&t2, WAIT_MS);
		tap_ok(rc == 0 && file_has(errlog, versions),
		       "and logs it (with debug on); the target exits 0");
	}
	if (start_target(&t2, env_socket, true, errlog, &func, &func2) == 0) {
		bool said;

		ask(&d2, hello, sizeof(hello), "accept-refuse %d", WAIT_MS);
		read_state(&d2, &s);
		said = file_gets(errlog, "test refusal", WAIT_MS) &&
		       file_has(errlog, "the daemon refused us");
		proc_send(&t2, "call 3");
		proc_line(&t2, line, sizeof(line), WAIT_MS);
		proc_send(&t2, "exit");
		rc = proc_wait(&t2, WAIT_MS);
		tap_ok(rc == 0 && !strcmp(line, "called ret=9") && said,
		       "a refused agent says why (with debug on) and its program runs on");
	}
	proc_send(&d2, "quit");
	proc_wait(&d2, WAIT_MS);

	/* --- batches (minor 3) --- */
	if (!tap_ok(!start_daemon(&d3), "a fake daemon for the batches"))
		goto no_batches;
	if (start_target(&t3, env_socket, false, errlog, &func, &func2) ||
	    !accept_agent(&d3, hello, sizeof(hello), &s)) {
		tap_ok(false, "a target for the batches connects");
		proc_kill(&t3);
		proc_kill(&d3);
		goto no_batches;
	}
	/* Sites far from any code: these patches are records only. */
	ask(&d3, line, sizeof(line), "define-many 1000 3000 0x10000000 16");
	tap_ok(sfield(line, "status") == 0 && field(line, "defined") == 3000,
	       "DEFINE_PROBES of 3000 probes of two classes: %s", line);
	ask(&d3, line, sizeof(line), "define-many 5000 10 0x20000000 16");
	ask(&d3, line, sizeof(line), "define-many 4995 10 0x20001000 16");
	tap_ok(sfield(line, "status") == -EEXIST && field(line, "defined") == 5 &&
	       strstr(line, "probe 5000"),
	       "a batch naming a probe defined already stops there, saying which and how many "
	       "went in: %s", line);
	proc_send(&d3, "list");
	read_state(&d3, &s);
	tap_ok(field(s.head, "probes") == 3015,
	       "the agent holds the 3000 + 10 + 5 probes: %s", s.head);
	ask(&d3, line, sizeof(line), "installed-many 1000 3000 0x10000000 16");
	tap_ok(sfield(line, "status") == 0 && field(line, "value") == 3000,
	       "NOTE_INSTALLED_MANY of 3000 patches: %s", line);
	ask(&d3, line, sizeof(line), "installed-many 5000 10 0x20000000 16 5");
	tap_ok(sfield(line, "status") == -ENOENT && field(line, "value") == 5 &&
	       strstr(line, "6 of 10"),
	       "a batch naming an unknown probe notes the patches before it and says where it "
	       "stopped: %s", line);
	proc_send(&d3, "list");
	read_state(&d3, &s);
	tap_ok(field(s.head, "patches") == 3005 && field(s.head, "probes") == 3015,
	       "the agent reports 3005 patches: %s", s.head);
	ask(&d3, line, sizeof(line), "removed-many 3000 0x10000000 16 0x30000000");
	tap_ok(sfield(line, "status") == -ENOENT && strstr(line, "1 of the 3001") &&
	       strstr(line, "0x30000000"),
	       "NOTE_REMOVED_MANY with a site never noted: the others are forgotten, the reply "
	       "names it: %s", line);
	ask(&d3, line, sizeof(line), "removed-many 5 0x20000000 16");
	tap_ok(sfield(line, "status") == 0, "the last five forgotten: %s", line);
	proc_send(&d3, "list");
	read_state(&d3, &s);
	tap_ok(field(s.head, "patches") == 0, "no patch is left: %s", s.head);
	ask(&t3, line, sizeof(line), "call 5");
	tap_ok(!strcmp(line, "called ret=15"), "the target runs on: %s", line);
	proc_send(&t3, "exit");
	tap_ok(proc_wait(&t3, WAIT_MS) == 0, "and exits 0");
	proc_send(&d3, "quit");
	proc_wait(&d3, WAIT_MS);
no_batches:

	/* --- no daemon at all --- */
	{
		char lonely[192];
		struct watch w;
		bool watching;
		int64_t ran;

		snprintf(lonely, sizeof(lonely), "LTTNG_DYNPROBE_APP_SOCKET=%s/none.sock", tmpdir);
		t0 = dp_now_ms();
		/* The program's whole life, launch to exit, in 5 s of running
		 * time: an exit that waited for the agent's thread, which
		 * sleeps up to 30 s between connection attempts, takes longer. */
		watching = watch_start(&w, 5000) == 0;
		if (start_target(&t2, lonely, false, errlog, &func, &func2) == 0) {
			usleep(300000);		/* a few attempts happen meanwhile */
			tid = find_thread(t2.pid, "lttng-dynprobe");
			ask(&t2, line, sizeof(line), "call 4");
			proc_send(&t2, "exit");
			rc = proc_wait(&t2, WAIT_MS);
			ran = watching ? watch_end(&w) : -1;
			watching = false;
			tap_ok(rc == 0 && !strcmp(line, "called ret=12"),
			       "without a daemon the target runs normally and exits 0 (%d)", rc);
			tap_ok(tid > 0 && ran >= 0 && ran < 5000,
			       "the agent waited in the background, the exit was not delayed "
			       "(%" PRId64 " ms of running time, %" PRId64 " ms in all)", ran,
			       dp_now_ms() - t0);
			tap_ok(file_size(errlog) == 0, "and nothing was written on stderr (%d bytes)",
			       file_size(errlog));
		} else {
			tap_ok(false, "a target starts with the agent and no daemon");
		}
		if (watching)
			watch_end(&w);
	}

	proc_kill(&t);
	proc_kill(&d1);
	proc_kill(&d2);
	return tap_done();
}
