/*
 * Runtime LTTng-UST event classes: an event name and a field layout, made
 * into a real lttng-ust event at run time, and the recording of one event.
 *
 * Classes are cached by (name, layout) and never unregistered while the
 * process lives (lttng-sessiond would silently refuse a re-registration);
 * each class has its own probe callback, so two classes with the same name
 * and different layouts never write each other's events.
 *
 * Process life is handled here too: fork() handlers (registered when the
 * agent loads) make a child register with the session daemon as its own
 * application, with its own vpid, as liblttng-ust-fork.so would (and stay
 * out of the way when that library is preloaded).
 */
#ifndef DP_AGENT_EVENTS_H
#define DP_AGENT_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DP_NAME_MAX 128		/* provider:event, as lttng-ust allows */
#define DP_FIELD_NAME_MAX 64
#define DP_CLASS_MAX_FIELDS 64

enum dp_ftype {
	DP_FT_INT,		/* integer of size 1, 2, 4 or 8 bytes */
	DP_FT_STRING,		/* recorded as a CTF string (UTF-8) */
	DP_FT_SEQ_U64,		/* sequence of u64 (length field u32 before it) */
	DP_FT_DOUBLE,		/* IEEE double */
};

struct dp_field_desc {
	char name[DP_FIELD_NAME_MAX];	/* a C identifier; a sequence S also
					 * gets a field "_S_length" before it */
	uint8_t type;		/* enum dp_ftype */
	uint8_t size;		/* DP_FT_INT: 1, 2, 4 or 8 (ignored otherwise) */
	bool is_signed;		/* DP_FT_INT (ignored otherwise) */
	bool hex;		/* DP_FT_INT and DP_FT_SEQ_U64: shown in base 16
				 * (ignored otherwise) */
};

/* One field's value for dp_class_record, in field order. */
struct dp_value {
	union {
		uint64_t u;	/* DP_FT_INT: the low `size` bytes are recorded */
		double d;
		struct {
			const char *ptr;	/* never NULL: "" for none */
			uint32_t len;		/* without the NUL; ptr[len] is '\0'
						 * (filters read up to the NUL) */
		} str;
		struct {
			const uint64_t *ptr;
			uint32_t len;
		} seq;
	};
};

struct dp_class;

/*
 * The class for `name` ("provider:event": letters, digits, '_', '-', '.')
 * with these fields, registered with lttng-ust on first use; the same
 * pointer for the same name and layout ever after.  Takes a lock: not for
 * the hit path.  NULL and errno: EINVAL for a bad name or layout (with a
 * message in *err when err is not NULL), ENOMEM, or EINVAL/ENOMEM when
 * lttng-ust refused it (retried by the next call).  Thread-safe.
 */
struct dp_class *dp_class_get(const char *name, const struct dp_field_desc *fields,
			      size_t nfields, const char **err);

/* Whether any session (or trigger) wants this event now: cheap, lock-free. */
bool dp_class_enabled(const struct dp_class *cls);

/*
 * Records one event of the class, `values` in field order, with `ip` as the
 * event's instruction pointer (the probe site: `lttng add-context -t ip`),
 * into every session that enabled it (filters applied) and to every trigger
 * on it (with captures).  Lock-free; async-signal-safe once the thread is
 * initialized (dp_events_thread_init); never blocks; a full buffer discards
 * the event as lttng-ust does (counted in the trace).
 */
void dp_class_record(const struct dp_class *cls, uint64_t ip, const struct dp_value *values);

/*
 * Pre-initializes lttng-ust's per-thread state (its thread-local storage and
 * the thread's RCU reader registration), so that the first event of a
 * thread does not allocate (from a signal handler, or inside malloc).
 * Cheap when already done.
 */
void dp_events_thread_init(void);

#endif /* DP_AGENT_EVENTS_H */
