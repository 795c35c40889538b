/*
 * The client protocol: the lttng CLI (or any client) <-> lttng-dynprobed,
 * over the daemon's client socket (a Unix stream socket;
 * dp_client_socket_path).  Frames as in frame.h, with this protocol's magic.
 *
 * The client connects and sends requests; the daemon answers each with the
 * reply type (request | 0x8000) and the request's seq, in order.  A client
 * may send several requests on one connection, one at a time.  A request the
 * daemon does not know gets UNSUPPORTED and the connection goes on.  There is
 * no handshake: every frame carries the version, and a daemon of another
 * major answers REFUSE (same layout in every version) and closes.
 *
 *   type    message            payload
 *   0x0001  ENABLE             session str, channel str, event str, kind u8,
 *                              location str, path str, npids u32, pid u32[],
 *                              nctx u32, ctx str[]
 *   0x8001    reply            report
 *   0x0002  DISABLE            session str, channel str, event str
 *   0x8002    reply            report
 *   0x0003  ADD_CONTEXT        session str, channel str, event str ("": every
 *                              dynamic event of the channel), nctx u32,
 *                              ctx str[]
 *   0x8003    reply            report
 *   0x0004  LIST               session str ("": every session)
 *   0x8004    reply            status i32, message str, nevents u32,
 *                              event[nevents]
 *   0x0005  SITES              path str, function str
 *   0x8005    reply            status i32, message str, function str,
 *                              start u64, size u64, ninsns u32, insn[ninsns]
 *   0x0006  SESSION_DESTROYED  session str
 *   0x8006    reply            report
 *   0x0007  PING               cookie u64
 *   0x8007    reply            cookie u64, daemon_pid u32, version str
 *   0x0008  ENABLE_MANY        session str, channel str, path str, npids u32,
 *                              pid u32[], nctx u32, ctx str[], nspecs u32,
 *                              spec[nspecs]   (since 1.1)
 *   0x8008    reply            nreports u32, report[nreports]
 *   0x0009  EVENT_FLAGS        session str, channel str, event str,
 *                              flags u32      (since 1.2)
 *   0x8009    reply            report
 *   0x000A  LIST_FLAGS         session str ("": every session)  (since 1.2)
 *   0x800A    reply            status i32, message str, nflags u32,
 *                              eflags[nflags]
 *   0xfffe  UNSUPPORTED        type u16 (the request's)
 *   0xffff  REFUSE             major u8, minor u8, reason str
 *
 *   spec   = event str, kind u8, location str
 *   report = status i32, message str, nevents u32, event_name str[nevents],
 *            nprocs u32, proc[nprocs]
 *   proc   = pid u32, status i32, message str, njump u32, nint3 u32,
 *            nrefused u32, nsites u32, site[nsites]
 *   site   = event str, addr u64, vaddr u64, method u8, reason str, text str
 *   event  = session str, channel str, event str, kind u8, location str,
 *            path str, enabled u8, npids u32, pid u32[], nctx u32, ctx str[],
 *            nnames u32, name str[], nprocs u32, proc[nprocs]
 *   eflags = session str, channel str, event str, flags u32
 *   insn   = offset u32, len u8, bytes u8[len], mnemonic str, method u8,
 *            reason str, text str
 *   str    = len u16, bytes (no NUL), len < the receiving array's size
 *
 * Versions: as in app.h (a minor version only adds message types; decoders
 * refuse trailing bytes).
 *
 * Statuses are 0 or -errno.  On failure `message` is one line for the user
 * that says what was wrong and what would be right, without "Error: " (the
 * CLI adds its own prefix); on success it may say something worth showing
 * ("no process maps PATH now: ...").  Per-process statuses and messages work
 * the same way.
 *
 * What the requests do:
 *
 *  ENABLE defines the dynamic event (session, channel, event) and installs
 *   its probes.  `event` is the name as the user typed it: "NAME" becomes
 *   "dynprobe:NAME", "PROVIDER:EVENT" is kept.  kind PROBE probes the
 *   location itself (one event); kind FUNCTION probes the function the
 *   location names, at its entry (event NAME_entry) and at every return site
 *   (event NAME_return, which records the return value as the field "ret");
 *   for a C name (or a C++ linkage name), every inlined copy of it too, found
 *   in the object's DWARF (kind FUNCTION_OUTLINE: the out-of-line body only;
 *   FUNCTION_INLINED: the copies only).  kind PROBE with a FILE:LINE
 *   location probes every address block of that source line.
 *   kind SDT probes every site of the statically defined probe (a
 *   .note.stapsdt entry) `location` names, PROVIDER:NAME, one event whose
 *   fields arg0..argN are the probe's arguments, typed from the sites'
 *   argument specs (spec/sdt.h), and holds the probe's semaphore raised in
 *   each process while the event is installed there.
 *   `location` is the text as typed: ADDR | SYMBOL | SYMBOL+OFFSET, numbers
 *   in octal (0NNN), decimal or hex (0xNNN); ADDR is a virtual address of
 *   the ELF file `path` (as nm prints it).  `path` is absolute.  `pids`
 *   lists the target processes; empty means every process of the client's
 *   user that maps `path` now, and every process of that user that starts
 *   later with the agent preloaded (lttng trace); for root too, whose
 *   reach into other users' processes is by pid only.  `ctx` are context
 *   specs as typed
 *   (regs, reg:NAME, TYPE:NAME:ADDR with ADDR a number, register based, or
 *   SYMBOL[+OFFSET] of `path`, string:NAME:ADDR[:MAX], backtrace[:DEPTH]);
 *   the daemon resolves symbols.  The reply's event names are the lttng
 *   event names to enable in the session (one, or _entry and _return), and
 *   per process the sites: by jump, by int3 (with the reason a jump did not
 *   fit), and refused (with the reason).
 *   Refused as a whole, with nothing left installed anywhere: a bad name,
 *   location, path or context; a symbol not found (with close names); an
 *   offset that is not an instruction boundary (with the neighbouring
 *   boundaries); an address that is not executable; a probe site refused
 *   (a function's entry refused; return sites refused alone are reported,
 *   not fatal); and, for an explicit pid: no such process, not the client's
 *   to trace, PATH not mapped there, the process exited during the
 *   operation.  The same (session, channel, event) enabled again with the
 *   same spec re-installs it where it was removed (after DISABLE); with a
 *   different spec: -EEXIST.
 *
 *  ENABLE_MANY is ENABLE for several events that share session, channel,
 *   path, pids and contexts; reports[i] answers specs[i] as ENABLE would.
 *   The daemon defines every probe and builds every trampoline first, then
 *   stops each process once to write the sites of all the events.  An event
 *   named twice in one request is refused (-EINVAL) after its first spec.
 *
 *  DISABLE removes the event's patches from every process (the original
 *   bytes come back; trampoline memory stays, as a thread may still run in
 *   it, and is reused when the event is enabled again).  The event and its
 *   spec are kept: ENABLE with the same spec re-installs.  -ENOENT for an
 *   unknown event.
 *
 *  ADD_CONTEXT appends contexts to one dynamic event, or to every dynamic
 *   event of the channel; a new field layout is a new event class in the
 *   agent, so the daemon reinstalls the event's probes (enabled ones).
 *   -ENOENT when no dynamic event matches, -EEXIST when a field name is
 *   already in use.
 *
 *  LIST describes the dynamic events of one session (or all), with their
 *   specs, whether they are enabled, their lttng event names and, per
 *   process, the count of sites installed by jump / int3 (no site list).
 *
 *  SITES is for `lttng list --sites`: every instruction of a function of
 *   `path` (a symbol name, or an address inside the function) with its
 *   offset from the function's start, its bytes, mnemonic, and how a probe
 *   there would be installed (method, reason name and text).  Needs no
 *   process; the CLI may also compute it alone with patch/plan.h.
 *
 *  EVENT_FLAGS sets the flags of a dynamic event (enum
 *   dp_client_event_flag; unknown bits refused as a bad value), in place
 *   of those it had; -ENOENT for an unknown event.  The CLI sends it after
 *   ENABLE (or ENABLE_MANY) for `lttng enable-event --follow-exec`.
 *   FOLLOW_EXEC: every agent of a process where the event is installed,
 *   while it is enabled, keeps itself in the environment of the images that
 *   process executes (the app protocol's FOLLOW, app.h): its children
 *   start with the agent preloaded, and, by pid, the event reaches them as
 *   the process's descendants.  Follow mode in a process stays on while
 *   any enabled event with FOLLOW_EXEC is installed there; DISABLE, a
 *   destroyed session or the flag cleared turns it off where no other
 *   such event remains.  Children already started keep their agent.
 *   A flag is not on ENABLE, whose layout a minor version may not change.
 *
 *  LIST_FLAGS lists the flags of the dynamic events of one session (or
 *   all) that have any, for `lttng save` and `--mi xml`; the events as LIST
 *   names them.
 *
 *  SESSION_DESTROYED: the CLI destroyed the session; the daemon removes its
 *   dynamic events (it also notices destroyed sessions itself, within about
 *   a second).  Not an error when the session had none.
 *
 * Access: the daemon reads the client's credentials (SO_PEERCRED); a client
 * may only target processes it could ptrace itself (same uid, root any), and
 * sees and changes only the dynamic events it created (root: all).
 */
#ifndef DP_PROTO_CLIENT_H
#define DP_PROTO_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/frame.h"
#include "proto/wire.h"

#define DP_CLIENT_MAGIC 0x4c435044u	/* "DPCL" in byte order */
#define DP_CLIENT_MAJOR 1
#define DP_CLIENT_MINOR 2		/* 1: ENABLE_MANY; 2: EVENT_FLAGS, LIST_FLAGS */

/* Bounds every receiver enforces.  String sizes include the NUL. */
#define DP_CLIENT_MAX_PAYLOAD (16u << 20)
#define DP_CLIENT_NAME_MAX 256		/* session and channel names */
#define DP_CLIENT_EVENT_MAX 128		/* event names ("provider:event") */
#define DP_CLIENT_LOCATION_MAX 512	/* locations and function names */
#define DP_CLIENT_PATH_MAX 4096
#define DP_CLIENT_CTX_MAX 256		/* one context spec */
#define DP_CLIENT_MAX_CTX 64		/* context specs of one request or event */
#define DP_CLIENT_MAX_PIDS 4096
#define DP_CLIENT_MAX_NAMES 2		/* lttng event names of one dynamic event */
#define DP_CLIENT_MAX_EVENTS 16384	/* events in a LIST reply */
#define DP_CLIENT_MAX_PROCS 65536	/* processes in a report or an event */
#define DP_CLIENT_MAX_SITES 131072	/* sites of one process in a report */
#define DP_CLIENT_MAX_SPECS 16384	/* events of one ENABLE_MANY */
#define DP_CLIENT_MAX_INSNS 262144	/* instructions in a SITES reply */
#define DP_CLIENT_MSG_MAX 1024		/* messages */
#define DP_CLIENT_REASON_MAX 64		/* reason names ("branch-target") */
#define DP_CLIENT_TEXT_MAX 256		/* reason texts, mnemonics */
#define DP_CLIENT_VERSION_MAX 32
#define DP_CLIENT_INSN_MAX 15		/* bytes of one instruction */

/*
 * Timeouts, in milliseconds: a message once it has started, and how long a
 * client should wait for a reply (installing may inject the agent into
 * several processes, each allowed 10 s).
 */
#define DP_CLIENT_TIMEOUT_MS 5000
#define DP_CLIENT_CALL_TIMEOUT_MS 120000

enum dp_client_type {
	DP_CLIENT_ENABLE = 0x0001,
	DP_CLIENT_DISABLE = 0x0002,
	DP_CLIENT_ADD_CONTEXT = 0x0003,
	DP_CLIENT_LIST = 0x0004,
	DP_CLIENT_SITES = 0x0005,
	DP_CLIENT_SESSION_DESTROYED = 0x0006,
	DP_CLIENT_PING = 0x0007,
	DP_CLIENT_ENABLE_MANY = 0x0008,
	DP_CLIENT_EVENT_FLAGS = 0x0009,		/* since 1.2 */
	DP_CLIENT_LIST_FLAGS = 0x000A,		/* since 1.2 */

	DP_CLIENT_ENABLE_REPLY = DP_CLIENT_ENABLE | DP_FRAME_REPLY,
	DP_CLIENT_DISABLE_REPLY = DP_CLIENT_DISABLE | DP_FRAME_REPLY,
	DP_CLIENT_ADD_CONTEXT_REPLY = DP_CLIENT_ADD_CONTEXT | DP_FRAME_REPLY,
	DP_CLIENT_LIST_REPLY = DP_CLIENT_LIST | DP_FRAME_REPLY,
	DP_CLIENT_SITES_REPLY = DP_CLIENT_SITES | DP_FRAME_REPLY,
	DP_CLIENT_SESSION_DESTROYED_REPLY = DP_CLIENT_SESSION_DESTROYED | DP_FRAME_REPLY,
	DP_CLIENT_PING_REPLY = DP_CLIENT_PING | DP_FRAME_REPLY,
	DP_CLIENT_ENABLE_MANY_REPLY = DP_CLIENT_ENABLE_MANY | DP_FRAME_REPLY,
	DP_CLIENT_EVENT_FLAGS_REPLY = DP_CLIENT_EVENT_FLAGS | DP_FRAME_REPLY,
	DP_CLIENT_LIST_FLAGS_REPLY = DP_CLIENT_LIST_FLAGS | DP_FRAME_REPLY,

	DP_CLIENT_UNSUPPORTED = DP_FRAME_UNSUPPORTED,
	DP_CLIENT_REFUSE = DP_FRAME_REFUSE,
};

/* The protocol's frames: magic, our version, the payload's maximum. */
extern const struct dp_frame_proto dp_client_proto;

/* The name of a message type ("ENABLE"), or NULL if unknown. */
const char *dp_client_type_name(uint16_t type);

/* What an ENABLE probes. */
enum dp_client_kind {
	DP_CLIENT_KIND_PROBE = 1,	/* the location: one event (a FILE:LINE: every
					   address block of the line) */
	DP_CLIENT_KIND_FUNCTION = 2,	/* the function's entry and returns: two events;
					   its out-of-line body and every inlined copy */
	DP_CLIENT_KIND_SDT = 3,		/* every site of a statically defined probe:
					   one event (an older daemon refuses the
					   kind as a bad value) */
	DP_CLIENT_KIND_FUNCTION_OUTLINE = 4,	/* as FUNCTION, the out-of-line body only */
	DP_CLIENT_KIND_FUNCTION_INLINED = 5,	/* as FUNCTION, the inlined copies only */
};

/* Whether a kind probes a function's entry and returns (two events). */
bool dp_client_kind_function(uint8_t kind);
/* Its name in saved sessions, --mi and listings: "probe", "function", "sdt",
 * "function-out-of-line", "function-inlined"; "?" for another value. */
const char *dp_client_kind_str(uint8_t kind);
/* The kind a name gives (as dp_client_kind_str), 0 when none. */
uint8_t dp_client_kind_parse(const char *name);

/* A dynamic event's flags (EVENT_FLAGS). */
enum dp_client_event_flag {
	DP_CLIENT_EVENT_FOLLOW_EXEC = 1u << 0,	/* follow the images its processes execute */
};
#define DP_CLIENT_EVENT_FLAGS_ALL DP_CLIENT_EVENT_FOLLOW_EXEC

/* How a site is (or would be) installed. */
enum dp_client_method {
	DP_CLIENT_METHOD_JUMP = 1,
	DP_CLIENT_METHOD_INT3 = 2,
	DP_CLIENT_METHOD_REFUSED = 3,
};

/* "jump", "int3", "refused" ("?" for another value). */
const char *dp_client_method_str(uint8_t method);

/* One probe site in one process. */
struct dp_client_site {
	char event[DP_CLIENT_EVENT_MAX];	/* the lttng event it records */
	uint64_t addr;				/* run-time address (0 when not resolved) */
	uint64_t vaddr;				/* address in the object file */
	uint8_t method;				/* enum dp_client_method */
	char reason[DP_CLIENT_REASON_MAX];	/* int3/refused: dp_reason_name; else "" */
	char text[DP_CLIENT_TEXT_MAX];		/* int3/refused: what the reason means */
};

/* What one request did in one process (a report), or what is installed
 * there (LIST: counts only, no sites). */
struct dp_client_proc {
	uint32_t pid;
	int32_t status;				/* 0 or -errno for this process */
	char message[DP_CLIENT_MSG_MAX];
	uint32_t njump, nint3, nrefused;
	uint32_t nsites;
	struct dp_client_site *sites;
};

/* The reply of ENABLE, DISABLE, ADD_CONTEXT and SESSION_DESTROYED. */
struct dp_client_report {
	int32_t status;
	char message[DP_CLIENT_MSG_MAX];
	uint32_t nevents;			/* lttng event names concerned */
	char (*events)[DP_CLIENT_EVENT_MAX];
	uint32_t nprocs;
	struct dp_client_proc *procs;
};

struct dp_client_enable {
	char session[DP_CLIENT_NAME_MAX];
	char channel[DP_CLIENT_NAME_MAX];
	char event[DP_CLIENT_EVENT_MAX];	/* as typed: "NAME" or "PROVIDER:EVENT" */
	uint8_t kind;				/* enum dp_client_kind */
	char location[DP_CLIENT_LOCATION_MAX];	/* as typed */
	char path[DP_CLIENT_PATH_MAX];		/* absolute */
	uint32_t npids;				/* 0: every process mapping path, and later ones */
	uint32_t *pids;
	uint32_t nctx;
	char (*ctx)[DP_CLIENT_CTX_MAX];		/* context specs as typed */
};

/* One event of an ENABLE_MANY: what differs from its neighbours. */
struct dp_client_spec {
	char event[DP_CLIENT_EVENT_MAX];	/* as typed */
	uint8_t kind;				/* enum dp_client_kind */
	char location[DP_CLIENT_LOCATION_MAX];	/* as typed */
};

/* Several ENABLEs sharing session, channel, path, pids and contexts, so
 * that a process is stopped once for all of them. */
struct dp_client_enable_many {
	char session[DP_CLIENT_NAME_MAX];
	char channel[DP_CLIENT_NAME_MAX];
	char path[DP_CLIENT_PATH_MAX];		/* absolute */
	uint32_t npids;				/* 0: every process mapping path */
	uint32_t *pids;
	uint32_t nctx;
	char (*ctx)[DP_CLIENT_CTX_MAX];
	uint32_t nspecs;
	struct dp_client_spec *specs;
};

/* ENABLE_MANY's reply: reports[i] is what ENABLE of specs[i] would say. */
struct dp_client_reports {
	uint32_t nreports;
	struct dp_client_report *reports;
};

/* DISABLE; SESSION_DESTROYED uses only session. */
struct dp_client_event_ref {
	char session[DP_CLIENT_NAME_MAX];
	char channel[DP_CLIENT_NAME_MAX];
	char event[DP_CLIENT_EVENT_MAX];
};

struct dp_client_add_context {
	char session[DP_CLIENT_NAME_MAX];
	char channel[DP_CLIENT_NAME_MAX];
	char event[DP_CLIENT_EVENT_MAX];	/* "": every dynamic event of the channel */
	uint32_t nctx;
	char (*ctx)[DP_CLIENT_CTX_MAX];
};

/* A dynamic event, as LIST describes it. */
struct dp_client_event {
	char session[DP_CLIENT_NAME_MAX];
	char channel[DP_CLIENT_NAME_MAX];
	char event[DP_CLIENT_EVENT_MAX];	/* as given to ENABLE */
	uint8_t kind;
	char location[DP_CLIENT_LOCATION_MAX];
	char path[DP_CLIENT_PATH_MAX];
	bool enabled;
	uint32_t npids;				/* as given to ENABLE (0: by path) */
	uint32_t *pids;
	uint32_t nctx;				/* every context, ENABLE's and ADD_CONTEXT's */
	char (*ctx)[DP_CLIENT_CTX_MAX];
	uint32_t nnames;			/* its lttng event names */
	char (*names)[DP_CLIENT_EVENT_MAX];
	uint32_t nprocs;			/* processes where it is installed */
	struct dp_client_proc *procs;		/* counts only (nsites 0) */
	/* Not in LIST's reply: LIST_FLAGS's, filled in by the CLI
	 * (dp_daemon_list) for save and --mi. */
	uint32_t flags;				/* enum dp_client_event_flag */
};

/* EVENT_FLAGS, and one event of LIST_FLAGS's reply. */
struct dp_client_event_flags {
	char session[DP_CLIENT_NAME_MAX];
	char channel[DP_CLIENT_NAME_MAX];
	char event[DP_CLIENT_EVENT_MAX];	/* as given to ENABLE */
	uint32_t flags;				/* enum dp_client_event_flag */
};

struct dp_client_flags_reply {
	int32_t status;
	char message[DP_CLIENT_MSG_MAX];
	uint32_t nflags;
	struct dp_client_event_flags *flags;
};

struct dp_client_list_reply {
	int32_t status;
	char message[DP_CLIENT_MSG_MAX];
	uint32_t nevents;
	struct dp_client_event *events;
};

struct dp_client_sites {
	char path[DP_CLIENT_PATH_MAX];
	char function[DP_CLIENT_LOCATION_MAX];	/* a symbol, or an address inside it */
};

struct dp_client_insn {
	uint32_t offset;			/* from the function's start */
	uint8_t len;
	uint8_t bytes[DP_CLIENT_INSN_MAX];
	char mnemonic[DP_CLIENT_TEXT_MAX];	/* "" when unknown */
	uint8_t method;				/* enum dp_client_method */
	char reason[DP_CLIENT_REASON_MAX];	/* as in dp_client_site */
	char text[DP_CLIENT_TEXT_MAX];
};

struct dp_client_sites_reply {
	int32_t status;
	char message[DP_CLIENT_MSG_MAX];
	char function[DP_CLIENT_LOCATION_MAX];	/* the function's name */
	uint64_t start, size;			/* its bounds, object addresses */
	uint32_t ninsns;
	struct dp_client_insn *insns;
};

struct dp_client_ping_reply {
	uint64_t cookie;
	uint32_t daemon_pid;
	char version[DP_CLIENT_VERSION_MAX];
};

struct dp_client_refuse {
	uint8_t major, minor;
	char reason[DP_CLIENT_MSG_MAX];
};

struct dp_client_msg {
	uint16_t type;				/* enum dp_client_type */
	uint32_t seq;
	uint8_t major, minor;			/* as received; encoding sends ours */
	union {
		struct dp_client_enable enable;
		struct dp_client_event_ref disable;
		struct dp_client_add_context add_context;
		char list[DP_CLIENT_NAME_MAX];		/* LIST: the session, or "" */
		struct dp_client_sites sites;
		char session_destroyed[DP_CLIENT_NAME_MAX];
		uint64_t ping;				/* PING: the cookie */
		struct dp_client_report report;		/* the five report replies */
		struct dp_client_enable_many enable_many;
		struct dp_client_reports reports;	/* ENABLE_MANY's reply */
		struct dp_client_event_flags event_flags;	/* EVENT_FLAGS */
		char list_flags[DP_CLIENT_NAME_MAX];	/* LIST_FLAGS: the session, or "" */
		struct dp_client_flags_reply flags_reply;	/* LIST_FLAGS's reply */
		struct dp_client_list_reply list_reply;
		struct dp_client_sites_reply sites_reply;
		struct dp_client_ping_reply ping_reply;
		uint16_t unsupported;
		struct dp_client_refuse refuse;
	};
};

/*
 * Frees what a message owns (decoded or built with the helpers below) and
 * zeroes it.  Messages built by hand with arrays the caller owns must not be
 * released.
 */
void dp_client_msg_release(struct dp_client_msg *m);

/* Reports and lists, for builders (the daemon): append an element, growing
 * the array.  The new element is zeroed.  NULL when out of memory. */
struct dp_client_proc *dp_client_report_add_proc(struct dp_client_report *r);
struct dp_client_site *dp_client_proc_add_site(struct dp_client_proc *p);
int dp_client_report_add_event(struct dp_client_report *r, const char *name);

/* As dp_app_encode, dp_app_decode and dp_app_decode_frame (app.h). */
int dp_client_encode(const struct dp_client_msg *m, struct dp_wbuf *w);
int dp_client_decode(const struct dp_frame_hdr *h, const uint8_t *payload,
		     struct dp_client_msg *m, enum dp_proto_err *why);
int dp_client_decode_frame(const uint8_t *buf, size_t len, struct dp_client_msg *m,
			   enum dp_proto_err *why);

/* As dp_app_send, dp_app_recv and dp_app_call (app.h). */
int dp_client_send(int fd, const struct dp_client_msg *m, int timeout_ms);
int dp_client_recv(int fd, struct dp_client_msg *m, int timeout_ms, enum dp_proto_err *why);
int dp_client_call(int fd, struct dp_client_msg *req, uint32_t *seq, struct dp_client_msg *reply,
		   int timeout_ms, enum dp_proto_err *why);

/*
 * Where the daemon lives, the same for the daemon and its clients:
 *   client socket  $LTTNG_DYNPROBE_CLIENT_SOCKET if set, else
 *                  /var/run/lttng/dynprobe-client.sock for root, else
 *                  $LTTNG_HOME/.lttng/dynprobe-client.sock (LTTNG_HOME
 *                  defaults to HOME)
 *   pid file       in the same directory as the client socket:
 *                  lttng-dynprobed.pid (the daemon's pid, one line)
 * (the app socket: dp_app_socket_path).  Environment variables are ignored
 * in secure-execution mode.  0, -ENOENT when no home is known,
 * -ENAMETOOLONG.
 */
int dp_client_socket_path(char *buf, size_t size);
int dp_client_pidfile_path(char *buf, size_t size);

/*
 * A connection to the daemon's client socket: the descriptor (close-on-exec)
 * or -errno (-ENOENT or -ECONNREFUSED: no daemon runs; the CLI then starts
 * `lttng-dynprobed --daemonize`, which exits 0 once the sockets accept
 * connections, or DP_DAEMON_EXIT_RUNNING with a message naming the running
 * daemon's pid when one of this user runs already: a client racing another
 * to start the daemon takes both as success, and connects again).  The
 * daemon's credentials are checked: it must be root or the caller's own
 * user (-EPERM otherwise).
 */
int dp_client_connect(void);

/* lttng-dynprobed's exit status when a daemon of the user runs already. */
#define DP_DAEMON_EXIT_RUNNING 3

#endif /* DP_PROTO_CLIENT_H */
