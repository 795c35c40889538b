/*
 * What every command of the CLI needs: messages in the stock lttng's style,
 * the stock lttng itself (executed or run), where the companions live (the
 * daemon, the agent, the man pages), and small parsers of arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "spec/sdt.h"
#include "patch/analysis.h"
#include "elf/elf.h"

#ifndef DP_STOCK_LTTNG
#define DP_STOCK_LTTNG "/usr/bin/lttng"
#endif

static void vmsg(FILE *f, const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, f);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
}

void dp_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(stderr, "Error: ", fmt, ap);
	va_end(ap);
}

void dp_err_print(const struct dp_err *err)
{
	/* An empty carrier: the failure was told already (by a child). */
	if (err->code || err->msg[0])
		dp_err("%s", dp_err_str(err));
}

void dp_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(stderr, "Warning: ", fmt, ap);
	va_end(ap);
}

void dp_msg(const struct dp_cli *cli, const char *fmt, ...)
{
	va_list ap;

	if (cli->quiet)
		return;
	va_start(ap, fmt);
	vmsg(stdout, "", fmt, ap);
	va_end(ap);
	fflush(stdout);
}

pid_t dp_fork(struct dp_err *err)
{
	pid_t pid;

	/* What stdio holds would otherwise be written by both. */
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return dp_err_set(err, -errno, "fork: %s", strerror(errno));
	return pid;
}

int dp_wait(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/* Whether two paths name the same file. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

const char *dp_stock_lttng(void)
{
	const char *path = getenv("LTTNG_DYNPROBE_STOCK_LTTNG");

	if (!path || !*path)
		path = DP_STOCK_LTTNG;
	if (same_file(path, "/proc/self/exe")) {
		dp_err("the stock lttng (%s) is this program: set LTTNG_DYNPROBE_STOCK_LTTNG to "
		       "the lttng of lttng-tools (usually /usr/bin/lttng)", path);
		return NULL;
	}
	return path;
}

int dp_stock_exec(const struct dp_cli *cli)
{
	const char *stock = dp_stock_lttng();
	char **argv;

	if (!stock)
		return DP_CMD_ERROR;
	argv = calloc(cli->argc + 1, sizeof(*argv));
	if (!argv)
		return DP_CMD_ERROR;
	for (int i = 0; i < cli->argc; i++)
		argv[i] = cli->argv[i];
	argv[0] = (char *)stock;
	fflush(NULL);
	execv(stock, argv);
	dp_err("cannot run the stock lttng %s: %s (install lttng-tools, or set "
	       "LTTNG_DYNPROBE_STOCK_LTTNG)", stock, strerror(errno));
	free(argv);
	return DP_CMD_ERROR;
}

/*
 * Starts the stock lttng with cli's general options and args (NULL-ended),
 * its stdout on out_fd (-1: ours); the child's pid, or -1 once said why.
 */
static pid_t stock_spawn(const struct dp_cli *cli, const char *const *args, int out_fd)
{
	const char *stock = dp_stock_lttng();
	const char **argv;
	size_t n = 0, nargs = 0;
	struct dp_err err;
	pid_t pid;

	if (!stock)
		return -1;
	while (args[nargs])
		nargs++;
	argv = calloc(cli->cmd_index + nargs + 1, sizeof(*argv));
	if (!argv)
		return -1;
	argv[n++] = stock;
	/* The general options, exactly as given. */
	for (int i = 1; i < cli->cmd_index; i++)
		argv[n++] = cli->argv[i];
	for (size_t i = 0; i < nargs; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = dp_fork(&err);
	if (pid < 0) {
		dp_err_print(&err);
		free(argv);
		return -1;
	}
	if (!pid) {
		if (out_fd >= 0 && dup2(out_fd, STDOUT_FILENO) < 0)
			_exit(127);
		execv(stock, (char **)argv);
		dp_err("cannot run the stock lttng %s: %s", stock, strerror(errno));
		_exit(127);
	}
	free(argv);
	return pid;
}

/* The exit code of a stock lttng started by stock_spawn. */
static int stock_wait(pid_t pid)
{
	int status;

	if (dp_wait(pid, &status))
		return DP_CMD_ERROR;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return DP_CMD_ERROR;
}

int dp_stock_run(const struct dp_cli *cli, const char *const *args)
{
	pid_t pid = stock_spawn(cli, args, -1);

	return pid < 0 ? DP_CMD_ERROR : stock_wait(pid);
}

int dp_stock_capture(const struct dp_cli *cli, const char *const *args, char **out)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fds[2], ret;
	pid_t pid;

	*out = NULL;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		dp_err("pipe: %s", strerror(errno));
		return DP_CMD_ERROR;
	}
	pid = stock_spawn(cli, args, fds[1]);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return DP_CMD_ERROR;
	}
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *grown = realloc(buf, cap + 65536);

			if (!grown)
				break;	/* the child still has to be waited for */
			buf = grown;
			cap += 65536;
		}
		n = read(fds[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fds[0]);
	ret = stock_wait(pid);
	if (!buf) {
		dp_err("out of memory");
		return DP_CMD_ERROR;
	}
	buf[len] = '\0';
	*out = buf;
	return ret;
}

bool dp_in_build_tree(void)
{
	static int known = -1;
	char self[PATH_MAX];
	ssize_t n;

	if (known >= 0)
		return known;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	known = 0;
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			/* libtool may run the real program from .libs. */
			if (!strcmp(slash + 1, "lttng") || !strcmp(slash + 1, "lt-lttng")) {
				char *dot = strrchr(self, '/');

				if (dot && !strcmp(dot, "/.libs"))
					*dot = '\0';
			}
			known = same_file(self, DP_BUILDDIR);
		}
	}
	return known;
}

static const char *env_or(const char *name, const char *build, const char *installed)
{
	const char *v = getenv(name);

	if (v && *v)
		return v;
	return dp_in_build_tree() ? build : installed;
}

const char *dp_daemon_path(void)
{
	return env_or("LTTNG_DYNPROBE_DAEMON",
		      DP_TOP_BUILDDIR "/src/bin/lttng-dynprobed/lttng-dynprobed",
		      DP_BINDIR "/lttng-dynprobed");
}

const char *dp_agent_path(void)
{
	return env_or("LTTNG_DYNPROBE_AGENT",
		      DP_TOP_BUILDDIR "/src/lib/lttng-ust-dynprobe/.libs/liblttng-ust-dynprobe.so.0",
		      DP_LIBDIR "/liblttng-ust-dynprobe.so.0");
}

int dp_show_man(const char *page)
{
	static const struct {
		const char *page, *file;
		char section;
	} pages[] = {
		{ "enable-event", "lttng-dynprobe-enable-event", '1' },
		{ "add-context", "lttng-dynprobe-add-context", '1' },
		{ "list", "lttng-dynprobe-list", '1' },
		{ "trace", "lttng-trace", '1' },
		{ "dynprobe", "lttng-dynprobe", '7' },
	};
	char src[PATH_MAX], inst[PATH_MAX];
	const char *file = NULL;

	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		if (strcmp(pages[i].page, page))
			continue;
		snprintf(src, sizeof(src), "%s/doc/man/%s.%c", DP_TOP_SRCDIR, pages[i].file,
			 pages[i].section);
		snprintf(inst, sizeof(inst), "%s/man%c/%s.%c", DP_MANDIR, pages[i].section,
			 pages[i].file, pages[i].section);
		if (dp_in_build_tree() && !access(src, R_OK))
			file = src;
		else if (!access(inst, R_OK))
			file = inst;
		else if (!access(src, R_OK))
			file = src;
		break;
	}
	if (!file) {
		dp_err("no man page for '%s' is installed (expected under %s)", page, DP_MANDIR);
		return DP_CMD_ERROR;
	}
	fflush(NULL);
	execlp("man", "man", "-l", file, (char *)NULL);
	dp_err("cannot run man (%s): read %s with `man -l`", strerror(errno), file);
	return DP_CMD_ERROR;
}

char *dp_session_pick(const char *opt_session, struct dp_err *err)
{
	const char *home = getenv("LTTNG_HOME");
	char path[PATH_MAX], line[512];
	char *name = NULL;
	FILE *f;

	if (opt_session)
		return strdup(opt_session);
	if (!home || !*home)
		home = getenv("HOME");
	if (!home) {
		dp_err_set(err, -ENOENT,
			   "no session given, and no home to find the current one: use -s SESSION");
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/.lttngrc", home);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "session=", 8)) {
				line[strcspn(line, "\r\n")] = '\0';
				free(name);
				name = strdup(line + 8);
			}
		}
		fclose(f);
	}
	if (!name || !*name) {
		free(name);
		dp_err_set(err, -ENOENT, "no current session: create one with `lttng create NAME`, "
			   "or name one with -s SESSION");
		return NULL;
	}
	return name;
}

int dp_parse_pids(const char *s, uint32_t **pids, uint32_t *npids, struct dp_err *err)
{
	const char *p = s;

	while (*p) {
		size_t len = strcspn(p, ",");
		char buf[32];
		uint64_t v;
		uint32_t *grown;

		if (!len || len >= sizeof(buf))
			return dp_err_set(err, -EINVAL, "bad --pid '%s': expected PID[,PID]...", s);
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (dp_spec_number(buf, &v, NULL) || !v || v > INT32_MAX)
			return dp_err_set(err, -EINVAL, "bad --pid '%s': '%s' is not a process id",
					  s, buf);
		if (*npids >= DP_CLIENT_MAX_PIDS)
			return dp_err_set(err, -E2BIG, "too many --pid values (at most %d)",
					  DP_CLIENT_MAX_PIDS);
		grown = realloc(*pids, (*npids + 1) * sizeof(**pids));
		if (!grown)
			return dp_err_set(err, -ENOMEM, "out of memory");
		*pids = grown;
		(*pids)[(*npids)++] = (uint32_t)v;
		p += len;
		if (*p == ',') {
			p++;
			if (!*p)
				return dp_err_set(err, -EINVAL, "bad --pid '%s': a pid is missing "
						  "after the last ','", s);
		}
	}
	return 0;
}

char *dp_abs_path(const char *path, struct dp_err *err)
{
	char *real = realpath(path, NULL);

	if (!real)
		dp_err_set(err, -errno, "%s: %s (--path names the executable or shared library "
			   "to probe)", path, strerror(errno));
	return real;
}

int dp_check_sdt(const char *path, const char *pattern, char ***names, size_t *n,
		 struct dp_err *err)
{
	struct dp_object *obj = dp_object_open(path);
	int ret;

	*names = NULL;
	*n = 0;
	if (!obj)
		return dp_err_set(err, -errno, "%s: %s", path, dp_elf_strerror(errno));
	ret = dp_spec_sdt_names(dp_object_elf(obj), pattern, names, n, err);
	for (size_t i = 0; !ret && i < *n; i++) {
		struct dp_sdt_event ev;

		ret = dp_spec_sdt_event(dp_object_elf(obj), (*names)[i], &ev, err);
		dp_spec_sdt_event_release(&ev);
	}
	if (ret) {
		dp_spec_sdt_names_free(*names, *n);
		*names = NULL;
		*n = 0;
	}
	dp_object_close(obj);
	return ret;
}

int dp_copies_kind(const char *arg, int *kind, struct dp_err *err)
{
	if (!strcmp(arg, "all"))
		*kind = DP_CLIENT_KIND_FUNCTION;
	else if (!strcmp(arg, "out-of-line"))
		*kind = DP_CLIENT_KIND_FUNCTION_OUTLINE;
	else if (!strcmp(arg, "inlined"))
		*kind = DP_CLIENT_KIND_FUNCTION_INLINED;
	else
		return dp_err_set(err, -EINVAL, "--copies=%s: expected all (the out-of-line body "
				  "and every inlined copy), out-of-line or inlined", arg);
	return 0;
}

int dp_check_location(const char *path, const char *location, int kind, struct dp_err *err)
{
	struct dp_location loc;
	struct dp_object *obj;
	const struct dp_function *fn;
	uint64_t vaddr;
	int ret;

	ret = dp_spec_location_parse(location, &loc, err);
	if (ret)
		return ret;
	obj = dp_object_open(path);
	if (!obj)
		return dp_err_set(err, -errno, "%s: %s", path, dp_elf_strerror(errno));
	if (dp_client_kind_function((uint8_t)kind)) {
		struct dp_spec_fn_sites fs;
		enum dp_spec_copies_sel sel = kind == DP_CLIENT_KIND_FUNCTION_OUTLINE ?
			DP_SPEC_COPIES_OUTLINE : kind == DP_CLIENT_KIND_FUNCTION_INLINED ?
			DP_SPEC_COPIES_INLINED : DP_SPEC_COPIES_ALL;

		ret = dp_spec_function_sites(obj, path, &loc, sel, &fs, err);
		if (!ret)
			dp_spec_fn_sites_release(&fs);
	} else if (loc.kind == DP_LOC_LINE) {
		uint64_t *addrs;
		size_t n;

		ret = dp_spec_line_resolve(obj, path, &loc, &addrs, &n, NULL, 0, err);
		if (!ret)
			free(addrs);
	} else {
		ret = dp_spec_location_resolve(obj, path, &loc, &vaddr, &fn, err);
	}
	dp_object_close(obj);
	return ret;
}
