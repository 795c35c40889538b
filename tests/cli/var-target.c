/*
 * Variables by name for test-vars.sh, built with -O2 -g (DWARF 5, and
 * -gdwarf-4): each function prints the values it holds, so the test
 * compares the trace with what the program itself said.  The asm labels
 * mark probe sites inside functions (lexical blocks, after a call); each
 * asm names the values it needs in registers so that they are live there.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each function stays one out-of-line body (its asm label once): gcc's
 * noipa, clang's noinline (clang 14 clones nothing). */
#ifdef __clang__
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

struct req {
	int id;
	long len;
	const char *name;
	char tag[8];
	double ratio;
	struct req *next;
};

struct cfg {
	int opts[4];
	unsigned short port;
};

enum color { RED = 1, GREEN = 2, BLUE = 7 };

struct flags {
	unsigned int ready : 1;
	int level : 4;
	unsigned int code : 11;
	int delta : 7;
	unsigned char tail;
};

struct pair {
	int a;
	int b;
};

static struct cfg config;
int counter_global;
__thread long tls_counter;

long ext(long v);
long handle(struct req *req, int n, enum color c, bool flag, float scale, double dd,
	    unsigned char small, short sh);
long loclist(long v);
int blocks(int a);
long stacked(long seed);
int pieces(int x, int y);
int dropped(int x);
long inl_a(long v);
int bitfields(const struct flags *f);
long inl_b(long v);

NOIPA long ext(long v)
{
	return v + 1;
}

NOIPA long handle(struct req *req, int n, enum color c, bool flag, float scale,
				   double dd, unsigned char small, short sh)
{
	printf("handle len=%ld n=%d name=%s tag=%s c=%d flag=%d scale=%g dd=%g small=%u sh=%d "
	       "ratio=%g id=%d next_id=%d\n", req->len, n, req->name, req->tag, (int)c, (int)flag,
	       (double)scale, dd, (unsigned)small, (int)sh, req->ratio, req->id, req->next->id);
	printf("handle opts2=%d port=%u counter=%d tls=%ld\n", config.opts[2], config.port,
	       counter_global, tls_counter);
	return req->len * n + c + flag + (long)(scale * dd) + small + sh;
}

/* v is in rdi at the entry, in a callee-saved register after the call. */
NOIPA long loclist(long v)
{
	long r = ext(v);

	__asm__ volatile("loclist_site: nop" : : "r"(v), "r"(r));
	printf("loclist v=%ld r=%ld\n", v, r);
	return r + v;
}

/* The inner x hides the outer one in the block. */
NOIPA int blocks(int a)
{
	int x = a + 1;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
	{
		int x = a * 100;

		__asm__ volatile("block_site: nop" : : "r"(x));
		printf("blocks inner=%d\n", x);
	}
#pragma GCC diagnostic pop
	printf("blocks outer=%d\n", x);
	return x;
}

/* A local on the stack (its address escapes). */
NOIPA long stacked(long seed)
{
	long arr[4] = { seed, seed + 1, seed + 2, seed + 3 };
	volatile int onstack = (int)seed * 3;

	__asm__ volatile("stack_site: nop" : : "r"(arr) : "memory");
	printf("stacked onstack=%d arr2=%ld\n", onstack, arr[2]);
	return arr[0] + arr[3] + onstack;
}

/* A struct split into registers: DW_OP_piece. */
NOIPA int pieces(int x, int y)
{
	struct pair p = { x * 2, y * 3 };

	__asm__ volatile("piece_site: nop" : : "r"(p.a), "r"(p.b));
	printf("pieces a=%d b=%d\n", p.a, p.b);
	return p.a + p.b;
}

/* A value the compiler drops. */
NOIPA int dropped(int x)
{
	int gone __attribute__((unused)) = (int)ext(x);

	__asm__ volatile("dropped_site: nop");
	return x + 1;
}

/* Bit-fields, signed and not, through a pointer. */
NOIPA int bitfields(const struct flags *f)
{
	printf("bitfields ready=%u level=%d code=%u delta=%d tail=%u\n", f->ready, f->level,
	       f->code, f->delta, f->tail);
	return f->level + f->delta;
}

/* Inlined into two callers: its parameters live where each caller put
 * them (f a constant there). */
static inline __attribute__((always_inline)) long scale_by(long v, int f)
{
	return ext(v * f) + f;
}

NOIPA long inl_a(long v)
{
	printf("inline v=%ld f=2\n", v);
	return scale_by(v, 2);
}

NOIPA long inl_b(long v)
{
	printf("inline v=%ld f=5\n", v + 1);
	return scale_by(v + 1, 5);
}

int main(int argc, char **argv)
{
	struct req next = { .id = 99 };
	struct req req = { .next = &next };
	long k = argc > 1 ? atol(argv[1]) : 5;

	req.id = (int)k;
	req.len = k * 1000 + 7;
	req.name = argc > 2 ? argv[2] : "noname";
	snprintf(req.tag, sizeof(req.tag), "t%ld", k);
	req.ratio = (double)k / 4;
	config.opts[2] = (int)k * 11;
	config.port = 8080;
	counter_global = (int)k + 100;
	tls_counter = k * 1000000 + 1;
	printf("handle ret=%ld\n",
	       handle(&req, (int)k + 1, BLUE, true, (float)k / 2, (double)k * 1.5, 200, -3));
	loclist(k * 7);
	blocks((int)k);
	stacked(k + 40);
	pieces((int)k, (int)k + 1);
	dropped((int)k);
	{
		struct flags fl = { .ready = 1, .level = -3, .code = (unsigned)(k * 100) % 2048,
				    .delta = (int)-k, .tail = 42 };

		bitfields(&fl);
	}
	inl_a(k);
	inl_b(k * 2);
	return 0;
}
