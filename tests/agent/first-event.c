/*
 * first-event: the first event of a thread allocates nothing once the
 * thread went through dpa_events_thread_init, in a process that loaded the
 * event code (and so liblttng-ust) with dlopen(), as an injected agent is
 * loaded: there, lttng-ust's thread-local storage is allocated by the
 * dynamic loader on a thread's first touch, with malloc.
 *
 *   first-event MODULE      MODULE: a shared object holding events.c
 *
 * This program replaces malloc and friends to count, per thread, the calls
 * made while a flag is set around one dpa_class_record.  It prints
 *   enabled 0|1
 *   initialized <mallocs during the first event of an initialized thread>
 *   uninitialized <mallocs during the first event of a plain thread>
 * (the second one shows that the count sees lttng-ust's allocations).
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

/* glibc's own allocator, under the names it exports for this purpose. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

static __thread int counting;
static __thread unsigned allocations;

static void count(void)
{
	if (counting)
		allocations++;
}

void *malloc(size_t size)
{
	count();
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	count();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	count();
	return __libc_realloc(p, size);
}

void *memalign(size_t align, size_t size)
{
	count();
	return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	count();
	return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	count();
	p = __libc_memalign(align, size);
	if (!p)
		return 12;	/* ENOMEM */
	*out = p;
	return 0;
}

void free(void *p)
{
	__libc_free(p);
}

static struct dpa_class *(*get)(const char *, const struct dp_field_desc *, size_t,
				struct dp_err *);
static void (*record)(const struct dpa_class *, uint64_t, const struct dpa_value *);
static void (*thread_init)(void);
static bool (*enabled)(const struct dpa_class *);
static struct dpa_class *cls;

struct run {
	bool init;
	unsigned allocations;
};

static void *thread_main(void *p)
{
	struct run *r = p;
	struct dpa_value v = { .u = r->init };

	if (r->init)
		thread_init();
	counting = 1;
	record(cls, 0x408000, &v);
	counting = 0;
	r->allocations = allocations;
	return NULL;
}

static int run_thread(bool init, unsigned *allocs)
{
	struct run r = { .init = init };
	pthread_t t;

	if (pthread_create(&t, NULL, thread_main, &r) || pthread_join(t, NULL))
		return -1;
	*allocs = r.allocations;
	return 0;
}

int main(int argc, char **argv)
{
	struct dp_field_desc f = { .name = "initialized", .type = DP_FT_INT, .size = 1 };
	struct dp_err err = DP_ERR_INIT;
	unsigned with, without;
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: first-event MODULE\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "first-event: %s\n", dlerror());
		return 2;
	}
	*(void **)&get = dlsym(h, "dpa_class_get");
	*(void **)&record = dlsym(h, "dpa_class_record");
	*(void **)&thread_init = dlsym(h, "dpa_events_thread_init");
	*(void **)&enabled = dlsym(h, "dpa_class_enabled");
	if (!get || !record || !thread_init || !enabled) {
		fprintf(stderr, "first-event: %s lacks the events API\n", argv[1]);
		return 2;
	}
	cls = get("dptest:first", &f, 1, &err);
	if (!cls) {
		fprintf(stderr, "first-event: dpa_class_get: %s\n", err.msg);
		return 2;
	}
	printf("enabled %d\n", enabled(cls));
	if (run_thread(true, &with) || run_thread(false, &without))
		return 2;
	printf("initialized %u\nuninitialized %u\n", with, without);
	return 0;
}
