/*
 * lttng-dynprobed's state and the contract between its files.
 *
 *   main.c      options, the pid file, sockets, signals, start and exit
 *   serve.c     the event loop: connections, frames assembled without
 *               blocking, bounds per user, the workers that serve requests
 *   log.c       messages on stderr or a log file
 *   health.c    the loop or the state lock held up: said in the log, with
 *               where the stuck thread waits
 *   lock.c      the state lock, holds on processes and events, pins
 *   resolve.c   specs against objects: locations, symbols, contexts, plans,
 *               where an object is mapped in a process
 *   state.c     the daemon's state, one owner: dynamic events (sessions ->
 *               events -> specs) and their file, the processes, what each
 *               holds (probes, patches) and the patch windows' geometry
 *   agents.c    agent connections: HELLO, requests, recovery of what an
 *               agent reports
 *   stage.c     a batch of patches made ready while the program runs:
 *               probes, trampolines, notes to the agent, reports
 *   write.c     a batch of patches written (and sites restored) in one stop
 *   combine.c   probes whose windows meet: their points planned as one
 *               batch, replacing the installed patches in one stop
 *   install.c   patching events into one process; installs pending at HELLO
 *   remove.c    taking events out of processes
 *   sem.c       SDT semaphores raised while an event is installed
 *   mappers.c   the processes an event given by path reaches
 *   clients.c   the client protocol's requests
 *   sessions.c  noticing destroyed sessions (liblttng-ctl)
 *   execs.c     processes that execute a probed program without the agent,
 *               from the kernel's process-events connector (root)
 *   claims.c    what a process's code is said to hold, checked against it;
 *               the identity of the program it runs
 *   perm.c      whether a peer could trace a process itself
 *
 * Who calls whom: a file calls only the files listed after it on its line,
 * each of which is lower in this list, so the calls form no cycle (log.c,
 * health.c and lock.c are called by most and call none but each other;
 * state.c is the only owner of the state):
 *
 *   main.c      -> serve execs remove state
 *   serve.c     -> execs sessions clients install agents state
 *   execs.c     -> install remove claims state resolve
 *   sessions.c  -> clients state
 *   clients.c   -> install remove mappers state resolve
 *   install.c   -> remove sem combine write stage agents state resolve
 *   remove.c    -> sem combine write stage agents state
 *   sem.c       -> state resolve
 *   combine.c   -> write stage agents state resolve
 *   mappers.c   -> resolve
 *   write.c     -> stage claims agents state
 *   stage.c     -> agents state resolve
 *   agents.c    -> perm claims state resolve
 *   state.c     -> resolve lock
 *   perm.c      -> (none)
 *   claims.c    -> (none)
 *   resolve.c   -> (none)
 *   lock.c      -> (log.c, health.c; and state.c's dpd_event_free at an
 *                   event's last unpin)
 *
 * Threads: serve.c's loop owns the connections and only reads frames and
 * accepts; workers serve requests, agents' messages, exec notices and the
 * session poll, several at once, under lock.c's rules (its comment says
 * them).  A job runs in one worker from start to end, so a process ptraced
 * by a job is ptraced from one thread (ptrace is tied to the tracing
 * thread); holds keep two jobs from ptracing one process at once.
 */
#ifndef DPD_DAEMON_H
#define DPD_DAEMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "patch/plan.h"
#include "proto/app.h"
#include "proto/client.h"
#include "spec/sdt.h"
#include "u64map.h"

/* ---- log.c ---- */

enum dpd_level { DPD_ERR, DPD_INFO, DPD_DEBUG };

extern int dpd_verbosity;	/* messages above it are dropped */
int dpd_log_open(const char *path);
void dpd_log(enum dpd_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Tests only (--test-fault STEP[:N][:stop|:sleep], not in --help): the daemon
 * kills itself with SIGKILL the Nth time (1st by default) it reaches STEP, to
 * prove that a daemon dying there leaves every target running and every
 * patch recoverable; with ":stop" it stops itself (SIGSTOP) there instead,
 * for a test to act on the target (kill it, signal it) at that very step,
 * then SIGCONT it; with ":sleep" the thread there sleeps 3 s and goes on
 * (health.c's reports of a held-up state lock).  dpd_fault_set() returns -EINVAL for a malformed spec.  The
 * steps, in the order an install or a removal meets them:
 *   install    install: a process's install begins, its agent not yet
 *              looked for
 *   agent      install: the agent loaded and its HELLO read
 *   staged     install: trampolines written, patches noted to the agent
 *   stopping   a batch's threads about to be stopped (the state lock
 *              let go meanwhile)
 *   held       every thread held for a batch, nothing written yet
 *   led        a batch with led branches (DP_PLAN_REDIRECT): the new
 *              leds' hops and branches written, not yet the new windows
 *   unled      the same, removing: the windows restored, not yet the
 *              leds' branches and hops
 *   written    the batch written (jumps, or original bytes), threads held
 *   detached   install: threads let go, the patches not yet recorded
 *   remove     removal: a process's removal begins, nothing done yet
 *   rebuilt    removal: shared patches rebuilt for the other events
 *              (trampolines written and noted), nothing written
 *   restored   removal: the batch written and let go, the agent not yet
 *              told (NOTE_REMOVED)
 *   combined   a combine (install or removal): its batch planned and
 *              staged, nothing written
 *   hello      an agent's HELLO read and what it reports adopted, not
 *              answered yet
 *   spun       --attach-exec: a process that executed a probed program
 *              spins at its entry point (on record), nothing installed
 *   accept     the loop accepted client connections (with ":sleep": the
 *              loop held up)
 */
int dpd_fault_set(const char *spec);
void dpd_fault(const char *step);

/* ---- health.c ---- */

void dpd_health_start(void);
void dpd_health_stop(void);
/* The loop's step (a string constant), NULL while it waits for work. */
void dpd_loop_step(const char *step);
/* lock.c: the state lock taken by taker; about to be let go (its taker
 * and how long it was held); said when that was long. */
void dpd_health_locked(const char *taker);
const char *dpd_health_unlocking(int64_t *held);
void dpd_health_lock_held(const char *taker, int64_t held);

#define dpd_err(...) dpd_log(DPD_ERR, __VA_ARGS__)
#define dpd_info(...) dpd_log(DPD_INFO, __VA_ARGS__)
#define dpd_dbg(...) dpd_log(DPD_DEBUG, __VA_ARGS__)

/* ---- lock.c ---- */

void dpd_lock_init(void);
/* The state lock (lock.c's comment): taken by a worker for its job; the
 * taker's name is what health.c says when the lock is held up. */
void dpd_lock_by(const char *taker);
#define dpd_lock() dpd_lock_by(__func__)
void dpd_unlock(void);
/* Wakes every thread waiting for a change (dpd_wait_change). */
void dpd_changed(void);
/* With the state lock: waits for a change, or until deadline_ms
 * (dpd_now_ms's clock; 0: no deadline). */
void dpd_wait_change(int64_t deadline_ms);
/* CLOCK_MONOTONIC, in ms. */
int64_t dpd_now_ms(void);
/* serve.c: signals are the loop's (signalfd): every other thread blocks
 * them all, first thing. */
void dpd_block_signals(void);
/* Holds pid (waiting while another thread does); again by its holder,
 * nested.  0, or -EDEADLK when the thread holds another pid (a bug). */
int dpd_hold(pid_t pid);
/* The same for a HELLO's job: it may borrow a hold lent by a thread that
 * waits for that HELLO. */
int dpd_hold_hello(pid_t pid);
void dpd_unhold(pid_t pid);
/* Whether some thread holds pid; the pids held now (at most max). */
bool dpd_held(pid_t pid);
size_t dpd_held_pids(pid_t *out, size_t max);
size_t dpd_held_count(void);
/* The holder lends its hold while it waits for a HELLO; unlend waits until
 * the borrower, if any, is done. */
void dpd_hold_lend(pid_t pid);
void dpd_hold_unlend(pid_t pid);
/* Whether another thread borrows pid's hold now. */
bool dpd_hold_borrowed(pid_t pid);
/* Called with the state lock when a pid's hold ends (serve.c: the installs
 * a HELLO or a MAPPED left pending). */
extern void (*dpd_hold_released)(pid_t pid);

/* The agent connections serve.c's loop polls (their own lock). */
struct dpd_watch {
	pid_t pid;
	int fd;
	uid_t uid;
	bool busy;			/* a job looks at it */
	int64_t quiet_until;		/* half a frame there: not polled until then */
};
/* pid's agent connection is fd (before it is used), or is closed (before
 * the close). */
void dpd_watch_set(pid_t pid, int fd, uid_t uid);
void dpd_watch_clear(pid_t pid, int fd);
void dpd_watch_busy(pid_t pid, int fd);
void dpd_watch_done(pid_t pid, int fd, int64_t quiet_until);
/* A copy of the list (to free), its length. */
size_t dpd_watch_copy(struct dpd_watch **out);
/* The agent connections of a user. */
size_t dpd_watch_count(uid_t uid);
/* Called after each change (serve.c wakes its loop). */
extern void (*dpd_watch_wake)(void);

/* ---- state.c: settings (main.c fills them from its options) ---- */

struct dpd_config {
	const char *agent_path;		/* the agent injected into processes */
	int poll_ms;			/* session polling period (0: none) */
	int test_pause_ms;		/* tests: pause in the middle of each install */
	pid_t test_pause_pid;		/* ... of installs into that process only (0: all) */
	char run_dir[DP_CLIENT_PATH_MAX];
	char state_path[DP_CLIENT_PATH_MAX + 32];
	char app_sock[DP_CLIENT_PATH_MAX];	/* where agents connect */
};
extern struct dpd_config dpd_cfg;

/* ---- resolve.c ---- */

/*
 * A cached, analysed object file.  dpd_object_get hands out a reference
 * (an event keeps one while it exists) that dpd_object_put gives back; an
 * object no one references is idle, and stays open (the next event on it
 * costs nothing) until more than DPD_OBJECTS_IDLE_MAX are idle: then the
 * least recently used are closed with their DWARF, by dpd_objects_trim
 * once no job that began before they fell idle still runs (a job may hold
 * a pointer it read from an event freed meanwhile).  All with the state
 * lock.
 */
#define DPD_OBJECTS_IDLE_MAX 8
struct dpd_object {
	char path[DP_CLIENT_PATH_MAX];
	dev_t dev;
	ino_t ino;
	int64_t mtime_ns;
	struct dp_object *obj;
	uint64_t first_vaddr;		/* of the first loadable segment, page-aligned */
	bool pie;			/* ET_DYN: loaded with a bias */
	struct dpd_object *next;
};

/* The object at path (opened and cached; reopened when the file changed),
 * referenced: the caller puts it.  NULL with a message. */
struct dpd_object *dpd_object_get(const char *path, struct dp_err *msg);
/*
 * The object at path for process pid, whose root or mount namespace may be
 * another (a container): the file at path as pid sees it (through
 * /proc/PID/root) when pid maps that one; else the file at path as the
 * daemon sees it.  pid 0, or one that sees what the daemon sees: as
 * dpd_object_get().  NULL with a message.
 */
struct dpd_object *dpd_object_get_for(const char *path, pid_t pid, struct dp_err *msg);
/* Gives back a reference (NULL: nothing). */
void dpd_object_put(struct dpd_object *o);
/* How many times an object fell idle so far: a job notes it as it begins
 * (no state lock needed). */
uint64_t dpd_objects_epoch(void);
/* Whether more objects are idle than are kept (no state lock needed). */
bool dpd_objects_trim_wanted(void);
/* Closes the least recently used idle objects beyond DPD_OBJECTS_IDLE_MAX
 * that fell idle at or before oldest_job (the epoch the oldest running job
 * noted; dpd_objects_epoch() when none runs); how many. */
size_t dpd_objects_trim(uint64_t oldest_job);

/* Roles of a probe point. */
enum dpd_role {
	DPD_ROLE_PROBE,		/* --probe */
	DPD_ROLE_ENTRY,		/* --function: entry */
	DPD_ROLE_RETURN,	/* --function: a return site */
};

struct dpd_point {
	uint64_t vaddr;
	uint8_t role;		/* enum dpd_role */
	bool optional;		/* may be left out when it cannot be placed: a
				   return site, or an entry of a pattern's */
};

/*
 * Resolves an ENABLE's location in an object into points: one for a probe,
 * one per address block of a FILE:LINE, the entry and the return sites of
 * a function's body and of each of its inlined copies (as the kind
 * chooses).  note (may be NULL) receives what is worth saying on success
 * (copies not probed and why, lines sharing an address).  0, or -errno
 * with the one-line message of spec/.
 */
int dpd_resolve_location(struct dpd_object *o, const char *location, uint8_t kind,
			 struct dpd_point **points, uint32_t *npoints, char *note,
			 size_t note_size, struct dp_err *msg);

/*
 * An SDT event's probe (PROVIDER:NAME) in an object: its sites (dp_spec_sdt_event)
 * into sdt, and one required point per site (points[i] is sdt->sites[i]).
 * 0, or -errno with dp_spec_sdt_event's message.
 */
int dpd_resolve_sdt(struct dpd_object *o, const char *probe, struct dp_sdt_event *sdt,
		    struct dpd_point **points, uint32_t *npoints, struct dp_err *msg);

/*
 * The argument fields of SDT site `site` for one process (load bias `bias`):
 * sdt->nargs value contexts arg0..argN into out.  0, or -errno with a
 * message (a symbol of a %rip operand not found).
 */
int dpd_resolve_sdt_args(struct dpd_object *o, const struct dp_sdt_event *sdt, size_t site,
			 uint64_t bias, struct dp_ctx *out, struct dp_err *msg);

/*
 * A context spec for one process: symbols of the object in ADDR replaced by
 * their run-time address (bias added), then parsed.  0, or -errno with a
 * message.
 */
int dpd_resolve_ctx(struct dpd_object *o, const char *spec, uint64_t bias, struct dp_ctx *out,
		    struct dp_err *msg);

/*
 * The contexts a spec gives at one point of an event in one process (bias:
 * its load bias; 0 to check an event before any process): one for most
 * specs; for var: (spec/var.h) one compiled from the object's DWARF at the
 * point, for args one per parameter there, and none at a return point (a
 * function's return event records ret).  At most max into out, their
 * number in *n.  0, or -errno with a message.
 */
int dpd_resolve_ctx_at(struct dpd_object *o, const char *spec, uint64_t bias,
		       const struct dpd_point *pt, struct dp_ctx *out, size_t max, size_t *n,
		       struct dp_err *msg);

struct dpd_event;

/*
 * The ret context of an event's return points: typed by the probed
 * function's DWARF return type (read at its entries: every one must agree,
 * so that a pattern's functions of different types keep the untyped one)
 * when typed is true (the agent computes recipes); else rax as retval, a
 * signed 64-bit integer.  The same for every return point of the event.
 */
int dpd_resolve_ret(struct dpd_event *ev, bool typed, struct dp_ctx *out);

/*
 * Where the object is loaded in pid: its load bias (0 for a non-PIE
 * executable).  The mapping must be the same file (device and inode).
 * 0, -ENOENT when pid does not map it, -ESRCH when pid is gone.
 */
int dpd_object_bias(struct dpd_object *o, pid_t pid, uint64_t *bias);

/* Whether pid maps the object (same file). */
bool dpd_object_mapped(struct dpd_object *o, pid_t pid);

/* Fills a SITES reply. */
void dpd_sites(const char *path, const char *function, struct dp_client_sites_reply *rep);

/* How a planned patch installs, in the client protocol's words. */
void dpd_plan_method(const struct dp_patch *pl, struct dp_client_site *s);

/* How the daemon plans: branches led into trampolines where only an int3
 * fits otherwise, each patch standing alone (patch/plan.h). */
#define DPD_PLAN_FLAGS (DP_PLAN_REDIRECT | DP_PLAN_ALONE)

/* ---- state.c: events ---- */

struct dpd_event {
	struct dpd_event *next;
	uid_t owner;
	char session[DP_CLIENT_NAME_MAX];
	char channel[DP_CLIENT_NAME_MAX];
	char event[DP_CLIENT_EVENT_MAX];	/* as given */
	uint8_t kind;
	char location[DP_CLIENT_LOCATION_MAX];
	char path[DP_CLIENT_PATH_MAX];
	uint32_t npids;
	uint32_t *pids;
	uint32_t nctx;
	char (*ctx)[DP_CLIENT_CTX_MAX];
	uint32_t nnames;
	char names[DP_CLIENT_MAX_NAMES][DP_CLIENT_EVENT_MAX];	/* lttng event names */
	bool enabled;
	uint32_t flags;			/* enum dp_client_event_flag (EVENT_FLAGS) */

	/* Resolved at ENABLE (and when loaded from the state file). */
	struct dpd_object *obj;
	uint32_t npoints;
	struct dpd_point *points;
	size_t nplan;
	struct dp_patch *plan;		/* dp_plan_sites of the points */
	/* DP_CLIENT_KIND_SDT: the probe's sites (points[i] is sdt.sites[i]),
	 * their arguments, the fields they record. */
	struct dp_sdt_event sdt;
	/* Its shares of patches planned together with other events' points
	 * (combine.c): kept until the event is freed, as sites point to them. */
	struct dpd_share *shares;
	char note[DP_CLIENT_MSG_MAX / 2];	/* from the resolution, said at ENABLE */
	/* The return events' typed ret (dpd_resolve_ret), found once: 0 not
	 * yet, 1 ret_ctx, -1 none (retval). */
	int8_t ret_state;
	struct dp_ctx ret_ctx;

	/* lock.c: the request that holds it, pins, and whether it left the
	 * list (then freed by its last unpin, when doomed). */
	pthread_t holder;
	unsigned hold_depth;
	uint32_t pins;
	bool unlinked, doomed;
	/* Bumped when its contexts change (a new field layout): an install
	 * that only pins it sees whether it made its probes with the old one
	 * (dpd_install_pinned). */
	uint32_t layout;
};

/* An event's part of a patch planned for several events: the patch's
 * window, its hooks for this event's points only (point_ids into its
 * points). */
struct dpd_share {
	struct dpd_share *next;
	struct dp_patch pl;
};

extern struct dpd_event *dpd_events;

/* lock.c: holds and pins (with the state lock).  dpd_events_hold takes them
 * all or waits: 0, or -ENOENT when one was unlinked meanwhile (nothing
 * held). */
int dpd_event_hold(struct dpd_event *ev);
int dpd_events_hold(struct dpd_event *const *evs, size_t n);
void dpd_event_unhold(struct dpd_event *ev);
/* A new event, held by its creator before it is listed. */
void dpd_event_hold_new(struct dpd_event *ev);
void dpd_event_pin(struct dpd_event *ev);
void dpd_event_unpin(struct dpd_event *ev);
/* Frees an unlinked event now, or at its last unpin. */
void dpd_event_drop(struct dpd_event *ev);

struct dpd_event *dpd_event_find(const char *session, const char *channel, const char *event);
/* The lttng name a point records. */
const char *dpd_event_point_name(const struct dpd_event *ev, const struct dpd_point *pt);
/* ev's share pl (interned: the same one for the same content), or NULL
 * (-ENOMEM). */
const struct dp_patch *dpd_event_share(struct dpd_event *ev, const struct dp_patch *pl);
/*
 * Whether an event given by pid reaches the process pid: one of its pids, or
 * a descendant of one (what they fork inherits their patches; what they
 * execute with the agent following them says HELLO and gets them at once).
 */
bool dpd_event_reaches(const struct dpd_event *ev, pid_t pid);
/* Frees an event unlinked from the list. */
void dpd_event_free(struct dpd_event *ev);
void dpd_event_unlink(struct dpd_event *ev);
/* The event's lttng names from its name as typed and its kind.  0 or -errno
 * with a message. */
int dpd_event_names(struct dpd_event *ev, struct dp_err *msg);
/* Checks one context spec against the event's object and every point (a
 * var: in scope and available at each).  0 or -errno with a message. */
int dpd_event_check_ctx(const struct dpd_event *ev, const char *spec, struct dp_err *msg);
/* Resolves the event's spec: object, points, contexts, plan.  0 or -errno
 * with a message. */
int dpd_event_resolve(struct dpd_event *ev, struct dp_err *msg);
/* Writes every event to the state file (a restarted daemon reads it back). */
void dpd_state_save(void);
/* Reads the state file at start.  Events whose object is gone are dropped. */
void dpd_state_load(void);

/* ---- state.c: processes and their patches ---- */

/* A probe defined in a process's agent. */
struct dpd_probe {
	uint32_t id;
	uint64_t site;
	uint32_t flags;
	char event[DP_CLIENT_EVENT_MAX];
	char *sig;				/* its contexts, canonical, to reuse it
						   (NULL when recovered: never reused) */
	uint64_t handle;			/* the agent's probe (0 when recovered) */
	uint32_t prev;				/* index + 1 of the previous probe defined
						   at the same site (probe_ix), 0: none */
};

/* Code memory the agent mapped (ALLOC_CODE), trampolines carved from it. */
struct dpd_code_block {
	uint64_t start;
	uint32_t size, used;			/* bytes */
};

/* An event whose probes a patch serves, and its plan entry for that window. */
struct dpd_owner {
	struct dpd_event *ev;
	const struct dp_patch *pl;	/* in ev->plan */
	uint64_t bias;			/* of ev's object in the process */
};

/* Events sharing one patch: each gives the hooks of its own probes. */
#define DPD_SITE_MAX_OWNERS DP_APP_MAX_PATCH_PROBES

/*
 * What a patch planned with DP_PLAN_REDIRECT (patch/plan.h) writes besides
 * its window and hop: the displacements of the branches it leads into its
 * trampoline (each write the whole branch, its bytes before the
 * displacement unchanged), then the hop their rel8s go through.  A jump
 * whose window holds such targets (a led window) writes them and its
 * window; a redirect (DP_APP_METHOD_REDIRECT) writes them only.  Every
 * write is part of the patch: checked against the file before, claimed,
 * restored, and compared after.  Written in this order, after the
 * trampoline and before the window; restored in the reverse order
 * (write.c).  A plan of the daemon's (DP_PLAN_ALONE) never leads a branch
 * through another patch, so each such patch stands alone.
 */
struct dpd_led {
	uint8_t nwrites;
	struct dp_app_write w[DP_APP_MAX_WRITES];
	uint8_t disp_len[DP_APP_MAX_WRITES];	/* BRANCH: 1 or 4; 0 when recovered */
	uint8_t to[DP_APP_MAX_WRITES];		/* the displaced instruction it leads to
						   (0: the trampoline's entry) */
	uint8_t now[DP_APP_MAX_WRITES][DP_APP_MAX_WRITE_LEN];	/* what the patch writes
								   there (stage.c) */
	uint8_t want;		/* the writes its plan has (fewer: one could not be
				   recorded, the patch is refused) */
	bool recovered;		/* from an agent's LIST_WRITES: `now` unknown */
	bool partial;		/* recovered with some of its bytes written, others
				   not (a daemon killed between them): only restored */
};

/*
 * A patch this daemon (or a previous one) wrote in a process, or a
 * trampoline kept for reuse: one record per trampoline, at most one
 * installed per site.  Events whose windows are the same (site, length,
 * method, hop) share the installed patch; its trampoline calls the probes
 * of them all.
 */
struct dpd_site {
	struct dp_app_patch patch;	/* as noted to the agent */
	uint32_t nowners;		/* 0: recovered, no event claims it */
	struct dpd_owner owners[DPD_SITE_MAX_OWNERS];
	char event[DP_CLIENT_EVENT_MAX];	/* the lttng name of its first probe */
	uint64_t entry;			/* trampoline entry (jump) */
	uint8_t ninsns;			/* 0: recovered, the trampoline's layout unknown */
	uint8_t off[DP_WINDOW_MAX_INSNS];	/* the window's instructions */
	uint64_t insn_at[DP_WINDOW_MAX_INSNS];
	bool installed;			/* false: replaced or removed, trampoline kept */
	uint32_t led;			/* 1 + the index of its dpd_led in the
					   process's leds; 0: none */
};

/* An SDT event whose semaphores a process holds raised (sem.c), at the
 * object's load bias then. */
struct dpd_sem_hold {
	const struct dpd_event *ev;
	uint64_t bias;
};

struct dpd_proc {
	struct dpd_proc *next;
	pid_t pid;
	uid_t uid;
	gid_t gid;			/* its agent's, as uid (SO_PEERCRED) */
	int fd;				/* agent connection, -1 when none */
	uint32_t seq;
	uint64_t probe_hit;
	uint8_t minor;			/* the agent's protocol minor */
	bool go_pending;		/* HELLO seen, pending installs and GO to do */
	uint64_t mapped;		/* the cookie of a MAPPED to answer after the
					   pending installs (0: none) */
	uint32_t mapped_seq;		/* ... and its seq */
	bool recovered;			/* its HELLO reported patches */
	bool pending_queued;		/* serve.c: a job runs its pending installs */
	int64_t partial_since;		/* half a frame waits on fd since then */
	/* The program it ran at HELLO (dpd_image_id): another one at a write
	 * means an exec replaced everything recorded here. */
	bool image_known;
	uint8_t image[16];
	uint32_t next_id;
	uint32_t nprobes;
	struct dpd_probe *probes;
	size_t probes_cap;
	struct dp_u64map probe_ix;	/* site -> index of the latest probe defined
					   there (stage.c; recovered ones are not) */
	struct dp_u64map id_ix;		/* id -> index + 1 (dpd_proc_probe) of the
					   first id_done probes */
	uint32_t id_done;
	uint32_t nsites;
	struct dpd_site *sites;
	size_t sites_cap;
	uint32_t ncode;			/* code blocks (stage.c) */
	struct dpd_code_block *code;
	uint64_t tramp_bytes;		/* bytes of trampolines written in them */
	uint32_t nleds;			/* the sites' dpd_leds (never dropped while
					   the record lives) */
	struct dpd_led *leds;
	size_t leds_cap;
	uint32_t nholds;
	struct dpd_sem_hold *holds;
	/* follow.c: the FOLLOW flags its agent has from us, when known
	 * (not since its last HELLO). */
	bool follow_known;
	uint32_t follow;
};

extern struct dpd_proc *dpd_procs;

struct dpd_proc *dpd_proc_find(pid_t pid);
/* A new process record (no agent connection yet), or NULL. */
struct dpd_proc *dpd_proc_add(pid_t pid);
/* Forgets a process (its agent closed, or it exited). */
void dpd_proc_forget(struct dpd_proc *p);
/* Room for `probes` more probes and `sites` more sites in p: 0 or -ENOMEM. */
int dpd_proc_reserve(struct dpd_proc *p, uint32_t probes, uint32_t sites);
/* The probe of p with that id, or NULL (through id_ix, brought up to date
 * with the probes appended since). */
const struct dpd_probe *dpd_proc_probe(struct dpd_proc *p, uint32_t id);
/* Probes were taken off the end of p->probes: id_ix is rebuilt at the next
 * lookup. */
void dpd_proc_probes_cut(struct dpd_proc *p);
/* Whether ev is among the owners of s. */
bool dpd_site_owned(const struct dpd_site *s, const struct dpd_event *ev);
/* Takes ev out of the owners of s (its probes stay until s is rebuilt). */
void dpd_site_disown(struct dpd_site *s, const struct dpd_event *ev);
/* ev no longer named by p's sites and semaphore holds (p held). */
void dpd_proc_disown(struct dpd_proc *p, const struct dpd_event *ev);
/* Sites of an event in a process (ev NULL: every installed site). */
uint32_t dpd_proc_count_sites(const struct dpd_proc *p, const struct dpd_event *ev,
			      uint32_t *njump, uint32_t *nint3);

/* The window of plan entry pl at load bias `bias`, as the agent records it;
 * its led writes (none for most) into *led when led is not NULL. */
void dpd_patch_window(const struct dp_patch *pl, uint64_t bias, struct dp_app_patch *ap);
void dpd_patch_led(const struct dp_patch *pl, struct dp_object *obj, uint64_t bias,
		   struct dpd_led *led);
/* The led of site s in p, or NULL. */
const struct dpd_led *dpd_site_led(const struct dpd_proc *p, const struct dpd_site *s);
/* Records led for s in p (a copy): 0 or -ENOMEM.  A led with no write
 * leaves s without one. */
int dpd_site_set_led(struct dpd_proc *p, struct dpd_site *s, const struct dpd_led *led);
/* Whether two patches overwrite the same bytes the same way (their leds,
 * NULL for none, too): then they can be one patch serving the probes of
 * both. */
bool dpd_same_window(const struct dp_app_patch *a, const struct dpd_led *la,
		     const struct dp_app_patch *b, const struct dpd_led *lb);
/* Whether two patches write some byte in common, hops and leds included (a
 * redirect's window counts: its code is displaced). */
bool dpd_patches_meet(const struct dp_app_patch *a, const struct dpd_led *la,
		      const struct dp_app_patch *b, const struct dpd_led *lb);
/* How far from its site a patch writes at most (its window, and its hop
 * within a rel8's reach of the site's first 2 bytes): patches whose sites
 * are further apart than twice this never meet. */
#define DPD_PATCH_REACH 256
/*
 * p's site records sorted by site, for the lookups of a request that meets
 * tens of thousands of installed patches: valid until p->sites changes.
 * dpd_site_ix_build: 0 or -ENOMEM.  dpd_site_ix_range: the records whose
 * site lies in [lo, hi] are p->sites[ix->idx[i]] for i in [*from, *to).
 */
struct dpd_site_ix {
	uint32_t *idx;
	size_t n;
	uint32_t *leds;			/* the installed records with a led */
	size_t nleds;
};
int dpd_site_ix_build(const struct dpd_proc *p, struct dpd_site_ix *ix);
void dpd_site_ix_free(struct dpd_site_ix *ix);
void dpd_site_ix_range(const struct dpd_proc *p, const struct dpd_site_ix *ix, uint64_t lo,
		       uint64_t hi, size_t *from, size_t *to);
/*
 * An installed site of p that the patch ap (with led, or NULL) meets
 * (dpd_patches_meet): with the same window when `same`, else with
 * another; NULL when none.  Its index in *at.  The records near ap's
 * window and each of its writes are looked at, and every one with a led.
 */
const struct dpd_site *dpd_site_meeting(const struct dpd_proc *p, const struct dpd_site_ix *ix,
					const struct dp_app_patch *ap, const struct dpd_led *led,
					bool same, uint32_t *at);
/* ev's plan entry whose window, at load bias `bias`, is ap's (with led),
 * or NULL. */
const struct dp_patch *dpd_event_window(const struct dpd_event *ev, uint64_t bias,
					const struct dp_app_patch *ap, const struct dpd_led *led);

/* ---- claims.c ---- */

struct dp_maps;

/*
 * Checks that the patch ap, in pid whose mappings are maps, may be trusted
 * and restored: its window and its hop lie in one executable mapping of a
 * file each, its original bytes are that file's (unless orig_known: bytes
 * the daemon read itself), and the code holds either a patch of its kind
 * (a jump into executable memory, an int3; int3s or original bytes after
 * it) or its original bytes.  1: a patch is there; 0: the original bytes
 * are; -errno with msg saying what is wrong (nothing is to be written).
 */
int dpd_claim_check(pid_t pid, const struct dp_maps *maps, const struct dp_app_patch *ap,
		    bool orig_known, struct dp_err *msg);
/*
 * The same for a patch with a led (its window, a redirect's unwritten, and
 * every write): each write lies in an executable mapping of a file, its
 * original bytes are the file's (unless orig_known), and it holds them or
 * a patch of its kind (a branch whose displacement alone changed, a jmp
 * rel32 hop).  1: every part holds the patch; 0: every part its original
 * bytes; 2: some the one, some the other; -errno with msg.
 */
int dpd_claim_check_led(pid_t pid, const struct dp_maps *maps, const struct dp_app_patch *ap,
			const struct dpd_led *led, bool orig_known, struct dp_err *msg);

/* A block of a file read once, for the reads that fall in it. */
struct dpd_claim_block {
	uint8_t *buf;			/* DPD_CLAIM_BLOCK bytes, NULL until used */
	uint64_t at;			/* its offset in the file */
	size_t len;			/* bytes read there (0: none) */
};

#define DPD_CLAIM_BLOCK (64u << 10)

/*
 * The reads of a series of checks in one process, during which nothing
 * writes its code (a HELLO's, under the state lock): the file mapping read
 * last kept open, it and /proc/PID/mem read by blocks of 64 KiB.  The
 * checks of a HELLO reporting tens of thousands of patches read a few
 * blocks, not two files for each.
 */
struct dpd_claim_files {
	pid_t pid;
	int fd;				/* -1: none open */
	uint64_t start, end, inode;
	int mem;			/* /proc/PID/mem, -1 until read */
	struct dpd_claim_block fblock, mblock;
	bool blocks;			/* read by blocks (a series of checks;
					   one check reads only its bytes) */
	const struct dp_maps *maps;	/* the process's, to keep the blocks of
					   /proc/PID/mem within one mapping (NULL:
					   no blocks there) */
};

void dpd_claim_files_init(struct dpd_claim_files *f, pid_t pid, bool blocks);
void dpd_claim_files_release(struct dpd_claim_files *f);
/* dp_proc_mem_read through f's /proc/PID/mem, opened at the first read (by
 * blocks when f->maps is set). */
int dpd_claim_files_read(struct dpd_claim_files *f, uint64_t addr, void *buf, size_t len);
/* dpd_claim_check in f's process, its file kept open in f. */
int dpd_claim_check_files(struct dpd_claim_files *f, const struct dp_maps *maps,
			  const struct dp_app_patch *ap, bool orig_known, struct dp_err *msg);

/* The identity of the program pid runs now: AT_RANDOM's 16 bytes, drawn
 * afresh by every execve.  0 or -errno. */
#define DPD_IMAGE_ID_LEN 16
int dpd_image_id(pid_t pid, uint8_t id[DPD_IMAGE_ID_LEN]);

/* ---- perm.c ---- */

/*
 * Whether a peer of uid and gid (SO_PEERCRED) could trace pid itself now,
 * by the kernel's rules (its real, effective and saved ids all the peer's;
 * unless ids_only, no capabilities and dumpable): 0 (always for root), or
 * -errno with the rule that says no.
 */
int dpd_perm_peer(pid_t pid, uid_t uid, gid_t gid, bool ids_only, struct dp_err *msg);

/* ---- agents.c ---- */

extern int dpd_app_listen_fd;

/* An agent's first frame on a new connection fd (its peer pid and uid):
 * HELLO served (HELLO_REPLY sent, the process's record built from what it
 * reports, its pending installs left to a job).  True when fd became the
 * process's agent connection; false: the caller closes it (also when the
 * process no longer runs as the peer that connected: dpd_perm_peer).
 * Called without the state lock: the peer is checked and the frame decoded
 * before it is taken. */
bool dpd_agent_hello(int fd, pid_t pid, uid_t uid, gid_t gid, const uint8_t *frame,
		     size_t len);
/* With pid held and lent (install.c): waits until pid's agent said HELLO.
 * The process, or NULL (timeout, or the process exited). */
struct dpd_proc *dpd_agent_wait(pid_t pid, int timeout_ms);
/* A request to a process's agent: 0, or -errno with a message; the
 * connection is dropped (and the process forgotten) when it fails. */
int dpd_agent_call(struct dpd_proc *p, struct dp_app_msg *req, struct dp_app_msg *rep,
		   struct dp_err *msg);

/* ---- follow.c: follow mode ---- */

/* Tells each agent whose follow mode changed (an event with FOLLOW_EXEC
 * enabled, disabled, installed, removed, its flags set): with the state
 * lock, holding no pid; holds each process told in turn. */
void dpd_follow_sync(void);
/* The same for one process its caller holds (after a HELLO, before GO). */
void dpd_follow_sync_held(struct dpd_proc *p);
/* An event's flags were set (a request, the state file): follow mode may
 * be asked from now on. */
void dpd_follow_flags_set(uint32_t flags);
/* A HELLO reporting npatches patches: what its agent's mode is, when it can
 * be known without asking (p->follow_known). */
void dpd_follow_hello(struct dpd_proc *p, uint32_t npatches);

/* NOTE_INSTALLED and NOTE_REMOVED: 0 or -errno with a message. */
int dpd_agent_note(struct dpd_proc *p, const struct dp_app_patch *ap, struct dp_err *msg);
int dpd_agent_note_removed(struct dpd_proc *p, uint64_t site, struct dp_err *msg);
/* Data on pid's agent connection fd outside a call (a job; it holds pid
 * meanwhile): it closed, spoke out of turn, or said MAPPED (then the
 * installs pending for it are to do, and the reply: p->mapped).  Only whole
 * frames are read: true when half of one waits (the connection is closed
 * when it stays half for long). */
bool dpd_agent_readable(pid_t pid, int fd);
/* The process's agent connection is gone (closed here). */
void dpd_agent_close(struct dpd_proc *p);
/* Answers the MAPPED of that cookie and seq (its installs done); p->mapped
 * is cleared unless a newer one came.  0 or -errno. */
int dpd_agent_mapped_reply(struct dpd_proc *p, uint64_t cookie, uint32_t seq);
/* Checks what a recovered agent reports against the process's code (a
 * patch whose site holds its original bytes is forgotten, and the agent
 * told). */
void dpd_agent_reconcile(struct dpd_proc *p);
/* Forgets the processes without an agent connection that exited. */
void dpd_procs_reap(void);

/* ---- stage.c: steps 3 to 5 of a batch, shared by install.c and remove.c ---- */

/* One patch to write: a new one, or an installed one rebuilt for another
 * set of owners. */
/*
 * A thread of pid that blocks SIGTRAP now (its tid, its name in comm), or 0:
 * an int3 it hit would kill the process, so no int3 may be placed there.
 */
pid_t dpd_sigtrap_blocker(pid_t pid, char *comm, size_t len);

struct dpd_work {
	struct dpd_site rec;		/* what the process will hold, owners included */
	/* Each owner's report when it joins now; NULL for one that owned the
	 * patch already. */
	struct dp_client_proc *rps[DPD_SITE_MAX_OWNERS];
	bool replaces;			/* rec replaces the installed p->sites[old] */
	uint32_t old;
	uint8_t *code;			/* a new trampoline to write, or NULL */
	bool fail;			/* dropped: the joining owners' reports say why */
	bool regroup;			/* a new window over bytes of patches it replaces
					   (combine.c): those bytes are not checked */
	bool noted;			/* noted to the agent already */
	struct dpd_led led;		/* its led writes (none for most) */
	/* Its hooks (stage.c): the probes (indexes in p->probes) and where
	 * each runs. */
	uint32_t nhooks;
	uint32_t hook_probe[DP_APP_MAX_PATCH_PROBES];
	uint64_t hook_addr[DP_APP_MAX_PATCH_PROBES];
};

/* Reports every point of an owner's patch as refused, with a reason or a
 * text; or as installed. */
void dpd_report_refused(const struct dpd_owner *o, struct dp_client_proc *rp,
			enum dp_reason reason, const char *text);
void dpd_report_installed(const struct dpd_owner *o, struct dp_client_proc *rp);
/* Drops w, refusing the owners that join now with a reason or a text; the
 * patch in place, if any, stays as it is. */
void dpd_work_fail(pid_t pid, struct dpd_work *w, enum dp_reason reason, const char *text);
/* Makes w the rebuilding of the patch installed at p->sites[i], for its
 * owners so far. */
void dpd_work_rebuild(struct dpd_work *w, const struct dpd_proc *p, uint32_t i);
/*
 * Steps 3 to 5 for every work: probes, trampolines built and written,
 * notes.  0, or -errno with msg when the agent failed us: then every note
 * is taken back and every work dropped.  A patch that cannot be made alone
 * is dropped alone (w->fail, its reports say why).
 */
int dpd_stage(struct dpd_proc *p, struct dpd_work *ws, size_t n, struct dp_err *msg);
/* Notes site s of p to the agent again: its patch (NOTE_INSTALLED, but for
 * a redirect), then its led (NOTE_WRITES); errors ignored. */
void dpd_site_renote(struct dpd_proc *p, const struct dpd_site *s);
/* Takes back w's note: the agent's record of the site is again what the
 * code holds (the patch w would have replaced, or none). */
void dpd_work_unnote(struct dpd_proc *p, struct dpd_work *w);
/* The same for every work noted (only the failed ones, failed_only), the
 * new sites forgotten in batches (NOTE_REMOVED_MANY). */
void dpd_works_unnote(struct dpd_proc *p, struct dpd_work *ws, size_t n, bool failed_only);
/* NOTE_REMOVED of each site, in batches when the agent takes them: 0, or
 * the first error (with msg). */
int dpd_notes_removed(struct dpd_proc *p, const uint64_t *sites, size_t n, struct dp_err *msg);
/* Trampoline memory in p: bytes of trampolines written, bytes of code
 * blocks mapped for them. */
void dpd_code_usage(const struct dpd_proc *p, uint64_t *used, uint64_t *mapped);
/* Records a written patch in p (-ENOMEM); the patch it replaced is kept, not
 * installed. */
int dpd_work_record(struct dpd_proc *p, const struct dpd_work *w);

/* ---- write.c: step 6 ---- */

/*
 * One stop of p's threads restores the sites `gone` (indexes in p->sites),
 * marking them not installed, then writes the works' patches (threads in
 * bytes that change moved).  0, or -errno with msg when the threads could
 * not be held (every work dropped) or let go, or, `all` set, when anything
 * failed: then the process holds what it held before the stop.
 */
int dpd_write_batch(struct dpd_proc *p, struct dpd_work *ws, size_t n, const uint32_t *gone,
		    size_t ngone, bool all, struct dp_err *msg);

/* ---- combine.c ---- */

/*
 * Installs evs (all of one object, at load bias `bias` in p; evs[i]
 * reported in rps[i]) together with the installed patches their windows
 * meet without being the same: the points of every event concerned planned
 * as one batch, the patches of that plan put in place of the installed ones
 * in one stop.  All or nothing: 0, or -errno with msg and the process as it
 * was.
 */
int dpd_combine_install(struct dpd_proc *p, struct dpd_event *const *evs, size_t nev,
			uint64_t bias, struct dp_client_proc *const *rps, struct dp_err *msg);
/* Takes ev out of its patches in p, the points of the other events there
 * planned again without it, in one stop.  All or nothing, as above. */
int dpd_combine_remove(struct dpd_proc *p, const struct dpd_event *ev, struct dp_err *msg);
/* Whether a patch ev owns in p was planned together with other events'
 * points (an owner holds a share, not its own plan's entry). */
bool dpd_combined(const struct dpd_proc *p, const struct dpd_event *ev);

/* ---- install.c ---- */

/*
 * Installs ev's plan in pid (injecting the agent when needed), filling rp's
 * sites.  A window another event's installed patch already has (the same
 * bytes, placed the same way) is shared: that patch is rebuilt with the
 * probes of both; a window that only overlaps one (or one of another event
 * of the request) has the points of them all planned together (combine.c).  0 or -errno
 * with rp->message.  Nothing stays half-done: a failure leaves the sites
 * installed before it, and rp says which.
 */
int dpd_install(struct dpd_event *ev, pid_t pid, struct dp_client_proc *rp);
/*
 * dpd_install for a caller that pins ev but does not hold it (the installs
 * a process's start, dlopen or exec asks for): an ADD_CONTEXT may give ev a
 * new field layout while it runs, after that request's removal passed this
 * process by; the probes made with the old layout are then taken out and
 * put in again (ev->layout), three times at most.
 */
int dpd_install_pinned(struct dpd_event *ev, pid_t pid, struct dp_client_proc *rp);
/*
 * The same for several events of one object at once (evs[i] reported in
 * rps[i]): every probe defined and trampoline built first, then one stop of
 * pid's threads writes the sites of them all.  A failure fails them all;
 * every rps[i] has the status and the message.
 */
int dpd_install_many(struct dpd_event *const *evs, size_t nev, pid_t pid,
		     struct dp_client_proc *const *rps);
/* For a process whose HELLO (or MAPPED: a dlopen) is waiting (a job, which
 * holds it meanwhile): the patches its agent reported that no event claims
 * restored (after HELLO), then what is pending installed, then GO (or
 * MAPPED's reply). */
void dpd_install_pending(pid_t pid);

/* ---- execs.c ---- */

/* The process-events connector (-1 unless --attach-exec). */
extern int dpd_execs_fd;
/* Opens it: 0, or -errno with a message (-EPERM: not root). */
int dpd_execs_open(struct dp_err *err);
/* Reads the exec notices queued, each process's pid to seen() (serve.c
 * makes it a job). */
void dpd_execs_readable(void (*seen)(pid_t pid));
/* A process that executed a program: probed if an event wants it (a job). */
void dpd_exec_seen(pid_t pid);
/*
 * At start, before serving (run directory ours, pid file held): every entry
 * point a killed daemon left spinning (execs.c's records) put back, when
 * its process is still the one recorded, still runs the program recorded
 * and still spins there; each record dropped.
 */
void dpd_execs_recover(void);

/* ---- remove.c ---- */

/*
 * Takes ev out of its installed sites in p, in one stop of p's threads: a
 * site ev shared is rebuilt for the other events and retargeted, a site ev
 * held alone gets its original bytes back (ev NULL: every site restored).
 * 0 or -errno (rp says why; a site that could not change stays as it was).
 */
int dpd_remove(struct dpd_event *ev, struct dpd_proc *p, struct dp_client_proc *rp);
/* Removes ev everywhere, adding a report entry per process when rep is set.
 * Disable ev first (ev->enabled false): then whoever is installing it
 * somewhere without holding it calls dpd_remove_if_gone after. */
void dpd_remove_everywhere(struct dpd_event *ev, struct dp_client_report *rep);
/* Holding pid, after installing an event it does not hold: takes ev out of
 * pid again when it was disabled (or unlinked) meanwhile. */
void dpd_remove_if_gone(struct dpd_event *ev, pid_t pid);

/* ---- sem.c ---- */

/* Whether every semaphore of ev lies in a writable mapping of pid (the
 * object at load bias `bias`): 0, or -errno with the reason. */
int dpd_sem_check(const struct dpd_event *ev, pid_t pid, uint64_t bias, struct dp_err *msg);
/* p holds ev's semaphores from now on: raised by one (read-modify-write),
 * or, `adopt`, raised already (a forked child, a recovered agent).  Nothing
 * for an event without semaphores, or one p holds already. */
void dpd_sem_hold(struct dpd_proc *p, const struct dpd_event *ev, uint64_t bias, bool adopt);
/* Lowers the semaphores of every event p holds that has no site left in p. */
void dpd_sem_settle(struct dpd_proc *p);
/* Adopts the semaphores of every SDT event with sites in p (after HELLO). */
void dpd_sem_adopt(struct dpd_proc *p);

/* ---- mappers.c ---- */

/* Every process of uid (root: any) that maps ev's object now. */
int dpd_find_mappers(struct dpd_event *ev, pid_t **pids, size_t *n);

/* ---- clients.c ---- */

/* A client connection as its requests see it. */
struct dpd_client {
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
};
/*
 * Serves one request frame (frame, len: whole) of c, the reply in rep: 0
 * (send it), 1 (send it, then close), -1 (close without a reply).  The
 * state lock is held, but for a PING (no state read).
 */
int dpd_client_request(const struct dpd_client *c, const uint8_t *frame, size_t len,
		       struct dp_client_msg *rep);
/* Sends rep (released): false when the connection is to close. */
bool dpd_client_reply(const struct dpd_client *c, struct dp_client_msg *rep);

/* Drops an event everywhere (session gone, SESSION_DESTROYED). */
void dpd_session_drop(const char *session, uid_t uid, struct dp_client_report *rep);

/* ---- serve.c ---- */

/* --max-user-connections: open connections per user (not the daemon's). */
extern int dpd_max_user_conns;
/* The loop, until SIGTERM/SIGINT (sig_fd); returns once every job is done
 * and the workers are gone. */
void dpd_serve(int sig_fd, int client_fd);

/* ---- sessions.c ---- */

/* Checks that the sessions of our events still exist. */
void dpd_sessions_poll(void);

#endif /* DPD_DAEMON_H */
