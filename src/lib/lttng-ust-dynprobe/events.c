/*
 * Runtime event classes (events.h): the lttng-ust descriptors built from a
 * field layout, one call site and one probe callback per class, the record
 * path, and what keeps events flowing across fork() and into new threads.
 *
 * lttng-ust connects a probe callback to every call site of the same
 * provider:event name.  Two classes with one name but different layouts
 * (each a different event to lttng-sessiond) would then see each other's
 * events; so every class gets its own callback, and a call site only writes
 * the events whose callback is its class's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <float.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <urcu/compiler.h>
#include <urcu/system.h>

#include <lttng/tracepoint-types.h>
#include <lttng/ust-events.h>
#include <lttng/ust-fork.h>
#include <lttng/ust-ringbuffer-context.h>
#include <lttng/ust-thread.h>
#include <lttng/urcu/urcu-ust.h>

#include "events.h"

/*
 * Declared by lttng/tracepoint.h, which would also instantiate in this file
 * the constructors meant for statically instrumented objects.
 */
int lttng_ust_tracepoint_module_register(struct lttng_ust_tracepoint *const *tracepoints_start,
					 int tracepoints_count);

/*
 * The record path packs fixed-size fields into one write: that relies on
 * lttng-ust laying out the payload without padding, as it does on
 * architectures with efficient unaligned access (x86-64).
 */
_Static_assert(lttng_ust_rb_alignof(uint64_t) == 1, "ring buffer payload must be packed");

/*
 * Arguments of every class's call site and callback.  lttng-ust connects a
 * callback to a call site only if their signatures are the same string, so
 * all classes share this one; no other code has it.
 */
#define DPA_SIGNATURE "const struct dpa_class *dpa_caller, uint64_t dpa_ip, const struct dpa_value *dpa_values"

/* A field as the record path sees it. */
struct dpa_fld {
	uint8_t type;		/* enum dp_ftype */
	uint8_t size;		/* bytes: DP_FT_INT */
	uint8_t is_signed;
};

/* The lttng-ust description of one field (and of a sequence's length). */
struct dpa_ust_field {
	struct lttng_ust_event_field len_field;
	struct lttng_ust_event_field field;
	struct lttng_ust_type_integer len_type;
	struct lttng_ust_type_integer elem_type;
	union {
		struct lttng_ust_type_integer integer;
		struct lttng_ust_type_string string;
		struct lttng_ust_type_float fp;
		struct lttng_ust_type_sequence seq;
	} type;
	char len_name[DP_FIELD_NAME_MAX + 8];
};

struct dpa_class {
	/* Read on every hit. */
	struct lttng_ust_tracepoint tp;		/* the call site */
	void (*cb)(void);			/* this class's callback */
	uint32_t nfields;
	uint32_t fixed_len;			/* payload bytes of fixed-size parts */
	bool dynamic;				/* has strings or sequences */
	struct dpa_fld fld[DPA_CLASS_MAX_FIELDS];

	/* Read by lttng-ust: never freed, never unregistered. */
	struct lttng_ust_tracepoint *tp_ptrs[1];
	struct lttng_ust_probe_desc probe_desc;
	struct lttng_ust_event_desc event_desc;
	const struct lttng_ust_event_desc *event_descs[1];
	struct lttng_ust_tracepoint_class tp_class;
	const struct lttng_ust_event_field *ufields[2 * DPA_CLASS_MAX_FIELDS];
	struct dpa_ust_field *uf;
	char provider[DP_NAME_MAX];
	char event[DP_NAME_MAX];

	/* The cache key: the full name and the normalized layout. */
	struct dpa_class *next;
	bool probe_registered, site_registered;
	uint64_t hash;
	char name[DP_NAME_MAX];
	struct dp_field_desc *layout;
};

/*
 * Class cache and registrations.  Lock order: dpa_lock, then lttng-ust's own
 * locks (taken inside lttng_ust_probe_register); the fork handlers follow
 * the same order.
 */
#define DPA_CACHE_BUCKETS 256
static pthread_mutex_t dpa_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dpa_class *dpa_cache[DPA_CACHE_BUCKETS];

/* ---- Per-class callbacks ------------------------------------------------ */

/*
 * A callback must be a distinct function per class, and classes are made at
 * run time: each class gets a small thunk in a code page, which loads the
 * address of the class's slot into r8 (the fifth argument) and jumps to
 * dpa_class_callback.  A page is filled with all its thunks and made
 * read-execute before any is handed out; it is never written again.
 */
#define DPA_THUNK_SIZE 32

struct dpa_thunk_page {
	uint8_t *code;
	size_t count, used;
	struct dpa_class *slot[];
};

static struct dpa_thunk_page *dpa_thunks;

static inline unsigned dpa_event_fire(const struct dpa_class *cls, void *event, uint64_t ip,
				      const struct dpa_value *values);

/*
 * What a call site calls, with the class it was called for; writes the event
 * only if it belongs to this callback's class.  dpa_class_record does the
 * same test inline: this is for any other caller that holds our signature.
 */
static void dpa_class_callback(void *event, const struct dpa_class *caller, uint64_t ip,
			       const struct dpa_value *values, struct dpa_class *const *self)
{
	if (caller == *self)
		dpa_event_fire(caller, event, ip, values);
}

static int dpa_thunk_page_new(void)
{
	size_t size = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = size / DPA_THUNK_SIZE;
	uint64_t target = (uint64_t)(uintptr_t)dpa_class_callback;
	struct dpa_thunk_page *page;
	uint8_t *code;

	page = calloc(1, sizeof(*page) + n * sizeof(page->slot[0]));
	if (!page)
		return -ENOMEM;
	code = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		free(page);
		return -ENOMEM;
	}
	memset(code, 0xcc, size);	/* int3 between thunks */
	for (size_t i = 0; i < n; i++) {
		uint8_t *t = code + i * DPA_THUNK_SIZE;
		uint64_t slot = (uint64_t)(uintptr_t)&page->slot[i];

		/* endbr64: an indirect-branch target, should IBT be enforced. */
		t[0] = 0xf3; t[1] = 0x0f; t[2] = 0x1e; t[3] = 0xfa;
		t[4] = 0x49; t[5] = 0xb8;		/* movabs $slot, %r8 */
		memcpy(t + 6, &slot, 8);
		t[14] = 0x48; t[15] = 0xb8;		/* movabs $target, %rax */
		memcpy(t + 16, &target, 8);
		t[24] = 0xff; t[25] = 0xe0;		/* jmp *%rax */
	}
	if (mprotect(code, size, PROT_READ | PROT_EXEC)) {
		int err = -errno;

		munmap(code, size);
		free(page);
		return err;
	}
	page->code = code;
	page->count = n;
	dpa_thunks = page;
	return 0;
}

/* A new callback for `cls`.  Under dpa_lock. */
static int dpa_thunk_alloc(struct dpa_class *cls)
{
	int ret;

	if (!dpa_thunks || dpa_thunks->used == dpa_thunks->count) {
		/* A full page (and its slots) stays: its thunks remain in use. */
		ret = dpa_thunk_page_new();
		if (ret)
			return ret;
	}
	dpa_thunks->slot[dpa_thunks->used] = cls;
	cls->cb = (void (*)(void))(void *)(dpa_thunks->code + dpa_thunks->used * DPA_THUNK_SIZE);
	dpa_thunks->used++;
	return 0;
}

/* ---- Layout validation -------------------------------------------------- */

static bool dpa_is_ident(const char *s, size_t max)
{
	size_t i;

	if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (i = 1; i < max && s[i]; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return i < max;
}

/* Event names end up in CTF metadata and in `lttng enable-event` globs. */
static bool dpa_is_name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

/* Splits "provider:event" (first colon); 0 or -EINVAL with a message. */
static int dpa_check_name(const char *name, size_t *colon, struct dp_err *err)
{
	size_t i, len = strnlen(name, DP_NAME_MAX);
	const char *c;

	if (len == DP_NAME_MAX) {
		return dp_err_set(err, -EINVAL, "event name too long");
	}
	c = strchr(name, ':');
	if (!c || c == name || !c[1]) {
		return dp_err_set(err, -EINVAL, "event name must be PROVIDER:EVENT");
	}
	*colon = (size_t)(c - name);
	for (i = 0; i < len; i++) {
		if (i != *colon && !dpa_is_name_char(name[i])) {
			return dp_err_set(err, -EINVAL, "event name may only hold letters, digits, '_', '-', '.' and one ':'");
		}
	}
	return 0;
}

/*
 * Copies `in` into `out` with the attributes that do not apply to a type
 * cleared, so that equal layouts compare equal byte for byte.
 */
static int dpa_normalize(const struct dp_field_desc *in, struct dp_field_desc *out,
			 struct dp_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!dpa_is_ident(in->name, DP_FIELD_NAME_MAX)) {
		return dp_err_set(err, -EINVAL, "field name must be a C identifier shorter than 64 bytes");
	}
	strcpy(out->name, in->name);
	out->type = in->type;
	switch (in->type) {
	case DP_FT_INT:
		if (in->size != 1 && in->size != 2 && in->size != 4 && in->size != 8) {
			return dp_err_set(err, -EINVAL, "integer field size must be 1, 2, 4 or 8 bytes");
		}
		out->size = in->size;
		out->is_signed = in->is_signed;
		out->hex = in->hex;
		break;
	case DP_FT_SEQ_U64:
		out->size = 8;
		out->hex = in->hex;
		break;
	case DP_FT_STRING:
		break;
	case DP_FT_DOUBLE:
		out->size = 8;
		break;
	default:
		return dp_err_set(err, -EINVAL, "unknown field type");
	}
	return 0;
}

/* The name of a sequence's length field, as lttng-ust's own macros make it. */
static void dpa_len_name(char out[DP_FIELD_NAME_MAX + 8], const char *seq_name)
{
	snprintf(out, DP_FIELD_NAME_MAX + 8, "_%.*s_length", DP_FIELD_NAME_MAX - 1, seq_name);
}

/* Field names, with the generated "_<seq>_length" ones, must be unique. */
static int dpa_check_unique(const struct dp_field_desc *f, size_t n, struct dp_err *err)
{
	char a[DP_FIELD_NAME_MAX + 8], b[DP_FIELD_NAME_MAX + 8];

	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < n; j++) {
			if (i != j && !strcmp(f[i].name, f[j].name))
				goto dup;
			if (f[j].type != DP_FT_SEQ_U64)
				continue;
			dpa_len_name(b, f[j].name);
			if (!strcmp(f[i].name, b))
				goto dup;
			if (i != j && f[i].type == DP_FT_SEQ_U64) {
				dpa_len_name(a, f[i].name);
				if (!strcmp(a, b))
					goto dup;
			}
		}
	}
	return 0;
dup:
	return dp_err_set(err, -EINVAL, "duplicate field name");
}

static uint64_t dpa_hash(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;	/* FNV-1a */
	return h;
}

/* ---- Building and registering a class ---------------------------------- */

static void dpa_int_type(struct lttng_ust_type_integer *t, unsigned bytes, bool is_signed,
			 bool hex)
{
	t->parent.type = lttng_ust_type_integer;
	t->struct_size = sizeof(*t);
	t->size = bytes * 8;
	t->alignment = lttng_ust_rb_alignof(uint64_t) * 8;
	t->signedness = is_signed;
	t->reverse_byte_order = 0;
	t->base = hex ? 16 : 10;
}

static void dpa_build_fields(struct dpa_class *cls, const struct dp_field_desc *f, size_t n)
{
	size_t k = 0;

	cls->fixed_len = 0;
	cls->dynamic = false;
	for (size_t i = 0; i < n; i++) {
		struct dpa_ust_field *u = &cls->uf[i];

		u->field.struct_size = sizeof(u->field);
		u->field.name = cls->layout[i].name;
		cls->fld[i].type = f[i].type;
		switch (f[i].type) {
		case DP_FT_INT:
			dpa_int_type(&u->type.integer, f[i].size, f[i].is_signed, f[i].hex);
			u->field.type = &u->type.integer.parent;
			cls->fld[i].size = f[i].size;
			cls->fld[i].is_signed = f[i].is_signed;
			cls->fixed_len += f[i].size;
			break;
		case DP_FT_DOUBLE:
			u->type.fp.parent.type = lttng_ust_type_float;
			u->type.fp.struct_size = sizeof(u->type.fp);
			u->type.fp.exp_dig = sizeof(double) * 8 - DBL_MANT_DIG;
			u->type.fp.mant_dig = DBL_MANT_DIG;
			u->type.fp.alignment = lttng_ust_rb_alignof(double) * 8;
			u->type.fp.reverse_byte_order = LTTNG_UST_BYTE_ORDER != LTTNG_UST_FLOAT_WORD_ORDER;
			u->field.type = &u->type.fp.parent;
			cls->fixed_len += sizeof(double);
			break;
		case DP_FT_STRING:
			u->type.string.parent.type = lttng_ust_type_string;
			u->type.string.struct_size = sizeof(u->type.string);
			u->type.string.encoding = lttng_ust_string_encoding_UTF8;
			u->field.type = &u->type.string.parent;
			cls->dynamic = true;
			break;
		case DP_FT_SEQ_U64:
			/* The length comes first, as its own field the filter skips. */
			dpa_len_name(u->len_name, f[i].name);
			dpa_int_type(&u->len_type, sizeof(uint32_t), false, false);
			u->len_field.struct_size = sizeof(u->len_field);
			u->len_field.name = u->len_name;
			u->len_field.type = &u->len_type.parent;
			u->len_field.nofilter = 1;
			cls->ufields[k++] = &u->len_field;
			dpa_int_type(&u->elem_type, sizeof(uint64_t), false, f[i].hex);
			u->type.seq.parent.type = lttng_ust_type_sequence;
			u->type.seq.struct_size = sizeof(u->type.seq);
			u->type.seq.length_name = NULL;		/* the field before */
			u->type.seq.elem_type = &u->elem_type.parent;
			u->type.seq.alignment = 0;
			u->type.seq.encoding = lttng_ust_string_encoding_none;
			u->field.type = &u->type.seq.parent;
			cls->fixed_len += sizeof(uint32_t);
			cls->dynamic = true;
			break;
		}
		cls->ufields[k++] = &u->field;
	}
	cls->nfields = (uint32_t)n;
	cls->tp_class.nr_fields = k;
}

/* Only for a class lttng-ust has never seen. */
static void dpa_class_free(struct dpa_class *cls)
{
	free(cls->uf);
	free(cls->layout);
	free(cls);
}

static struct dpa_class *dpa_class_new(const char *name, size_t colon,
				       const struct dp_field_desc *norm, size_t n, uint64_t hash)
{
	struct dpa_class *cls = calloc(1, sizeof(*cls));

	if (!cls)
		return NULL;
	cls->uf = calloc(n ? n : 1, sizeof(*cls->uf));
	cls->layout = calloc(n ? n : 1, sizeof(*cls->layout));
	if (!cls->uf || !cls->layout) {
		dpa_class_free(cls);
		return NULL;
	}
	memcpy(cls->layout, norm, n * sizeof(*norm));
	strcpy(cls->name, name);
	memcpy(cls->provider, name, colon);
	strcpy(cls->event, name + colon + 1);
	cls->hash = hash;
	dpa_build_fields(cls, cls->layout, n);

	cls->tp_class.struct_size = sizeof(cls->tp_class);
	cls->tp_class.fields = cls->ufields;
	cls->tp_class.signature = DPA_SIGNATURE;
	cls->tp_class.probe_desc = &cls->probe_desc;

	/* loglevel stays NULL: lttng-ust reads a non-NULL one as int **. */
	cls->event_desc.struct_size = sizeof(cls->event_desc);
	cls->event_desc.event_name = cls->event;
	cls->event_desc.probe_desc = &cls->probe_desc;
	cls->event_desc.tp_class = &cls->tp_class;
	cls->event_descs[0] = &cls->event_desc;

	cls->probe_desc.struct_size = sizeof(cls->probe_desc);
	cls->probe_desc.provider_name = cls->provider;
	cls->probe_desc.event_desc = cls->event_descs;
	cls->probe_desc.nr_events = 1;
	cls->probe_desc.major = LTTNG_UST_PROVIDER_MAJOR;
	cls->probe_desc.minor = LTTNG_UST_PROVIDER_MINOR;

	cls->tp.struct_size = sizeof(cls->tp);
	cls->tp.provider_name = cls->provider;
	cls->tp.event_name = cls->event;
	cls->tp.signature = DPA_SIGNATURE;
	cls->tp_ptrs[0] = &cls->tp;
	return cls;
}

/*
 * Registers what is not registered yet (a failed step is retried by the next
 * dpa_class_get, never by a second class: lttng-sessiond may refuse an
 * identical layout twice).  Under dpa_lock.
 */
static int dpa_class_register(struct dpa_class *cls, struct dp_err *err)
{
	if (!cls->probe_registered) {
		if (!lttng_ust_probe_register(&cls->probe_desc)) {
			return dp_err_set(err, -EINVAL, "lttng-ust refused the event class");
		}
		cls->probe_registered = true;
	}
	if (!cls->site_registered) {
		if (lttng_ust_tracepoint_module_register(cls->tp_ptrs, 1)) {
			return dp_err_set(err, -ENOMEM, "lttng-ust refused the call site");
		}
		cls->site_registered = true;
	}
	return 0;
}

struct dpa_class *dpa_class_get(const char *name, const struct dp_field_desc *fields,
				size_t nfields, struct dp_err *err)
{
	struct dp_field_desc norm[DPA_CLASS_MAX_FIELDS];
	struct dpa_class *cls;
	size_t colon = 0;
	uint64_t hash;
	int ret;

	if (!name || (nfields && !fields)) {
		errno = -dp_err_set(err, -EINVAL, "no event name or no fields");
		return NULL;
	}
	if (nfields > DPA_CLASS_MAX_FIELDS) {
		errno = -dp_err_set(err, -EINVAL, "too many fields");
		return NULL;
	}
	ret = dpa_check_name(name, &colon, err);
	for (size_t i = 0; !ret && i < nfields; i++)
		ret = dpa_normalize(&fields[i], &norm[i], err);
	if (!ret)
		ret = dpa_check_unique(norm, nfields, err);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	hash = dpa_hash(0xcbf29ce484222325ull, name, strlen(name));
	hash = dpa_hash(hash, norm, nfields * sizeof(norm[0]));
	hash = dpa_hash(hash, &nfields, sizeof(nfields));

	pthread_mutex_lock(&dpa_lock);
	for (cls = dpa_cache[hash % DPA_CACHE_BUCKETS]; cls; cls = cls->next) {
		if (cls->hash == hash && cls->nfields == nfields && !strcmp(cls->name, name) &&
		    !memcmp(cls->layout, norm, nfields * sizeof(norm[0])))
			break;
	}
	if (!cls) {
		cls = dpa_class_new(name, colon, norm, nfields, hash);
		if (!cls) {
			ret = dp_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		ret = dpa_thunk_alloc(cls);
		if (ret) {
			dp_err_set(err, ret, "cannot map code for the probe callback");
			dpa_class_free(cls);
			goto out;
		}
		cls->tp_class.probe_callback = cls->cb;
		/* From here on the class is never freed: lttng-ust may hold it. */
		cls->next = dpa_cache[hash % DPA_CACHE_BUCKETS];
		dpa_cache[hash % DPA_CACHE_BUCKETS] = cls;
	}
	ret = dpa_class_register(cls, err);
out:
	pthread_mutex_unlock(&dpa_lock);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return cls;
}

bool dpa_class_enabled(const struct dpa_class *cls)
{
	return CMM_LOAD_SHARED(cls->tp.state) != 0;
}

const int *dpa_class_state(const struct dpa_class *cls)
{
	_Static_assert(sizeof(cls->tp.state) == sizeof(int), "tracepoint state is an int");
	return (const int *)&cls->tp.state;
}

/* ---- Recording ---------------------------------------------------------- */

/*
 * The filter interpreter's view of the payload: per filterable field, in
 * order, an int64 (sign- or zero-extended), a double, a string pointer, or
 * a sequence's length and pointer.
 */
static void dpa_filter_stack(const struct dpa_class *cls, const struct dpa_value *v, char *stack)
{
	for (uint32_t i = 0; i < cls->nfields; i++) {
		const struct dpa_fld *f = &cls->fld[i];

		switch (f->type) {
		case DP_FT_INT: {
			uint64_t u = v[i].u;
			unsigned shift = 64 - 8 * f->size;

			if (f->is_signed)
				u = (uint64_t)((int64_t)(u << shift) >> shift);
			else
				u = (u << shift) >> shift;
			memcpy(stack, &u, 8);
			stack += 8;
			break;
		}
		case DP_FT_DOUBLE:
			memcpy(stack, &v[i].d, 8);
			stack += 8;
			break;
		case DP_FT_STRING:
			memcpy(stack, &v[i].str.ptr, sizeof(void *));
			stack += sizeof(void *);
			break;
		case DP_FT_SEQ_U64: {
			unsigned long len = v[i].seq.len;

			memcpy(stack, &len, sizeof(len));
			memcpy(stack + sizeof(len), &v[i].seq.ptr, sizeof(void *));
			stack += sizeof(len) + sizeof(void *);
			break;
		}
		}
	}
}

/*
 * Writes the payload: runs of fixed-size fields are packed into `buf` and go
 * out in one write.  Integers are copied 8 bytes at a time (a single move)
 * and the cursor advances by their size: the next field overwrites the
 * excess, and on little-endian the low bytes, the ones kept, come first.
 *
 * Returns 1 when the trace accounts for the event: written, or refused by a
 * buffer that counts it as discarded (full: -ENOBUFS; too big: -ENOSPC;
 * wrapped: -EIO).  0 for the refusals lttng-ust counts nowhere (a buffer
 * being torn down, -EAGAIN; nested too deep, -EPERM).
 */
static inline __attribute__((always_inline)) unsigned
dpa_event_write(const struct dpa_class *cls, struct lttng_ust_event_recorder *rec,
		struct lttng_ust_probe_ctx *pctx, const struct dpa_value *v)
{
	struct lttng_ust_channel_buffer *chan = rec->chan;
	struct lttng_ust_ring_buffer_ctx ctx;
	uint8_t buf[8 * DPA_CLASS_MAX_FIELDS + 8];
	size_t len = cls->fixed_len, n = 0;
	int ret;

	if (cls->dynamic) {
		for (uint32_t i = 0; i < cls->nfields; i++) {
			if (cls->fld[i].type == DP_FT_STRING)
				len += (size_t)v[i].str.len + 1;
			else if (cls->fld[i].type == DP_FT_SEQ_U64)
				len += (size_t)v[i].seq.len * sizeof(uint64_t);
		}
	}
	lttng_ust_ring_buffer_ctx_init(&ctx, rec, len, 1, pctx);
	ret = chan->ops->event_reserve(&ctx);
	if (caa_unlikely(ret < 0))
		return ret == -ENOBUFS || ret == -ENOSPC || ret == -EIO;
	for (uint32_t i = 0; i < cls->nfields; i++) {
		switch (cls->fld[i].type) {
		case DP_FT_INT:
			memcpy(buf + n, &v[i].u, 8);
			n += cls->fld[i].size;
			break;
		case DP_FT_DOUBLE:
			memcpy(buf + n, &v[i].d, 8);
			n += 8;
			break;
		case DP_FT_STRING:
			if (n)
				chan->ops->event_write(&ctx, buf, n, 1);
			n = 0;
			/* Stops at an early NUL and pads: the size stays exact. */
			chan->ops->event_strcpy(&ctx, v[i].str.ptr, (size_t)v[i].str.len + 1);
			break;
		case DP_FT_SEQ_U64: {
			uint32_t count = v[i].seq.len;

			memcpy(buf + n, &count, sizeof(count));
			chan->ops->event_write(&ctx, buf, n + sizeof(count), 1);
			n = 0;
			if (count)
				chan->ops->event_write(&ctx, v[i].seq.ptr,
						       (size_t)count * sizeof(uint64_t), 1);
			break;
		}
		}
	}
	if (n)
		chan->ops->event_write(&ctx, buf, n, 1);
	chan->ops->event_commit(&ctx);
	return 1;
}

/* Whether the event's filter accepts these values.  Out of the hot path. */
static __attribute__((noinline)) bool
dpa_filter_accepts(const struct dpa_class *cls, struct lttng_ust_event_common *ev,
		   struct lttng_ust_probe_ctx *pctx, const struct dpa_value *values)
{
	char stack[2 * sizeof(unsigned long) * DPA_CLASS_MAX_FIELDS]
		__attribute__((aligned(sizeof(unsigned long))));

	dpa_filter_stack(cls, values, stack);
	return ev->run_filter(ev, stack, pctx, NULL) == LTTNG_UST_EVENT_FILTER_ACCEPT;
}

/* A trigger's event: filter, then a notification with its captures. */
static __attribute__((noinline)) void
dpa_event_notify(const struct dpa_class *cls, struct lttng_ust_event_common *ev,
		 struct lttng_ust_probe_ctx *pctx, const struct dpa_value *values)
{
	struct lttng_ust_event_notifier *notifier = ev->child;
	struct lttng_ust_notification_ctx nctx;
	char stack[2 * sizeof(unsigned long) * DPA_CLASS_MAX_FIELDS]
		__attribute__((aligned(sizeof(unsigned long))));
	bool prepared = false;

	if (CMM_ACCESS_ONCE(ev->eval_filter)) {
		dpa_filter_stack(cls, values, stack);
		prepared = true;
		if (ev->run_filter(ev, stack, pctx, NULL) != LTTNG_UST_EVENT_FILTER_ACCEPT)
			return;
	}
	nctx.struct_size = sizeof(nctx);
	nctx.eval_capture = CMM_ACCESS_ONCE(notifier->eval_capture);
	if (!prepared && nctx.eval_capture)
		dpa_filter_stack(cls, values, stack);
	notifier->notification_send(notifier, stack, pctx, &nctx);
}

/*
 * One lttng-ust event: a session's recorder (the hot path, inline), or a
 * trigger's notifier.  Event types newer than this code are ignored.
 * Returns how many events the session's trace accounts for (0 or 1: see
 * dpa_event_write); a notification is not one.
 */
static inline __attribute__((always_inline)) unsigned
dpa_event_fire(const struct dpa_class *cls, void *event, uint64_t ip,
	       const struct dpa_value *values)
{
	struct lttng_ust_event_common *ev = event;
	struct lttng_ust_probe_ctx pctx;

	if (caa_likely(ev->type == LTTNG_UST_EVENT_TYPE_RECORDER)) {
		struct lttng_ust_event_recorder *rec = ev->child;
		struct lttng_ust_channel_common *chan = rec->chan->parent;

		if (caa_unlikely(!CMM_ACCESS_ONCE(chan->session->active)) ||
		    caa_unlikely(!CMM_ACCESS_ONCE(chan->enabled)) ||
		    caa_unlikely(!CMM_ACCESS_ONCE(ev->enabled)))
			return 0;
		pctx.struct_size = sizeof(pctx);
		pctx.ip = (void *)(uintptr_t)ip;
		if (caa_unlikely(CMM_ACCESS_ONCE(ev->eval_filter)) &&
		    !dpa_filter_accepts(cls, ev, &pctx, values))
			return 0;
		return dpa_event_write(cls, rec, &pctx, values);
	} else if (ev->type == LTTNG_UST_EVENT_TYPE_NOTIFIER) {
		if (caa_unlikely(!CMM_ACCESS_ONCE(ev->enabled)))
			return 0;
		pctx.struct_size = sizeof(pctx);
		pctx.ip = (void *)(uintptr_t)ip;
		dpa_event_notify(cls, ev, &pctx, values);
	}
	return 0;
}

unsigned dpa_class_record(const struct dpa_class *cls, uint64_t ip, const struct dpa_value *values)
{
	struct lttng_ust_tracepoint_probe *p;
	unsigned n = 0;

	if (caa_likely(!CMM_LOAD_SHARED(cls->tp.state)))
		return 0;
	lttng_ust_urcu_read_lock();
	/* rcu_dereference, without a call into the library for a load. */
	p = CMM_LOAD_SHARED(cls->tp.probes);
	cmm_smp_read_barrier_depends();
	if (caa_likely(p != NULL)) {
		/* Same-named classes share the list: keep only our own events. */
		for (; p->func; p++) {
			if (p->func == cls->cb)
				n += dpa_event_fire(cls, p->data, ip, values);
		}
	}
	lttng_ust_urcu_read_unlock();
	return n;
}

/* ---- Process life ------------------------------------------------------- */

void dpa_events_thread_init(void)
{
	lttng_ust_init_thread();
	/* The RCU reader registration is the other lazy allocation. */
	lttng_ust_urcu_register_thread();
}

/*
 * fork(): lttng-ust must quiesce before and start over in the child (which
 * then registers as its own application, with its own vpid), as
 * liblttng-ust-fork.so does by wrapping fork().  The signal mask saved
 * before is restored after, by the same thread.
 */
static __thread sigset_t dpa_fork_sigset;
static bool dpa_fork_wrapped;

static void dpa_fork_prepare(void)
{
	pthread_mutex_lock(&dpa_lock);
	if (!dpa_fork_wrapped)
		lttng_ust_before_fork(&dpa_fork_sigset);
}

static void dpa_fork_parent(void)
{
	if (!dpa_fork_wrapped)
		lttng_ust_after_fork_parent(&dpa_fork_sigset);
	pthread_mutex_unlock(&dpa_lock);
}

static void dpa_fork_child(void)
{
	/* The only thread now: whoever held the lock in the parent is gone. */
	pthread_mutex_init(&dpa_lock, NULL);
	if (!dpa_fork_wrapped)
		lttng_ust_after_fork_child(&dpa_fork_sigset);
}

__attribute__((constructor)) static void dpa_events_ctor(void)
{
	void *h;

	/*
	 * liblttng-ust-fork.so (preloaded) already does this around fork();
	 * doing it twice would take lttng-ust's fork mutex twice.
	 */
	h = dlopen("liblttng-ust-fork.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		dpa_fork_wrapped = true;
		dlclose(h);
	}
	pthread_atfork(dpa_fork_prepare, dpa_fork_parent, dpa_fork_child);
}
