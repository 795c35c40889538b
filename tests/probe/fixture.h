/*
 * The functions the probe tests put probes on (fixture.S, fixture-fp.c,
 * fixture-nofp.c), and what they leave behind for the tests to compare the
 * recorded events with.
 */
#ifndef DP_TESTS_PROBE_FIXTURE_H
#define DP_TESTS_PROBE_FIXTURE_H

#include <stdint.h>

/* fixture.S */
long fx_locals(int a, long b);
int fx_int3(int n);
int fx_int3_alt(int n);	/* enters fx_int3 at entry+1 */
void fx_regs_jump(void);
void fx_regs_int3(void);
void fx_regs_one_ah(void);
void fx_regs_one_rdi(void);
void fx_regs_fast(void);
extern uint64_t fx_locals_site, fx_locals_site2, fx_locals_ret, fx_locals_ra;
extern uint64_t fx_regs_jump_site, fx_regs_int3_site, fx_regs_rsp;
extern uint64_t fx_regs_one_ah_site, fx_regs_one_rdi_site, fx_regs_fast_site;
extern uint64_t fx_regs_after[18];	/* dp_regs order; [17] rflags */

/* The values fx_regs_* load, in dp_regs order (rsp excluded: fx_regs_rsp);
 * xmm0 gets r8's and xmm15 r15's in its low 64 bits. */
#define FX_REGS_FLAGS 0x246ull
static const uint64_t fx_regs_value[16] = {
	0x1111111111111180ull, 0x2222222222222222ull, 0x3333333333333333ull,
	0x4444444444444444ull, 0, 0x5555555555555555ull, 0x6666666666666666ull,
	0x7777777777777777ull, 0x8888888888888888ull, 0x9999999999999999ull,
	0xaaaaaaaaaaaaaaaaull, 0xbbbbbbbbbbbbbbbbull, 0xccccccccccccccccull,
	0xddddddddddddddddull, 0xeeeeeeeeeeeeeeeeull, 0x0123456789abcdefull,
};

/* A structure the memory contexts read through rdi. */
struct fx_inner {
	long a, v;
};

struct fx_thing {
	int32_t i;			/* 0 */
	uint16_t u16;			/* 4 */
	uint64_t h;			/* 8 */
	int8_t neg;			/* 16 */
	const char *name;		/* 24 */
	struct fx_inner *inner;		/* 32 */
	const char *unreadable;		/* 40: a PROT_NONE page */
	const char *runs_out;		/* 48: no NUL before a PROT_NONE page */
	const char *longstr;		/* 56 */
	int32_t *heap_int;		/* 64 */
	uint8_t h8;			/* 72 */
	int16_t *null_ptr;		/* 80 */
};

/* fixture-fp.c: frame pointers kept. */
long fx_args(struct fx_thing *t, const char *s, long neg, unsigned long big, int a5, int a6,
	     long a7, unsigned long a8);
long fp_level1(long x);
long fp_level2(long x);
long fp_level3(long x);
long fx_noctx(long x);
long fx_thread(long id, const char *s);
long fx_forked(long x);
long fx_disabled(long x);
double fx_values(struct fx_thing *t, double d, float f);
extern void *fp_ra[4];		/* [k]: fp_levelk's return address */

/* fixture-nofp.c: no frame pointers. */
long nf_level1(long x);
long nf_level2(long x);
long nf_level3(long x);
extern void *nf_ra[4];
/* nf_deep(n, x) calls itself n times, then nf_leaf: x + 1 + n. */
long nf_deep(long n, long x);
long nf_leaf(long x);
/* A signal handler (installed by nf_signal_main) and what raises its signal. */
void nf_on_signal(int sig);
long nf_signal_main(long x);
/* A PLT entry's shape and CFI expression (16-aligned): the push of its
 * relocation index ends at nf_plt_like_pushed, offset 11. */
void nf_plt_like(void);
extern const char nf_plt_like_pushed[];

#endif /* DP_TESTS_PROBE_FIXTURE_H */
