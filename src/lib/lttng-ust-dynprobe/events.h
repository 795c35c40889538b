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
#ifndef DPA_EVENTS_H
#define DPA_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "spec/field.h"

/* Fields per event class, at most. */
#define DPA_CLASS_MAX_FIELDS 64

/* One field's value for dpa_class_record, in field order. */
struct dpa_value {
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

struct dpa_class;

/*
 * The class for `name` ("provider:event": letters, digits, '_', '-', '.')
 * with these fields, registered with lttng-ust on first use; the same
 * pointer for the same name and layout ever after.  Takes a lock: not for
 * the hit path.  NULL and errno: EINVAL for a bad name or layout (with a
 * message in err), ENOMEM, or EINVAL/ENOMEM when
 * lttng-ust refused it (retried by the next call).  Thread-safe.
 */
struct dpa_class *dpa_class_get(const char *name, const struct dp_field_desc *fields,
				size_t nfields, struct dp_err *err);

/* Whether any session (or trigger) wants this event now: cheap, lock-free. */
bool dpa_class_enabled(const struct dpa_class *cls);

/* What dpa_class_enabled reads, for the hit path to read it inline (relaxed
 * atomic load; non-zero: enabled).  Valid for as long as the class. */
const int *dpa_class_state(const struct dpa_class *cls);

/*
 * Records one event of the class, `values` in field order, with `ip` as the
 * event's instruction pointer (the probe site: `lttng add-context -t ip`),
 * into every session that enabled it (filters applied) and to every trigger
 * on it (with captures).  Lock-free; async-signal-safe once the thread is
 * initialized (dpa_events_thread_init); never blocks; a full buffer discards
 * the event as lttng-ust does (counted in the trace).  Returns how many
 * sessions' traces account for the event: written, or counted there as
 * discarded (a session whose event, channel or session is off, a filter
 * that rejects, a trigger, or a refusal lttng-ust counts nowhere is not).
 */
unsigned dpa_class_record(const struct dpa_class *cls, uint64_t ip,
			  const struct dpa_value *values);

/*
 * Pre-initializes lttng-ust's per-thread state (its thread-local storage and
 * the thread's RCU reader registration), so that the first event of a
 * thread does not allocate (from a signal handler, or inside malloc).
 * Cheap when already done.
 */
void dpa_events_thread_init(void);

#endif /* DPA_EVENTS_H */
