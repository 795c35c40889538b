/*
 * lttng-dynprobed: options, the pid file that keeps it to one daemon per
 * user, the client and app sockets, signals; the event loop is serve.c's.
 *
 * Exit statuses: 0 after SIGTERM/SIGINT (every patched site restored),
 * 1 on a start-up failure, DP_DAEMON_EXIT_RUNNING when a daemon of this user
 * runs already (its pid named).  --daemonize returns once the sockets accept
 * connections, with the daemon's own start-up status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/proc-status.h"

static char client_sock[DP_CLIENT_PATH_MAX];
static char pid_path[DP_CLIENT_PATH_MAX];

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: lttng-dynprobed [OPTION]...\n"
		"The companion of lttng-sessiond that installs dynamic userspace probes.\n"
		"\n"
		"  -d, --daemonize        run in the background; return once ready\n"
		"  -v, --verbose          say what it does (-vv: every request)\n"
		"      --log FILE         write messages to FILE instead of stderr\n"
		"      --agent PATH       the agent library injected into processes\n"
		"                         (default %s, or $LTTNG_DYNPROBE_AGENT)\n"
		"      --poll-ms MS       how often to check that sessions exist (0: never)\n"
		"      --attach-exec      root: probe the processes that execute a program\n"
		"                         named by a path-wide event, without the agent, as\n"
		"                         they start (or $LTTNG_DYNPROBE_ATTACH_EXEC=1)\n"
		"      --max-user-connections N\n"
		"                         connections one user (but the daemon's own) may\n"
		"                         hold open on the sockets (default 128)\n"
		"  -h, --help             this help\n"
		"  -V, --version          the version\n"
		"\n"
		"Sockets and the pid file live in $LTTNG_HOME/.lttng (root: /var/run/lttng).\n"
		"Errors are always written, and so is the daemon held up 2 s or more: where\n"
		"(its loop, or the lock over its state) and where the stuck thread waits.\n",
		DP_AGENT_PATH);
}

/* A positive number of milliseconds (0 allowed), or -1. */
static int parse_ms(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 3600000)
		return -1;
	return (int)v;
}

/* mkdir -p, new directories with `mode`. */
static int make_dirs(const char *path, mode_t mode)
{
	char buf[DP_CLIENT_PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static void dir_of(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (n >= size)
		n = size - 1;
	memcpy(out, path, n);
	out[n] = '\0';
	if (!n)
		snprintf(out, size, ".");
}

/*
 * Takes the pid file's lock: the descriptor, or -1 after printing why (and
 * *running set when another daemon holds it).
 */
static int pidfile_lock(bool *running)
{
	char buf[32] = "";
	int fd = open(pid_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ssize_t n;

	*running = false;
	if (fd < 0) {
		fprintf(stderr, "lttng-dynprobed: cannot open the pid file %s: %s\n", pid_path,
			strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	/*
	 * A daemon that was killed keeps the lock until its last thread has
	 * ended, which takes a while for a big process, though its first
	 * thread already shows as a zombie: wait for it rather than refuse a
	 * restart.  One that still runs is refused at once.
	 */
	for (int64_t until = dpd_now_ms() + 10000; dpd_now_ms() < until;) {
		struct timespec nap = { 0, 10 * 1000000 };
		int pid = atoi(buf);

		if (pid > 0 && dp_proc_alive(pid))
			break;
		nanosleep(&nap, NULL);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		/* A daemon starting meanwhile writes its pid. */
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
	}
	fprintf(stderr,
		"lttng-dynprobed: a daemon already runs for this user (pid %s, pid file %s): "
		"use it, or stop it first (kill %s)\n",
		*buf ? buf : "?", pid_path, *buf ? buf : "PID");
	close(fd);
	*running = true;
	return -1;
}

static int pidfile_write(int fd)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		return -errno;
	return 0;
}

/* A listening socket at path with the given mode (0600 or 0666).  The
 * descriptor or -errno. */
static int listen_at(const char *path, mode_t mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* We hold the pid file: a socket file left there is a dead daemon's. */
	unlink(path);
	/* Created with no access at all for others, then opened as asked:
	 * no moment where another user could connect unasked. */
	mode_t old = umask(0177);

	ret = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (ret < 0 || chmod(path, mode) < 0 || listen(fd, 64) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

/* A daemon holds no terminal: messages go to the log file, if any. */
static void redirect_stdio(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/* Descriptors the starter left open (its log, the lttng command's own
 * connection to the session daemon) are not the daemon's: a root daemon
 * would keep them for its whole life, and hand them to nobody. */
static void close_inherited(void)
{
	if (close_range(STDERR_FILENO + 1, ~0u, 0) < 0) {
		/* Kernels before 5.9. */
		for (int fd = STDERR_FILENO + 1; fd < 1024; fd++)
			close(fd);
	}
}

/* Connections are bounded per user (serve.c), not by the descriptors a
 * process may open: the soft limit goes up to the hard one. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Every site of every process back to its original bytes (the workers are
 * gone: no hold waits). */
static void restore_everything(void)
{
	size_t n = 0, k = 0;
	pid_t *pids;

	dpd_lock();
	for (struct dpd_proc *p = dpd_procs; p; p = p->next)
		n++;
	pids = calloc(n ? n : 1, sizeof(*pids));
	for (struct dpd_proc *p = dpd_procs; p && pids; p = p->next)
		if (p->nsites)
			pids[k++] = p->pid;
	for (size_t i = 0; i < k; i++) {
		struct dpd_proc *p;

		if (dpd_hold(pids[i]))
			continue;
		p = dpd_proc_find(pids[i]);
		if (p && p->nsites)
			dpd_remove(NULL, p, NULL);
		dpd_unhold(pids[i]);
	}
	free(pids);
	dpd_unlock();
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "daemonize", no_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "log", required_argument, NULL, 'l' },
		{ "agent", required_argument, NULL, 'a' },
		{ "poll-ms", required_argument, NULL, 'p' },
		{ "attach-exec", no_argument, NULL, 'x' },
		{ "max-user-connections", required_argument, NULL, 'm' },
		/* Not in --help: a pause between preparing an install and
		 * writing it, so that tests can kill the daemon or the target
		 * right there. */
		{ "test-pause-ms", required_argument, NULL, 't' },
		/* Only into that process (tests of requests served at once). */
		{ "test-pause-pid", required_argument, NULL, 'P' },
		/* Not in --help either: a step where the daemon kills itself
		 * (log.c, dpd_fault). */
		{ "test-fault", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool daemonize = false, running, attach_exec = false;
	const char *log_path = NULL, *env;
	int ready[2] = { -1, -1 };
	int c, ret, lock_fd, client_fd, sig_fd;
	char dir[DP_CLIENT_PATH_MAX];
	sigset_t mask;

	close_inherited();
	env = getenv("LTTNG_DYNPROBE_AGENT");
	if (env && *env)
		dpd_cfg.agent_path = env;
	while ((c = getopt_long(argc, argv, "dvhV", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			daemonize = true;
			break;
		case 'x':
			attach_exec = true;
			break;
		case 'm': {
			char *end;
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 1 || v > 65536) {
				fprintf(stderr, "lttng-dynprobed: --max-user-connections takes a "
						"number from 1 to 65536, not '%s'\n", optarg);
				return 1;
			}
			dpd_max_user_conns = (int)v;
			break;
		}
		case 'v':
			dpd_verbosity++;
			break;
		case 'l':
			log_path = optarg;
			break;
		case 'a':
			dpd_cfg.agent_path = optarg;
			break;
		case 'p':
			dpd_cfg.poll_ms = parse_ms(optarg);
			if (dpd_cfg.poll_ms < 0) {
				fprintf(stderr, "lttng-dynprobed: --poll-ms takes milliseconds, "
						"not '%s'\n", optarg);
				return 1;
			}
			break;
		case 't':
			dpd_cfg.test_pause_ms = parse_ms(optarg);
			if (dpd_cfg.test_pause_ms < 0)
				return 1;
			break;
		case 'P':
			dpd_cfg.test_pause_pid = (pid_t)atoi(optarg);
			if (dpd_cfg.test_pause_pid <= 0)
				return 1;
			break;
		case 'F':
			if (dpd_fault_set(optarg)) {
				fprintf(stderr, "lttng-dynprobed: --test-fault takes STEP[:N][:stop|:sleep], "
						"not '%s'\n", optarg);
				return 1;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("lttng-dynprobed %s\n", PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "lttng-dynprobed: unexpected argument '%s' (see --help)\n",
			argv[optind]);
		return 1;
	}
	env = getenv("LTTNG_DYNPROBE_ATTACH_EXEC");
	if (env && *env && strcmp(env, "0"))
		attach_exec = true;
	if (attach_exec && geteuid() != 0) {
		fprintf(stderr, "lttng-dynprobed: --attach-exec (or LTTNG_DYNPROBE_ATTACH_EXEC) "
				"needs root: the kernel's process-events connector is open to "
				"root only; start programs with the agent preloaded instead\n");
		return 1;
	}
	if (dpd_cfg.agent_path[0] != '/') {
		fprintf(stderr, "lttng-dynprobed: the agent's path must be absolute, not '%s'\n",
			dpd_cfg.agent_path);
		return 1;
	}

	ret = dp_client_socket_path(client_sock, sizeof(client_sock));
	if (!ret)
		ret = dp_app_socket_path(dpd_cfg.app_sock, sizeof(dpd_cfg.app_sock));
	if (!ret)
		ret = dp_client_pidfile_path(pid_path, sizeof(pid_path));
	if (ret) {
		fprintf(stderr, "lttng-dynprobed: no place for the sockets (%s): set LTTNG_HOME "
				"or HOME\n", strerror(-ret));
		return 1;
	}
	dir_of(client_sock, dpd_cfg.run_dir, sizeof(dpd_cfg.run_dir));
	if (snprintf(dpd_cfg.state_path, sizeof(dpd_cfg.state_path), "%s/lttng-dynprobed.state",
		     dpd_cfg.run_dir) >= (int)sizeof(dpd_cfg.state_path)) {
		fprintf(stderr, "lttng-dynprobed: %s: path too long\n", dpd_cfg.run_dir);
		return 1;
	}
	/* A user's directories are private; root's is shared with lttng-sessiond. */
	ret = make_dirs(dpd_cfg.run_dir, geteuid() ? 0700 : 0755);
	if (!ret) {
		dir_of(dpd_cfg.app_sock, dir, sizeof(dir));
		ret = make_dirs(dir, geteuid() ? 0700 : 0755);
	}
	if (ret) {
		fprintf(stderr, "lttng-dynprobed: cannot create %s: %s\n", dpd_cfg.run_dir,
			strerror(-ret));
		return 1;
	}
	if (log_path && dpd_log_open(log_path)) {
		fprintf(stderr, "lttng-dynprobed: cannot open the log file %s: %s\n", log_path,
			strerror(errno));
		return 1;
	}

	lock_fd = pidfile_lock(&running);
	if (lock_fd < 0)
		return running ? DP_DAEMON_EXIT_RUNNING : 1;

	if (daemonize) {
		pid_t child;
		char st = 1;

		if (pipe2(ready, O_CLOEXEC) < 0) {
			perror("lttng-dynprobed: pipe");
			return 1;
		}
		child = fork();
		if (child < 0) {
			perror("lttng-dynprobed: fork");
			return 1;
		}
		if (child > 0) {
			/* The parent only reports how the start went. */
			close(ready[1]);
			if (read(ready[0], &st, 1) != 1)
				st = 1;
			return st;
		}
		close(ready[0]);
		setsid();
	}
	if (pidfile_write(lock_fd)) {
		fprintf(stderr, "lttng-dynprobed: cannot write %s: %s\n", pid_path,
			strerror(errno));
		goto fail;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	client_fd = listen_at(client_sock, 0600);
	if (client_fd < 0) {
		fprintf(stderr, "lttng-dynprobed: cannot listen on %s: %s\n", client_sock,
			strerror(-client_fd));
		goto fail;
	}
	/*
	 * Root may probe any user's process: the agent it injects there
	 * connects here (inject sets LTTNG_DYNPROBE_APP_SOCKET for the load),
	 * as lttng-ust connects to root's session daemon.  SO_PEERCRED ties
	 * each agent to its own process (agents.c).  A user's daemon serves
	 * only that user.
	 */
	dpd_app_listen_fd = listen_at(dpd_cfg.app_sock, geteuid() ? 0600 : 0666);
	if (dpd_app_listen_fd < 0 || sig_fd < 0) {
		fprintf(stderr, "lttng-dynprobed: cannot listen on %s: %s\n", dpd_cfg.app_sock,
			strerror(dpd_app_listen_fd < 0 ? -dpd_app_listen_fd : errno));
		unlink(client_sock);
		goto fail;
	}
	if (attach_exec) {
		struct dp_err err = DP_ERR_INIT;

		if (dpd_execs_open(&err)) {
			fprintf(stderr, "lttng-dynprobed: %s\n", err.msg);
			unlink(client_sock);
			unlink(dpd_cfg.app_sock);
			goto fail;
		}
	}
	dpd_info("pid %d, client socket %s, app socket %s, agent %s%s", (int)getpid(),
		 client_sock, dpd_cfg.app_sock, dpd_cfg.agent_path,
		 attach_exec ? ", attaching to processes as they execute" : "");
	dpd_lock_init();
	raise_fd_limit();
	dpd_lock();
	dpd_state_load();
	dpd_unlock();
	/* With or without --attach-exec: a killed daemon may have used it. */
	dpd_execs_recover();

	if (daemonize) {
		char st = 0;

		if (write(ready[1], &st, 1) < 0)
			dpd_err("cannot tell the parent we are ready");
		close(ready[1]);
		redirect_stdio();
	}

	dpd_health_start();
	dpd_serve(sig_fd, client_fd);

	restore_everything();
	/* Nothing is installed any more: a later daemon has nothing to recover. */
	unlink(dpd_cfg.state_path);
	/* Still ours: we hold the pid file. */
	unlink(client_sock);
	unlink(dpd_cfg.app_sock);
	unlink(pid_path);
	dpd_health_stop();
	dpd_info("exiting");
	return 0;

fail:
	if (daemonize && ready[1] >= 0) {
		char st = 1;

		if (write(ready[1], &st, 1) < 0)
			return 1;
	}
	unlink(pid_path);
	return 1;
}
