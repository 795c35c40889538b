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

struct pair {
	int a;
	int b;
};

static struct cfg config;
int counter_global;

long ext(long v);
long handle(struct req *req, int n, enum color c, bool flag, float scale, double dd,
	    unsigned char small, short sh);
long loclist(long v);
int blocks(int a);
long stacked(long seed);
int pieces(int x, int y);
int dropped(int x);
long inl_a(long v);
long inl_b(long v);

__attribute__((noipa)) long ext(long v)
{
	return v + 1;
}

__attribute__((noipa)) long handle(struct req *req, int n, enum color c, bool flag, float scale,
				   double dd, unsigned char small, short sh)
{
	printf("handle len=%ld n=%d name=%s tag=%s c=%d flag=%d scale=%g dd=%g small=%u sh=%d "
	       "ratio=%g id=%d next_id=%d\n", req->len, n, req->name, req->tag, (int)c, (int)flag,
	       (double)scale, dd, (unsigned)small, (int)sh, req->ratio, req->id, req->next->id);
	printf("handle opts2=%d port=%u counter=%d\n", config.opts[2], config.port,
	       counter_global);
	return req->len * n + c + flag + (long)(scale * dd) + small + sh;
}

/* v is in rdi at the entry, in a callee-saved register after the call. */
__attribute__((noipa)) long loclist(long v)
{
	long r = ext(v);

	__asm__ volatile("loclist_site: nop" : : "r"(v), "r"(r));
	printf("loclist v=%ld r=%ld\n", v, r);
	return r + v;
}

/* The inner x hides the outer one in the block. */
__attribute__((noipa)) int blocks(int a)
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
__attribute__((noipa)) long stacked(long seed)
{
	long arr[4] = { seed, seed + 1, seed + 2, seed + 3 };
	volatile int onstack = (int)seed * 3;

	__asm__ volatile("stack_site: nop" : : "r"(arr) : "memory");
	printf("stacked onstack=%d arr2=%ld\n", onstack, arr[2]);
	return arr[0] + arr[3] + onstack;
}

/* A struct split into registers: DW_OP_piece. */
__attribute__((noipa)) int pieces(int x, int y)
{
	struct pair p = { x * 2, y * 3 };

	__asm__ volatile("piece_site: nop" : : "r"(p.a), "r"(p.b));
	printf("pieces a=%d b=%d\n", p.a, p.b);
	return p.a + p.b;
}

/* A value the compiler drops. */
__attribute__((noipa)) int dropped(int x)
{
	int gone __attribute__((unused)) = (int)ext(x);

	__asm__ volatile("dropped_site: nop");
	return x + 1;
}

/* Inlined into two callers: its parameters live where each caller put
 * them (f a constant there). */
static inline __attribute__((always_inline)) long scale_by(long v, int f)
{
	return ext(v * f) + f;
}

__attribute__((noipa)) long inl_a(long v)
{
	printf("inline v=%ld f=2\n", v);
	return scale_by(v, 2);
}

__attribute__((noipa)) long inl_b(long v)
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
	printf("handle ret=%ld\n",
	       handle(&req, (int)k + 1, BLUE, true, (float)k / 2, (double)k * 1.5, 200, -3));
	loclist(k * 7);
	blocks((int)k);
	stacked(k + 40);
	pieces((int)k, (int)k + 1);
	dropped((int)k);
	inl_a(k);
	inl_b(k * 2);
	return 0;
}
