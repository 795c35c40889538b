/*
 * The extended lttng CLI: what the commands share.
 *
 * Our `lttng` is a superset of the stock one.  main() reads the general
 * options, finds the command and, for the commands we extend, calls its
 * function (one file per command in commands/).  A command that finds nothing of ours in its
 * arguments returns DP_CMD_PASS, and main() executes the stock lttng with
 * the very same arguments: same output, same exit code.  The options the
 * commands share are popt tables of options.h, included by each command's
 * own table.
 */
#ifndef DP_CLI_H
#define DP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "proto/client.h"
#include "spec/spec.h"

struct lttng_handle;

/* Exit codes, as the stock lttng's. */
#define DP_CMD_SUCCESS 0
#define DP_CMD_ERROR 1
/* Not a real exit code: run the stock lttng with the same arguments. */
#define DP_CMD_PASS (-1)

/* The general options (before the command), as the stock lttng reads them. */
struct dp_cli {
	int argc;
	char **argv;			/* the whole command line */
	int cmd_index;			/* argv[cmd_index] is the command */
	const char *group;		/* -g: the tracing group */
	const char *sessiond_path;	/* --sessiond-path */
	const char *mi;			/* -m: machine interface (not for ours) */
	bool no_sessiond;		/* -n: spawn no daemon */
	bool quiet;			/* -q */
	int verbose;			/* -v, -vv, -vvv */
};

typedef int (*dp_cmd_fn)(struct dp_cli *cli, int argc, const char **argv);

int dp_cmd_enable_event(struct dp_cli *cli, int argc, const char **argv);
int dp_cmd_disable_event(struct dp_cli *cli, int argc, const char **argv);
int dp_cmd_add_context(struct dp_cli *cli, int argc, const char **argv);
int dp_cmd_destroy(struct dp_cli *cli, int argc, const char **argv);
int dp_cmd_list(struct dp_cli *cli, int argc, const char **argv);
int dp_cmd_trace(struct dp_cli *cli, int argc, const char **argv);

/* list --vars (commands/list_vars.c): DP_CMD_SUCCESS or DP_CMD_ERROR. */
int dp_list_vars(const char *path, const char *location);
int dp_cmd_save(struct dp_cli *cli, int argc, const char **argv);
int dp_cmd_load(struct dp_cli *cli, int argc, const char **argv);
int dp_cmd_help(struct dp_cli *cli, int argc, const char **argv);

/*
 * Messages, in the stock lttng's style: "Error: ...", "Warning: ...".
 * The helpers below do not print their errors: they fill a struct dp_err
 * (err.h), as spec/ does, and the command prints it with dp_err_print where
 * it gives up.  A NULL carrier keeps a helper silent.
 */
__attribute__((format(printf, 1, 2))) void dp_err(const char *fmt, ...);
void dp_err_print(const struct dp_err *err);
__attribute__((format(printf, 1, 2))) void dp_warn(const char *fmt, ...);
/* A line on stdout, unless -q. */
__attribute__((format(printf, 2, 3))) void dp_msg(const struct dp_cli *cli, const char *fmt, ...);

/*
 * The stock lttng: $LTTNG_DYNPROBE_STOCK_LTTNG, else the one configure
 * found.  NULL (with a message) when it is this very program, which would
 * run itself forever.
 */
const char *dp_stock_lttng(void);
/* Executes the stock lttng with cli's arguments; returns only on failure. */
int dp_stock_exec(const struct dp_cli *cli);
/* Runs the stock lttng with cli's general options and args (NULL-ended),
 * waits, and returns its exit code (or DP_CMD_ERROR). */
int dp_stock_run(const struct dp_cli *cli, const char *const *args);
/* The same, its stdout kept in *out (malloc'd, NUL-ended; NULL on failure)
 * instead of shown; its stderr is ours. */
int dp_stock_capture(const struct dp_cli *cli, const char *const *args, char **out);

/* fork(2), stdio flushed first; -errno on failure. */
pid_t dp_fork(struct dp_err *err);
/* waitpid(2) of a child, through EINTR: 0 or -errno. */
int dp_wait(pid_t pid, int *status);

/* Whether this program runs from its build tree (then it uses the daemon,
 * agent and man pages of the tree). */
bool dp_in_build_tree(void);
/* Paths of the companions: env override, else build tree, else installed. */
const char *dp_daemon_path(void);
const char *dp_agent_path(void);
/* Shows the man page of an extended command ("enable-event", "trace") or
 * of lttng-dynprobe(7) ("dynprobe"); returns an exit code. */
int dp_show_man(const char *page);

/* The session named by -s, else the current one (~/.lttngrc); NULL when
 * there is none.  Returns a malloc'd name. */
char *dp_session_pick(const char *opt_session, struct dp_err *err);
/* Makes sure a session daemon runs (spawning one unless -n); 0 or -errno. */
int dp_sessiond_ensure(const struct dp_cli *cli, struct dp_err *err);
/* Whether a session of that name exists: 1, 0, or -errno. */
int dp_session_exists(const char *name, struct dp_err *err);
/* A handle on the userspace domain of a session (per-uid buffers, as
 * `lttng enable-event -u`); NULL when out of memory. */
struct lttng_handle *dp_ust_handle(const char *session);
/* Enables a tracepoint event rule of that name, every log level, in
 * channel (NULL: the default one), with filter (NULL: none); liblttng-ctl's
 * return (-LTTNG_ERR_UST_EVENT_ENABLED when it was already). */
int dp_ust_event_enable(struct lttng_handle *h, const char *name, const char *channel,
			const char *filter);
/* Disables the event rules of that name, of any type; liblttng-ctl's return. */
int dp_ust_event_disable(struct lttng_handle *h, const char *name, const char *channel,
			 const char *filter);
/* Applies -g; to call before any other liblttng-ctl call. */
void dp_lttng_setup(const struct dp_cli *cli);

/*
 * The daemon.  dp_daemon_connect: a connection to lttng-dynprobed,
 * spawning it when absent and `spawn` (and not -n); -errno, with its words
 * in err when `spawn` (without, no daemon is a plain answer).
 */
int dp_daemon_connect(const struct dp_cli *cli, bool spawn, struct dp_err *err);
/* One request and its reply; 0 or -errno.  The reply's own status is for
 * the caller to check. */
int dp_daemon_call(int fd, struct dp_client_msg *req, struct dp_client_msg *reply,
		   struct dp_err *err);
/* LIST of `session` ("": all) into reply->list_reply, each event's flags
 * filled in from LIST_FLAGS (none from a daemon too old to know it); 0 or
 * -errno as dp_daemon_call (the reply's status is the caller's). */
int dp_daemon_list(int fd, const char *session, struct dp_client_msg *reply,
		   struct dp_err *err);
/* EVENT_FLAGS: the dynamic event's flags set; 0 or -errno with words. */
int dp_daemon_event_flags(int fd, const char *session, const char *channel, const char *event,
			  uint32_t flags, struct dp_err *err);
/* Prints a report's per-process lines (sites by method, refusals, per
 * process errors); with `verbose`, every site. */
void dp_report_print(const struct dp_cli *cli, const struct dp_client_report *r, bool verbose);

/* Splits "A,B,C" pids, appended to *pids; 0 or -errno. */
int dp_parse_pids(const char *s, uint32_t **pids, uint32_t *npids, struct dp_err *err);
/* An absolute path for a user's path (made absolute, symlinks kept as the
 * kernel maps the file under its real name: resolved); NULL on failure. */
char *dp_abs_path(const char *path, struct dp_err *err);
/* Checks, before anything is touched, that path is an ELF object we can
 * analyse and the location resolves in it for that kind (enum
 * dp_client_kind: a FILE:LINE, a function's copies); 0 or -errno. */
int dp_check_location(const char *path, const char *location, int kind, struct dp_err *err);
/* The kind of --function a --copies=all|out-of-line|inlined gives; 0 or
 * -EINVAL with the words. */
int dp_copies_kind(const char *arg, int *kind, struct dp_err *err);
/* The same for SDT probes: the PROVIDER:NAME of every probe of path the
 * pattern names (*names malloc'd, dp_spec_sdt_names_free), each checked as
 * the daemon will (its sites' argument specs).  0 or -errno. */
int dp_check_sdt(const char *path, const char *pattern, char ***names, size_t *n,
		 struct dp_err *err);

/*
 * The machine interface (mi.c): --mi xml, the stock lttng's MI 4.1
 * documents, our additions in elements of the namespace DP_MI_NS.
 */
#define DP_MI_NS "urn:lttng-dynprobe:mi:1"
bool dp_mi_xml(const struct dp_cli *cli);
/* Whether --mi names a machine interface other than xml (said, then). */
bool dp_mi_refused(const struct dp_cli *cli);
/* The XML declaration, <command>, <name>command</name>, <output>. */
void dp_mi_begin(const char *command);
/* </output>, <success>, </command>. */
void dp_mi_end(bool success);
/* Text, escaped; an element holding formatted text. */
void dp_mi_text(const char *s);
__attribute__((format(printf, 2, 3))) void dp_mi_elem(const char *name, const char *fmt, ...);
/* A stock <event> of an event name (type TRACEPOINT); filter may be NULL. */
void dp_mi_stock_event(const char *name, bool enabled, const char *filter, bool success);
/* <dp:event>: a dynamic event's spec, names, contexts and processes. */
void dp_mi_dynamic_event(const struct dp_client_event *ev);
/* <dp:report>: a daemon report's message and processes. */
void dp_mi_report(const struct dp_client_report *r);
/* Prints doc, with insert(arg) called before the last occurrence of tag
 * (doc unchanged when it has none). */
void dp_mi_splice(const char *doc, const char *tag, void (*insert)(void *), void *arg);

/*
 * The dynamic events of a saved session (saved.c): lines in an XML comment
 * at the end of its session file, which the stock lttng load ignores.
 */
struct dp_saved {
	bool found;				/* the file has our comment */
	char session[DP_CLIENT_NAME_MAX];	/* the session saved */
	uint32_t nevents;
	struct dp_client_event *events;		/* specs and contexts; no processes */
};
/* Appends the events of `session` among evs to the session file; 0 or -errno. */
int dp_saved_append(const char *file, const char *session, const struct dp_client_event *evs,
		    uint32_t nevs, struct dp_err *err);
/* Reads them back (s->found false when the file has none); 0 or -errno. */
int dp_saved_read(const char *file, struct dp_saved *s, struct dp_err *err);
void dp_saved_release(struct dp_saved *s);

#endif /* DP_CLI_H */
