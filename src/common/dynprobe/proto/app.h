/*
 * The app protocol: lttng-dynprobed <-> the agent in each traced process,
 * over the daemon's app socket (a Unix stream socket; dp_app_socket_path).
 *
 * The agent connects and sends HELLO; the daemon answers HELLO_REPLY, or
 * REFUSE and closes.  From then on the daemon sends requests, one at a time,
 * and the agent answers each with the reply type (request | 0x8000) and the
 * request's seq.  A request the agent does not know gets UNSUPPORTED and the
 * connection goes on.
 *
 *   type    message          payload (see the structs below for bounds)
 *   0x0001  HELLO            major u8, minor u8, pid u32, probe_hit u64,
 *                            agent_version str, state
 *   0x8001  HELLO_REPLY      major u8, minor u8, daemon_pid u32
 *   0x0002  DEFINE_PROBE     id u32, site u64, flags u32, event str, nctx u32,
 *                            ctx[nctx]
 *   0x8002    reply          status i32, probe u64, error str
 *   0x0003  ALLOC_CODE       near u64, size u32
 *   0x8003    reply          status i32, addr u64, error str
 *   0x0004  NOTE_INSTALLED   patch
 *   0x8004    reply          status i32, error str
 *   0x0005  NOTE_REMOVED     site u64
 *   0x8005    reply          status i32, error str
 *   0x0006  LIST             (empty)
 *   0x8006    reply          state
 *   0x0007  PING             cookie u64
 *   0x8007    reply          cookie u64
 *   0x0008  GO               (empty)                          (minor 1)
 *   0x8008    reply          (empty)
 *   0x0009  DEFINE_PROBE_EXT as DEFINE_PROBE, each ctx a ctx_ext (minor 2)
 *   0x8009    reply          as DEFINE_PROBE's
 *   0x000A  MAPPED           cookie u64          (agent -> daemon; minor 2)
 *   0x800A    reply          cookie u64          (daemon -> agent)
 *   0x000B  DEFINE_PROBES    nclasses u32, class[nclasses], nprobes u32,
 *                            def[nprobes]                     (minor 3)
 *   0x800B    reply          status i32, error str, nhandles u32,
 *                            handle u64[nhandles]
 *   0x000C  NOTE_INSTALLED_MANY  npatches u32, patch[npatches] (minor 3)
 *   0x800C    reply          status i32, noted u64, error str
 *   0x000D  NOTE_REMOVED_MANY    nsites u32, site u64[nsites]  (minor 3)
 *   0x800D    reply          status i32, error str
 *   0x000E  FOLLOW           flags u32                        (minor 3)
 *   0x800E    reply          status i32, error str
 *   0x000F  NOTE_WRITES      nled u32, led[nled]              (minor 4)
 *   0x800F    reply          status i32, noted u64, error str
 *   0x0010  LIST_WRITES      (empty)                          (minor 4)
 *   0x8010    reply          nled u32, led[nled]
 *   0xfffe  UNSUPPORTED      type u16 (the request's)
 *   0xffff  REFUSE           major u8, minor u8, reason str
 *
 *   state = nprobes u32, probe[nprobes], npatches u32, patch[npatches],
 *           traps_ours u64, traps_chained u64, traps_reasserted u64
 *   probe = id u32, site u64, flags u32, event str, hits u64, recursions u64,
 *           recorded u64, mem_errors u64
 *   patch = site u64, method u8, len u8, orig u8[len], hop u64, hop_len u8,
 *           hop_orig u8[hop_len], tramp u64, tramp_len u32, resume u64,
 *           nprobes u32, id u32[nprobes]
 *   ctx   = kind u8, name str, reg u8, width u8, shift u8,
 *           type { name str, type u8, size u8, is_signed u8, hex u8 },
 *           addr { base u8, deref u8, offset u64, offset2 u64 }, maxlen u32,
 *           depth u16, walker u8
 *   ctx_ext = ctx, then value { loc u8, flags u8, nops u32,
 *           op[nops] { op u8, arg u8, imm u64 } }  (spec/value.h)
 *   class = flags u32, event str, nctx u32, ctx_ext[nctx]
 *   def   = id u32, site u64, class u32 (an index in the message's classes)
 *   led   = patch, nwrites u32, write[nwrites]
 *   write = addr u64, kind u8, orig u8[len]
 *   str   = len u16, bytes (no NUL), len < the receiving array's size
 *
 * Versions: the header's major must match or the connection is refused,
 * with REFUSE (whose layout, like the header's, is the same in every
 * version) and a message on both sides.  A minor version only adds message
 * types; it never changes an existing message, whose decoders refuse
 * trailing bytes.
 *
 * Statuses are 0 or -errno of the agent's side; an error string says more.
 * A request that frames well but does not decode gets its reply with
 * -EBADMSG and the typed error's text (LIST and PING, whose replies have no
 * status: the agent closes).  Bad magic, another major, a length above
 * DP_APP_MAX_PAYLOAD or a frame cut by the peer close the connection.
 *
 * What the daemon does with it:
 *  - ALLOC_CODE memory is mapped read+execute only, never freed: the daemon
 *    writes code into it through /proc/PID/mem;
 *  - DEFINE_PROBE's reply is the handler argument of the probe's trampoline
 *    hooks (the handler being HELLO's probe_hit).  Probes are never freed
 *    and their ids never reused in a process: to probe a site again, note a
 *    patch naming the existing probe;
 *  - NOTE_INSTALLED comes before the patch is written: for an int3 the
 *    agent registers the trap site (an int3 it does not know would reach
 *    the program), and a daemon that dies before writing leaves a record
 *    whose site still holds its original bytes, which the next one forgets.
 *    A site noted again replaces its record (a patch rebuilt for another
 *    set of probes: its trampoline is written before the note);
 *  - NOTE_REMOVED comes after the original bytes are back;
 *  - the agent reports everything noted, with counters, in every HELLO:
 *    after a reconnection, and from a forked child (its own pid, what it
 *    inherited);
 *  - DEFINE_PROBE_EXT, only for a probe with a context DEFINE_PROBE cannot
 *    carry (DP_CTX_VALUE), and only to an agent of minor 2 or later (the
 *    daemon refuses the probe, with a message, for an older one);
 *    DEFINE_PROBE stays as it was, so an older agent and the golden bytes
 *    of tests/proto keep working;
 *  - GO, after every HELLO once the daemon has installed every enabled
 *    path-wide event whose object the process maps (the probes of `lttng
 *    trace` among them), which must be in place before the program's main
 *    runs.  A preloaded agent holds its constructor until GO comes (or the
 *    wait's limit passes, or no daemon answers: the agent's control.h), so
 *    that the program runs nothing before its probes are installed; an
 *    injected agent only answers it;
 *  - MAPPED goes the other way: a preloaded agent sends it when the program
 *    mapped objects (a dlopen that loaded something), only to a daemon of
 *    minor 2 or later, and holds the dlopen's caller until the daemon's
 *    MAPPED_REPLY with the same cookie (or a later one) comes: the daemon
 *    sends it once it has installed every enabled path-wide event whose
 *    object the process now maps.  Meanwhile the daemon may send requests
 *    as usual; it also keeps reading MAPPED while a call of its own waits
 *    for a reply (dp_app_call_cb).  The wait is bounded as the
 *    constructor's is; an injected agent never sends it;
 *  - the batches (minor 3, only to an agent of minor 3 or later; an older
 *    one gets the single messages, one round trip each): DEFINE_PROBES
 *    defines many probes in one round trip, each naming a class that holds
 *    what probes share (event, flags, contexts: one class serves every
 *    site of an event with the same fields).  The agent defines them in
 *    order and stops at the first it cannot: the reply's handles are those
 *    of the probes defined, in order (all of them on success; on failure
 *    nhandles is the failing one's index, the error names it, and the
 *    probes before it stay defined, as probes always do).
 *    NOTE_INSTALLED_MANY notes many patches in order, as many
 *    NOTE_INSTALLED would, and stops at the first it cannot: the reply's
 *    value is how many were noted (all of them on success), the error
 *    names the one that failed; the daemon takes back the ones noted when
 *    it does not write them.  NOTE_REMOVED_MANY
 *    forgets many sites; one it does not know fails the reply (-ENOENT)
 *    after the others are forgotten.  Each batch holds at most
 *    DP_APP_MAX_BATCH elements: the daemon sends more in several messages.
 *    Their rules are the single messages' (what comes before the write,
 *    what after);
 *  - FOLLOW sets what the agent follows, for the daemon's part
 *    (DP_APP_FOLLOW_EXEC: it keeps itself in the environment of every image
 *    the process executes, as with DP_APP_ENV_FOLLOW_EXEC; the agent's
 *    follow.h); 0 turns that part off (what the environment asked for at
 *    the start stays).  The daemon sends it, only to an agent of minor 3 or
 *    later (an older one simply does not follow), whenever the set of
 *    enabled events asking to follow children (EVENT_FLAGS FOLLOW_EXEC,
 *    client.h) that are installed in the process changes, and after every
 *    HELLO, before GO, so that a forked child or a new image has the mode
 *    the events installed there ask for before its program goes on.
 *    Unknown flag bits are refused (-EBADMSG).
 *  - NOTE_WRITES (minor 4, only to an agent of minor 4 or later) records
 *    the bytes a patch writes besides its window and hop: the
 *    displacements of the branches it leads into its trampoline, and the
 *    hop their rel8s go through (patch/plan.h, DP_PLAN_REDIRECT).  Each
 *    `led` names its patch whole: a jump whose window is written too (its
 *    NOTE_INSTALLED comes first, as for any jump), or a redirect
 *    (DP_APP_METHOD_REDIRECT, only ever in a `led`: its window is never
 *    written, and it has no record but this one).  A led replaces the
 *    one recorded at its site; one with no write forgets it.  Like
 *    NOTE_INSTALLED it comes before the bytes are written, and
 *    NOTE_REMOVED (or NOTE_REMOVED_MANY) of the site forgets it after the
 *    original bytes are back, as it forgets the site's patch (the reply
 *    is -ENOENT only when neither was recorded); NOTE_INSTALLED leaves it
 *    alone.  Its reply's value says how many were recorded, in order.
 *    LIST_WRITES answers every led recorded, for a daemon that recovers
 *    the process after its HELLO (whose state, unchanged, lists the
 *    jumps and int3s only).
 */
#ifndef DP_PROTO_APP_H
#define DP_PROTO_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Context specs travel field by field (spec/ctx.h). */
#include "spec/ctx.h"
#include "proto/frame.h"
#include "proto/wire.h"

#define DP_APP_MAGIC 0x50415044u	/* "DPAP" in byte order */
#define DP_APP_MAJOR 1
#define DP_APP_MINOR 4

/* Bounds every receiver enforces. */
#define DP_APP_MAX_PAYLOAD (32u << 20)	/* a frame's payload, in bytes */
#define DP_APP_MAX_PROBES 98304		/* probes in a state (and in one agent) */
#define DP_APP_MAX_PATCHES 98304	/* patches in a state (and in one agent): the
					   largest state fits in DP_APP_MAX_PAYLOAD */
#define DP_APP_MAX_BATCH 16384		/* elements of one DEFINE_PROBES (classes,
					   probes) or NOTE_*_MANY */
#define DP_APP_MAX_CTX 64		/* contexts of one probe */
#define DP_APP_MAX_ORIG 32		/* original bytes of one patch */
#define DP_APP_HOP_LEN 5		/* bytes of a hop (its jmp rel32) */
#define DP_APP_MAX_PATCH_PROBES 16	/* probes served by one patch */
#define DP_APP_MAX_WRITES 12		/* writes of one led besides its window */
#define DP_APP_MAX_WRITE_LEN 8		/* bytes of one write */
#define DP_APP_MAX_CODE (256u << 10)	/* bytes of one ALLOC_CODE */
#define DP_APP_ERROR_MAX 256		/* error strings, with their NUL */
#define DP_APP_VERSION_MAX 32		/* the agent's version string, with its NUL */

/* Default timeouts, in milliseconds, for a message once it has started. */
#define DP_APP_TIMEOUT_MS 5000

/*
 * The agent's wait for GO as `lttng trace` asks for it (its value: the
 * longest wait in milliseconds, or any non-number for the default), and the
 * default; it takes precedence over the agent's own default wait.
 */
#define DP_APP_ENV_WAIT "LTTNG_DYNPROBE_WAIT"
/* Set (to anything but "" or "0"), the preloaded agent keeps itself in the
 * environment of every image the process executes (the agent's follow.h). */
#define DP_APP_ENV_FOLLOW_EXEC "LTTNG_DYNPROBE_FOLLOW_EXEC"
#define DP_APP_WAIT_DEFAULT_MS 10000

enum dp_app_type {
	DP_APP_HELLO = 0x0001,
	DP_APP_DEFINE_PROBE = 0x0002,
	DP_APP_ALLOC_CODE = 0x0003,
	DP_APP_NOTE_INSTALLED = 0x0004,
	DP_APP_NOTE_REMOVED = 0x0005,
	DP_APP_LIST = 0x0006,
	DP_APP_PING = 0x0007,
	DP_APP_GO = 0x0008,		/* minor 1 */
	DP_APP_DEFINE_PROBE_EXT = 0x0009,	/* minor 2 */
	DP_APP_MAPPED = 0x000A,		/* minor 2, sent by the agent */
	DP_APP_DEFINE_PROBES = 0x000B,	/* minor 3 */
	DP_APP_NOTE_INSTALLED_MANY = 0x000C,	/* minor 3 */
	DP_APP_NOTE_REMOVED_MANY = 0x000D,	/* minor 3 */
	DP_APP_FOLLOW = 0x000E,		/* minor 3 */
	DP_APP_NOTE_WRITES = 0x000F,	/* minor 4 */
	DP_APP_LIST_WRITES = 0x0010,	/* minor 4 */

	DP_APP_HELLO_REPLY = DP_APP_HELLO | DP_FRAME_REPLY,
	DP_APP_DEFINE_PROBE_REPLY = DP_APP_DEFINE_PROBE | DP_FRAME_REPLY,
	DP_APP_ALLOC_CODE_REPLY = DP_APP_ALLOC_CODE | DP_FRAME_REPLY,
	DP_APP_NOTE_INSTALLED_REPLY = DP_APP_NOTE_INSTALLED | DP_FRAME_REPLY,
	DP_APP_NOTE_REMOVED_REPLY = DP_APP_NOTE_REMOVED | DP_FRAME_REPLY,
	DP_APP_LIST_REPLY = DP_APP_LIST | DP_FRAME_REPLY,
	DP_APP_PING_REPLY = DP_APP_PING | DP_FRAME_REPLY,
	DP_APP_GO_REPLY = DP_APP_GO | DP_FRAME_REPLY,
	DP_APP_DEFINE_PROBE_EXT_REPLY = DP_APP_DEFINE_PROBE_EXT | DP_FRAME_REPLY,
	DP_APP_MAPPED_REPLY = DP_APP_MAPPED | DP_FRAME_REPLY,
	DP_APP_DEFINE_PROBES_REPLY = DP_APP_DEFINE_PROBES | DP_FRAME_REPLY,
	DP_APP_NOTE_INSTALLED_MANY_REPLY = DP_APP_NOTE_INSTALLED_MANY | DP_FRAME_REPLY,
	DP_APP_NOTE_REMOVED_MANY_REPLY = DP_APP_NOTE_REMOVED_MANY | DP_FRAME_REPLY,
	DP_APP_FOLLOW_REPLY = DP_APP_FOLLOW | DP_FRAME_REPLY,
	DP_APP_NOTE_WRITES_REPLY = DP_APP_NOTE_WRITES | DP_FRAME_REPLY,
	DP_APP_LIST_WRITES_REPLY = DP_APP_LIST_WRITES | DP_FRAME_REPLY,

	/* The same in every protocol (frame.h): the reply to a request of an
	 * unknown type, and "I will not talk to you" (the sender closes). */
	DP_APP_UNSUPPORTED = DP_FRAME_UNSUPPORTED,
	DP_APP_REFUSE = DP_FRAME_REFUSE,
};

/* The protocol's frames: magic, our version, the payload's maximum. */
extern const struct dp_frame_proto dp_app_proto;

/* The name of a message type ("DEFINE_PROBE"), or NULL if unknown. */
const char *dp_app_type_name(uint16_t type);
/* Whether a message of this type is a reply (answers, never answered). */
static inline bool dp_app_type_is_reply(uint16_t type)
{
	return type & DP_FRAME_REPLY;
}

/* How a patch reaches its trampoline. */
enum dp_app_method {
	DP_APP_METHOD_JUMP = 1,		/* jmp rel32 at the site (len >= 5), or jmp rel8 to
					   a hop (len >= 2) */
	DP_APP_METHOD_INT3 = 2,		/* int3 at the site; the trap resumes at `resume` */
	DP_APP_METHOD_REDIRECT = 3,	/* minor 4, in a led only: the window is not
					   written, its branches lead to the trampoline */
};

/* What a write of a led puts over its original bytes. */
enum dp_app_write_kind {
	DP_APP_WRITE_BRANCH = 1,	/* a jmp, jcc or loop's displacement (its last 1
					   or 4 bytes; the bytes before stay) */
	DP_APP_WRITE_HOP = 2,		/* a jmp rel32 over 5 bytes of fill */
};

/* DEFINE_PROBE flags (the agent's dp_probe_flag, on the wire). */
enum dp_app_probe_flag {
	DP_APP_PROBE_AT_ENTRY = 1u << 0,	/* the site is a function's first instruction */
};
#define DP_APP_PROBE_FLAGS_ALL DP_APP_PROBE_AT_ENTRY

/* The first minor version whose agents take DEFINE_PROBE_EXT. */
#define DP_APP_MINOR_DEFINE_EXT 2

/* The first minor version whose agents take the batches (DEFINE_PROBES,
 * NOTE_INSTALLED_MANY, NOTE_REMOVED_MANY). */
#define DP_APP_MINOR_BATCH 3

/* FOLLOW flags: what the agent follows for the daemon. */
enum dp_app_follow_flag {
	DP_APP_FOLLOW_EXEC = 1u << 0,	/* the images the process executes */
};
#define DP_APP_FOLLOW_ALL DP_APP_FOLLOW_EXEC
/* The first minor version whose agents take FOLLOW. */
#define DP_APP_MINOR_FOLLOW 3
/* The first minor version whose agents take NOTE_WRITES and LIST_WRITES. */
#define DP_APP_MINOR_WRITES 4

/* Whether a probe with these contexts needs DEFINE_PROBE_EXT. */
bool dp_app_ctx_need_ext(const struct dp_ctx *ctx, size_t nctx);

/* A probe the agent holds; ids are the daemon's, never 0. */
struct dp_app_probe {
	uint32_t id;
	uint64_t site;
	uint32_t flags;			/* enum dp_app_probe_flag */
	char event[DP_NAME_MAX];
	/* dp_probe_stats */
	uint64_t hits, recursions, recorded, mem_errors;
};

/*
 * A patch written in the process: what it takes to recognise and undo it.
 * A jump whose window is shorter than 5 bytes has a hop (patch/plan.h): a
 * jmp rel8 at the site leads to a jmp rel32 written over hop_len bytes of
 * padding at `hop`, within -128..+127 bytes of site + 2, outside the window.
 * Undoing it restores the site first, then the hop.
 */
struct dp_app_patch {
	uint64_t site;
	uint8_t method;			/* enum dp_app_method */
	uint8_t len;			/* bytes of original code the patch displaced */
	uint8_t orig[DP_APP_MAX_ORIG];
	uint64_t hop;			/* jump with a hop: its address; else 0 */
	uint8_t hop_len;		/* DP_APP_HOP_LEN with a hop, else 0 */
	uint8_t hop_orig[DP_APP_HOP_LEN];	/* the bytes the hop overwrote */
	uint64_t tramp;			/* trampoline address (0 when none) */
	uint32_t tramp_len;
	uint64_t resume;		/* int3: where a trapped thread resumes; else 0 */
	uint32_t nprobes;
	uint32_t probes[DP_APP_MAX_PATCH_PROBES];	/* probe ids, at least one */
};

/* One write of a led: at addr, len bytes that were orig. */
struct dp_app_write {
	uint64_t addr;
	uint8_t kind;			/* enum dp_app_write_kind */
	uint8_t len;			/* BRANCH: 2 to 8 (the whole instruction);
					   HOP: 5 */
	uint8_t orig[DP_APP_MAX_WRITE_LEN];
};

/* A patch whose branches are led into its trampoline: the patch (a jump,
 * or a redirect), and what else it writes. */
struct dp_app_led {
	struct dp_app_patch patch;
	uint32_t nwrites;		/* 0 (forget the site's led) .. DP_APP_MAX_WRITES */
	struct dp_app_write writes[DP_APP_MAX_WRITES];
};

/* NOTE_WRITES's leds, LIST_WRITES's reply. */
struct dp_app_leds {
	uint32_t nleds;			/* NOTE_WRITES: 1 .. DP_APP_MAX_BATCH; a reply:
					   up to DP_APP_MAX_PATCHES */
	struct dp_app_led *leds;
};

/* What is installed in one process. */
struct dp_app_state {
	uint32_t nprobes;
	struct dp_app_probe *probes;
	uint32_t npatches;
	struct dp_app_patch *patches;
	/* dpa_trap_stats: traps at our int3 sites, traps passed on to the
	 * program's handler, times our SIGTRAP handler had to be put back */
	uint64_t traps_ours, traps_chained, traps_reasserted;
};

struct dp_app_hello {
	uint8_t major, minor;		/* the protocol the agent speaks */
	uint32_t pid;
	uint64_t probe_hit;		/* the address of dp_probe_hit: trampolines call it */
	char agent_version[DP_APP_VERSION_MAX];
	struct dp_app_state state;
};

struct dp_app_hello_reply {
	uint8_t major, minor;		/* the protocol the daemon speaks */
	uint32_t daemon_pid;
};

struct dp_app_define_probe {
	uint32_t id;			/* chosen by the daemon, unique in the process */
	uint64_t site;			/* run-time address of the probed instruction */
	uint32_t flags;			/* enum dp_app_probe_flag */
	char event[DP_NAME_MAX];	/* "provider:event", or "NAME" for "dynprobe:NAME" */
	uint32_t nctx;
	struct dp_ctx *ctx;		/* the event's fields, in order */
};

/* The reply of DEFINE_PROBE, ALLOC_CODE and NOTE_*: a status, a value, why. */
struct dp_app_result {
	int32_t status;			/* 0 or -errno */
	uint64_t value;			/* DEFINE_PROBE: the probe (the handler's argument);
					   ALLOC_CODE: the address; NOTE_INSTALLED_MANY:
					   how many were noted; NOTE_*: not sent */
	char error[DP_APP_ERROR_MAX];	/* "" on success */
};

/* What the probes of a DEFINE_PROBES share. */
struct dp_app_probe_class {
	uint32_t flags;			/* enum dp_app_probe_flag */
	char event[DP_NAME_MAX];	/* as DEFINE_PROBE's */
	uint32_t nctx;
	struct dp_ctx *ctx;		/* as DEFINE_PROBE_EXT's */
};

/* One probe of a DEFINE_PROBES. */
struct dp_app_probe_def {
	uint32_t id;			/* as DEFINE_PROBE's */
	uint64_t site;
	uint32_t cls;			/* its class: an index in classes[] */
};

struct dp_app_define_probes {
	uint32_t nclasses;		/* 1 .. DP_APP_MAX_BATCH */
	struct dp_app_probe_class *classes;
	uint32_t nprobes;		/* 1 .. DP_APP_MAX_BATCH */
	struct dp_app_probe_def *probes;
};

/* DEFINE_PROBES's reply: the handles of the probes defined, in order. */
struct dp_app_define_probes_reply {
	int32_t status;			/* 0: all of them; else nhandles is the index
					   of the one that failed */
	char error[DP_APP_ERROR_MAX];
	uint32_t nhandles;
	uint64_t *handles;
};

/* NOTE_INSTALLED_MANY's patches. */
struct dp_app_patches {
	uint32_t npatches;		/* 1 .. DP_APP_MAX_BATCH */
	struct dp_app_patch *patches;
};

/* NOTE_REMOVED_MANY's sites. */
struct dp_app_sites {
	uint32_t nsites;		/* 1 .. DP_APP_MAX_BATCH */
	uint64_t *sites;
};

struct dp_app_alloc_code {
	uint64_t near;			/* the memory lies wholly within +-2 GiB of it */
	uint32_t size;			/* 1 .. DP_APP_MAX_CODE */
};

struct dp_app_refuse {
	uint8_t major, minor;		/* the protocol the refusing side speaks */
	char reason[DP_APP_ERROR_MAX];
};

struct dp_app_msg {
	uint16_t type;			/* enum dp_app_type */
	uint32_t seq;
	uint8_t major, minor;		/* as received; encoding always sends ours */
	union {
		struct dp_app_hello hello;
		struct dp_app_hello_reply hello_reply;
		struct dp_app_define_probe define_probe;	/* and DEFINE_PROBE_EXT */
		struct dp_app_alloc_code alloc_code;
		struct dp_app_patch note_installed;
		uint64_t note_removed;		/* the site */
		struct dp_app_result result;	/* the replies of the four above,
						   of NOTE_*_MANY (NOTE_INSTALLED_MANY:
						   value is how many were noted),
						   FOLLOW's and NOTE_WRITES's (value:
						   how many were recorded) */
		struct dp_app_state list_reply;
		uint64_t ping;			/* PING and its reply: the cookie */
		uint64_t mapped;		/* MAPPED and its reply: the cookie */
		struct dp_app_define_probes define_probes;
		struct dp_app_define_probes_reply define_probes_reply;
		struct dp_app_patches note_many;	/* NOTE_INSTALLED_MANY */
		struct dp_app_sites removed_many;	/* NOTE_REMOVED_MANY */
		uint32_t follow;		/* FOLLOW: enum dp_app_follow_flag */
		struct dp_app_leds leds;	/* NOTE_WRITES, LIST_WRITES's reply */
		uint16_t unsupported;		/* the type that was not understood */
		struct dp_app_refuse refuse;
	};
};

/* Frees what a decoded message owns (state arrays, contexts). */
void dp_app_msg_release(struct dp_app_msg *m);

/*
 * The whole frame of a message (header and payload) into w, which must be
 * freshly initialized.  0, -EINVAL for a field a receiver would refuse (a
 * string too long, a count above its bound, an unknown type), -EMSGSIZE, or
 * -ENOMEM.
 */
int dp_app_encode(const struct dp_app_msg *m, struct dp_wbuf *w);

/*
 * A message from a checked header and its payload.  0, -ENOMEM, or -EPROTO
 * with *why (DP_PROTO_ERR_TYPE for a type this version does not know).
 * m->type, seq, major and minor are set in every case; the rest is zero
 * unless decoding succeeded.  A REFUSE decodes whatever its major.
 */
int dp_app_decode(const struct dp_frame_hdr *h, const uint8_t *payload, struct dp_app_msg *m,
		  enum dp_proto_err *why);

/* A message from a whole frame in memory (no more, no less).  As above. */
int dp_app_decode_frame(const uint8_t *buf, size_t len, struct dp_app_msg *m,
			enum dp_proto_err *why);

/*
 * Blocking transfers of one message, with a deadline for the whole of it
 * (timeout_ms < 0: none).  dp_app_recv returns 0, -ECONNRESET when the peer
 * closed, -ETIMEDOUT, -ENOMEM, -EPROTO with *why (dp_proto_err_fatal says
 * whether the connection must close; if not, m's header fields say what to
 * answer), or -errno.  A REFUSE is returned as a message (0).
 */
int dp_app_send(int fd, const struct dp_app_msg *m, int timeout_ms);
int dp_app_recv(int fd, struct dp_app_msg *m, int timeout_ms, enum dp_proto_err *why);

/*
 * Sends a request (req->seq is set from *seq, which is then advanced) and
 * waits for its reply: 0 with *reply of type req->type | DP_FRAME_REPLY;
 * -EOPNOTSUPP when the peer answered UNSUPPORTED; -ECONNREFUSED when it sent
 * REFUSE (reply holds it); -EPROTO with *why for a bad or unexpected reply
 * (DP_PROTO_ERR_VALUE: wrong seq or type); or what dp_app_send and
 * dp_app_recv return.
 */
int dp_app_call(int fd, struct dp_app_msg *req, uint32_t *seq, struct dp_app_msg *reply,
		int timeout_ms, enum dp_proto_err *why);
/* dp_app_call, handing a well-formed request of the peer's (MAPPED) that
 * comes while it waits to cb(arg, msg) instead of failing; the message is
 * released after cb returns.  The whole call ends by timeout_ms
 * (-ETIMEDOUT), however many requests come meanwhile, and ends with
 * -EOVERFLOW when more than DP_CODEC_MAX_PEER_REQUESTS (codec.h) come. */
int dp_app_call_cb(int fd, struct dp_app_msg *req, uint32_t *seq, struct dp_app_msg *reply,
		   int timeout_ms, enum dp_proto_err *why,
		   void (*cb)(void *arg, struct dp_app_msg *m), void *arg);

/* The variable that names the app socket, for an agent and a daemon alike. */
#define DP_APP_ENV_SOCKET "LTTNG_DYNPROBE_APP_SOCKET"

/*
 * The app socket's path, the same for the daemon and the agents:
 * $LTTNG_DYNPROBE_APP_SOCKET if set, else /var/run/lttng/dynprobe-app.sock
 * for root, else $LTTNG_HOME/.lttng/dynprobe-app.sock (LTTNG_HOME defaults
 * to HOME).  Environment variables are ignored in secure-execution mode
 * (setuid programs).  0, -ENOENT when no home is known, -ENAMETOOLONG when
 * the path does not fit in `size` or in a sockaddr_un.
 */
int dp_app_socket_path(char *buf, size_t size);

#endif /* DP_PROTO_APP_H */
