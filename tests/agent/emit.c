/*
 * events-emit: records events through the agent's runtime event classes
 * (src/lib/lttng-ust-dynprobe/events.c, compiled in), with values the shell
 * tests know, for them to find in the trace.
 *
 *   events-emit types             every field type, two events (IP 0x401000,
 *                                 0x401010), and a class without fields
 *   events-emit filter N          N events: n, vals = [n, n + 1], neg = -n,
 *                                 parity, half = n / 2, hexv = 16 n
 *   events-emit threads T N       T threads record N events each
 *   events-emit fork              the parent, then a child, record events
 *   events-emit same              two classes named dptest:same, two layouts
 *   events-emit trigger N         N events: value = n, name = "vN", neg = -n
 *   events-emit bench N           ns per event: a static tracepoint against
 *                                 a runtime class, both one integer
 *
 * Each prints what the tests compare with (pids, counts) on stdout, and
 * "enabled 0|1" for every class it made: whether lttng-ust had connected it
 * to a session once dpa_class_get returned.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "events.h"

#define LTTNG_UST_TRACEPOINT_DEFINE
#include "tp-static.h"

#define IP_TYPES 0x401000u

static struct dpa_class *get_class(const char *name, const struct dp_field_desc *f, size_t n)
{
	struct dp_err err = DP_ERR_INIT;
	struct dpa_class *cls = dpa_class_get(name, f, n, &err);

	if (!cls) {
		fprintf(stderr, "dpa_class_get %s: %s (%s)\n", name, err.msg[0] ? err.msg : "?", strerror(errno));
		exit(2);
	}
	printf("enabled %s %d\n", name, dpa_class_enabled(cls));
	return cls;
}

static struct dp_field_desc fint(const char *name, unsigned size, bool is_signed, bool hex)
{
	struct dp_field_desc f = { .type = DP_FT_INT, .size = (uint8_t)size,
				   .is_signed = is_signed, .hex = hex };

	snprintf(f.name, sizeof(f.name), "%s", name);
	return f;
}

static struct dp_field_desc fother(const char *name, enum dp_ftype type, bool hex)
{
	struct dp_field_desc f = { .type = (uint8_t)type, .hex = hex };

	snprintf(f.name, sizeof(f.name), "%s", name);
	return f;
}

static struct dpa_value vu(uint64_t u)
{
	return (struct dpa_value){ .u = u };
}

static struct dpa_value vs(const char *s)
{
	return (struct dpa_value){ .str = { s, (uint32_t)strlen(s) } };
}

static struct dpa_value vseq(const uint64_t *p, uint32_t n)
{
	return (struct dpa_value){ .seq = { p, n } };
}

static struct dpa_value vd(double d)
{
	return (struct dpa_value){ .d = d };
}

static int cmd_types(void)
{
	const struct dp_field_desc f[] = {
		fint("i8", 1, true, false), fint("u8", 1, false, false),
		fint("i16", 2, true, false), fint("u16", 2, false, false),
		fint("i32", 4, true, false), fint("u32", 4, false, false),
		fint("i64", 8, true, false), fint("u64", 8, false, false),
		fint("x8", 1, false, true), fint("x16", 2, false, true),
		fint("x32", 4, false, true), fint("x64", 8, false, true),
		fother("s", DP_FT_STRING, false), fother("empty", DP_FT_STRING, false),
		fother("seq", DP_FT_SEQ_U64, false), fother("xseq", DP_FT_SEQ_U64, true),
		fother("noseq", DP_FT_SEQ_U64, false), fother("d", DP_FT_DOUBLE, false),
	};
	const uint64_t seq[] = { 0, 1, UINT64_MAX }, xseq[] = { 0x10, 0xff };
	struct dpa_class *cls = get_class("dptest:types", f, sizeof(f) / sizeof(f[0]));
	/* Extremes, then values wider than their fields (the low bytes count). */
	const struct dpa_value v1[] = {
		vu((uint64_t)INT8_MIN), vu(UINT8_MAX), vu((uint64_t)INT16_MIN), vu(UINT16_MAX),
		vu((uint64_t)INT32_MIN), vu(UINT32_MAX), vu((uint64_t)INT64_MIN), vu(UINT64_MAX),
		vu(0xab), vu(0xbeef), vu(0xdeadbeef), vu(0x0123456789abcdefull),
		vs("hello, world"), vs(""), vseq(seq, 3), vseq(xseq, 2), vseq(NULL, 0), vd(-2.5),
	};
	const struct dpa_value v2[] = {
		vu(0x17f), vu(0x1234), vu(0xffffffffffff8001ull), vu(0x10002),
		vu(0xffffffff), vu(0x100000007ull), vu(42), vu(0),
		vu(0x1ff), vu(0x10001), vu(0), vu(0xfedcba9876543210ull),
		vs("second"), vs("x"), vseq(seq + 2, 1), vseq(xseq, 1), vseq(NULL, 0), vd(0.125),
	};

	dpa_class_record(cls, IP_TYPES, v1);
	dpa_class_record(cls, IP_TYPES + 0x10, v2);
	/* And an event with no payload at all. */
	dpa_class_record(get_class("dptest:nofields", NULL, 0), IP_TYPES + 0x20, NULL);
	return 0;
}

static int cmd_filter(unsigned n)
{
	/* A sequence early: the filter's view of the later fields skips its length. */
	const struct dp_field_desc f[] = {
		fint("n", 4, false, false), fother("vals", DP_FT_SEQ_U64, false),
		fint("neg", 4, true, false), fother("parity", DP_FT_STRING, false),
		fother("half", DP_FT_DOUBLE, false), fint("hexv", 8, false, true),
	};
	struct dpa_class *cls = get_class("dptest:filter", f, sizeof(f) / sizeof(f[0]));

	for (unsigned i = 0; i < n; i++) {
		const uint64_t vals[] = { i, i + 1 };
		const struct dpa_value v[] = {
			vu(i), vseq(vals, 2), vu((uint64_t)-(int64_t)i),
			vs(i % 2 ? "odd" : "even"), vd(i / 2.0), vu(16 * (uint64_t)i),
		};

		dpa_class_record(cls, 0x402000, v);
	}
	return 0;
}

struct thread_arg {
	struct dpa_class *cls;
	unsigned id, n;
	pthread_t tid;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	dpa_events_thread_init();
	for (unsigned i = 0; i < a->n; i++) {
		const struct dpa_value v[] = { vu(a->id), vu(i) };

		dpa_class_record(a->cls, 0x403000, v);
	}
	return NULL;
}

static int cmd_threads(unsigned t, unsigned n)
{
	const struct dp_field_desc f[] = { fint("thread", 4, false, false),
					   fint("i", 8, false, false) };
	struct dpa_class *cls = get_class("dptest:threads", f, 2);
	struct thread_arg *a = calloc(t, sizeof(*a));
	struct timespec t0, t1;

	if (!a)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < t; i++) {
		a[i] = (struct thread_arg){ .cls = cls, .id = i, .n = n };
		if (pthread_create(&a[i].tid, NULL, thread_main, &a[i]))
			return 2;
	}
	for (unsigned i = 0; i < t; i++)
		pthread_join(a[i].tid, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("recorded %llu in %.3f s\n", (unsigned long long)t * n,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	free(a);
	return 0;
}

static int cmd_fork(void)
{
	const struct dp_field_desc f[] = { fint("pid", 4, true, false),
					   fother("who", DP_FT_STRING, false) };
	struct dpa_class *cls = get_class("dptest:fork", f, 2);
	pid_t child;
	int status;

	{
		const struct dpa_value v[] = { vu((uint64_t)getpid()), vs("parent") };

		dpa_class_record(cls, 0x404000, v);
	}
	fflush(stdout);
	child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		const struct dpa_value v[] = { vu((uint64_t)getpid()), vs("child") };

		printf("child %d enabled %d\n", (int)getpid(), dpa_class_enabled(cls));
		for (int i = 0; i < 3; i++)
			dpa_class_record(cls, 0x404000, v);
		exit(0);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return 2;
	{
		const struct dpa_value v[] = { vu((uint64_t)getpid()), vs("parent-after") };

		dpa_class_record(cls, 0x404000, v);
	}
	printf("parent %d child %d\n", (int)getpid(), (int)child);
	return 0;
}

static int cmd_same(void)
{
	const struct dp_field_desc fa[] = { fint("a", 4, false, false),
					    fother("tag", DP_FT_STRING, false) };
	const struct dp_field_desc fb[] = { fint("b", 8, false, false),
					    fother("list", DP_FT_SEQ_U64, false),
					    fint("c", 2, true, false) };
	struct dpa_class *a = get_class("dptest:same", fa, 2);
	struct dpa_class *b = get_class("dptest:same", fb, 3);
	const uint64_t list[] = { 7, 8 };

	dpa_class_record(a, 0x405000, (const struct dpa_value[]){ vu(1), vs("first") });
	dpa_class_record(b, 0x405010, (const struct dpa_value[]){ vu(2), vseq(list, 2),
								 vu((uint64_t)-3) });
	dpa_class_record(a, 0x405000, (const struct dpa_value[]){ vu(3), vs("third") });
	return 0;
}

static int cmd_trigger(unsigned n)
{
	const struct dp_field_desc f[] = { fint("value", 8, false, false),
					   fother("name", DP_FT_STRING, false),
					   fint("neg", 4, true, false) };
	struct dpa_class *cls = get_class("dptest:trig", f, 3);

	for (unsigned i = 0; i < n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "v%u", i);
		dpa_class_record(cls, 0x406000,
				 (const struct dpa_value[]){ vu(i), vs(name),
							   vu((uint64_t)-(int64_t)i) });
	}
	return 0;
}

/* This thread's CPU time: time spent preempted by other tests is not counted. */
static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * Short alternating rounds of each, keeping each one's best round: the
 * machine's noise only ever adds time.
 */
static int cmd_bench(unsigned n)
{
	const struct dp_field_desc f[] = { fint("v", 8, false, false) };
	struct dpa_class *cls = get_class("dptest:bench", f, 1);
	double best_static = 1e30, best_class = 1e30, t;

	if (!lttng_ust_tracepoint_enabled(dptest_static, tick) || !dpa_class_enabled(cls)) {
		fprintf(stderr, "bench: both events must be enabled in an active session\n");
		return 2;
	}
	for (int round = 0; round < 31; round++) {
		t = now_ns();
		for (unsigned i = 0; i < n; i++)
			lttng_ust_tracepoint(dptest_static, tick, i);
		t = (now_ns() - t) / n;
		if (t < best_static)
			best_static = t;

		t = now_ns();
		for (unsigned i = 0; i < n; i++) {
			struct dpa_value v = { .u = i };

			dpa_class_record(cls, 0x407000, &v);
		}
		t = (now_ns() - t) / n;
		if (t < best_class)
			best_class = t;
	}
	printf("static_ns %.1f\nclass_ns %.1f\nratio %.3f\n", best_static, best_class,
	       best_class / best_static);
	return 0;
}

static unsigned arg_uint(int argc, char **argv, int i)
{
	char *end;
	unsigned long v;

	if (i >= argc) {
		fprintf(stderr, "%s: missing number\n", argv[1]);
		exit(2);
	}
	v = strtoul(argv[i], &end, 0);
	if (*end || v > 100000000ul) {
		fprintf(stderr, "%s: bad number %s\n", argv[1], argv[i]);
		exit(2);
	}
	return (unsigned)v;
}

int main(int argc, char **argv)
{
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: events-emit types|filter|threads|fork|same|trigger|bench\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	dpa_events_thread_init();
	if (!strcmp(argv[1], "types"))
		ret = cmd_types();
	else if (!strcmp(argv[1], "filter"))
		ret = cmd_filter(arg_uint(argc, argv, 2));
	else if (!strcmp(argv[1], "threads"))
		ret = cmd_threads(arg_uint(argc, argv, 2), arg_uint(argc, argv, 3));
	else if (!strcmp(argv[1], "fork"))
		ret = cmd_fork();
	else if (!strcmp(argv[1], "same"))
		ret = cmd_same();
	else if (!strcmp(argv[1], "trigger"))
		ret = cmd_trigger(arg_uint(argc, argv, 2));
	else if (!strcmp(argv[1], "bench"))
		ret = cmd_bench(arg_uint(argc, argv, 2));
	else {
		fprintf(stderr, "events-emit: unknown command %s\n", argv[1]);
		ret = 2;
	}
	return ret;
}
