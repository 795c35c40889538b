/*
 * In-process installation of patches (see inproc.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "patch/inproc.h"
#include "patch/sigregs.h"

/* The site at run-time addresses, its original bytes still in place. */
static int site_init(struct dp_inproc_site *site, const struct dp_patch *plan, uint64_t bias,
		     dp_handler_fn handler, void *const *args)
{
	memset(site, 0, sizeof(*site));
	site->method = plan->method;
	site->win = plan->win;
	site->win.addr += bias;
	site->npoints = plan->npoints;
	site->handler = handler;
	for (unsigned i = 0; i < plan->npoints; i++) {
		site->points[i] = plan->points[i] + bias;
		site->args[i] = args[i];
	}
	/* The bytes must still be what the plan read from the file. */
	if (memcmp((const void *)(uintptr_t)site->win.addr, plan->win.bytes, plan->win.len))
		return -ESTALE;
	if (site->method == DP_SITE_JUMP && site->win.len < DP_HOP_LEN &&
	    (plan->hop.len != DP_HOP_LEN || site->win.len < DP_HOP_SITE_LEN))
		return -EINVAL;
	if (plan->hop.len) {
		if (plan->hop.len != DP_HOP_LEN || site->method == DP_SITE_INT3 ||
		    plan->hop_to >= site->win.ninsns)
			return -EINVAL;
		site->hop = plan->hop;
		site->hop.addr += bias;
		site->hop_to = plan->hop_to;
		if (memcmp((const void *)(uintptr_t)site->hop.addr, plan->hop.bytes, DP_HOP_LEN))
			return -ESTALE;
	}
	if (plan->nredirects > DP_PATCH_MAX_REDIRECTS ||
	    (plan->nredirects && site->method == DP_SITE_INT3))
		return -EINVAL;
	site->nredirects = plan->nredirects;
	for (unsigned i = 0; i < plan->nredirects; i++) {
		struct dp_redirect *r = &site->redirects[i];

		*r = plan->redirects[i];
		r->addr += bias;
		if (r->disp_off + r->disp_len != r->len || r->disp_len > sizeof(r->bytes) ||
		    r->to >= site->win.ninsns ||
		    memcmp((const void *)(uintptr_t)(r->addr + r->disp_off), r->bytes, r->disp_len))
			return -ESTALE;
	}
	return 0;
}

/* Where a branch led to displaced instruction m goes: its hooks, then its copy. */
static uint64_t tramp_dest(const struct dp_inproc_site *site, unsigned m)
{
	return m ? site->tramp.insn_at[m] : site->tramp.entry;
}

/*
 * Each redirected branch's new displacement: to the hop (rel8) or the
 * trampoline (rel32); the hop of a jump whose window has room for its own
 * jmp rel32 serves those rel8s, to the instruction it leads to.
 */
static int redirects_fill(struct dp_inproc_site *site, struct dp_patch_bytes *b)
{
	int ret;

	if (site->hop.len && site->method == DP_SITE_JUMP && site->win.len >= DP_HOP_LEN) {
		ret = dp_hop_bytes(site->hop.addr, tramp_dest(site, site->hop_to), b->hop);
		if (ret)
			return ret;
		b->hop_len = DP_HOP_LEN;
	}
	for (unsigned i = 0; i < site->nredirects; i++) {
		const struct dp_redirect *r = &site->redirects[i];
		uint64_t to = r->disp_len == 1 ? site->hop.addr : tramp_dest(site, r->to);

		if (r->disp_len == 1 && (!site->hop.len || r->to != site->hop_to))
			return -EINVAL;
		ret = dp_redirect_bytes(r, r->addr, to, site->redirect_new[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* Writes each redirected branch's new (or original) displacement. */
static int redirects_write(struct dp_code_pool *pool, const struct dp_inproc_site *site,
			   bool original)
{
	int ret = 0;

	for (unsigned i = 0; i < site->nredirects && !ret; i++) {
		const struct dp_redirect *r = &site->redirects[i];

		ret = dp_code_write(pool, r->addr + r->disp_off,
				    original ? r->bytes : site->redirect_new[i], r->disp_len);
	}
	return ret;
}

/* Builds the trampoline in the pool near the site and writes it. */
static int tramp_put(struct dp_code_pool *pool, struct dp_inproc_site *site,
		     enum dp_vec_save vec, enum dp_reason *why)
{
	struct dp_tramp_hook hooks[DP_PATCH_MAX_POINTS];
	size_t nhooks = site->method != DP_SITE_INT3 ? site->npoints : 0;
	size_t cap = dp_tramp_max_len(nhooks, vec);
	struct dp_tramp tramp;
	struct dp_emit e;
	uint8_t *code;
	uint64_t at;
	int ret;

	for (unsigned i = 0; i < site->npoints; i++)
		hooks[i] = (struct dp_tramp_hook){ .addr = site->points[i], .arg = site->args[i] };
	code = malloc(cap);
	if (!code)
		return -ENOMEM;
	ret = dp_code_pool_alloc(pool, site->win.addr, cap, &at);
	if (ret)
		goto out;
	dp_emit_init(&e, code, cap, at);
	ret = dp_tramp_build(&e, &site->win, hooks, nhooks, site->handler, vec, &tramp, why);
	if (ret)
		goto out;
	dp_code_pool_trim(pool, at, cap, tramp.len);
	ret = dp_code_write(pool, at, code, tramp.len);
	if (!ret)
		site->tramp = tramp;
out:
	free(code);
	return ret;
}

/* Leads the relocated copy of each branch via names to that entry instead. */
static int via_apply(struct dp_inproc_site *site, const uint64_t *via)
{
	for (unsigned i = 0; via && i < site->win.ninsns; i++) {
		struct dp_insn *in = &site->win.insns[i];
		uint64_t end = site->win.addr + site->win.off[i] + in->len;
		int64_t d = (int64_t)(via[i] - end);

		if (!via[i])
			continue;
		if (!(in->attr & DP_ATTR_REL) ||
		    (in->flow != DP_FLOW_JMP && in->flow != DP_FLOW_JCC && in->flow != DP_FLOW_LOOP))
			return -EINVAL;
		if (d < INT32_MIN || d > INT32_MAX)
			return -ERANGE;
		in->rel = (int32_t)d;
	}
	return 0;
}

int dp_inproc_prepare(struct dp_code_pool *pool, struct dp_inproc_site *site,
		      const struct dp_patch *plan, uint64_t bias, dp_handler_fn handler,
		      void *const *args, enum dp_vec_save vec, enum dp_reason *why)
{
	return dp_inproc_prepare_via(pool, site, plan, bias, handler, args, vec, NULL, why);
}

int dp_inproc_prepare_via(struct dp_code_pool *pool, struct dp_inproc_site *site,
			  const struct dp_patch *plan, uint64_t bias, dp_handler_fn handler,
			  void *const *args, enum dp_vec_save vec,
			  const uint64_t via[DP_WINDOW_MAX_INSNS], enum dp_reason *why)
{
	struct dp_patch_place place;
	struct dp_patch_bytes patch;
	int ret;

	*why = DP_REASON_NONE;
	if (plan->method == DP_SITE_REFUSED) {
		memset(site, 0, sizeof(*site));
		*why = plan->reason;
		return -ENOTSUP;
	}
	ret = site_init(site, plan, bias, handler, args);
	if (!ret)
		ret = via_apply(site, via);
	if (ret)
		return ret;
	/* A jump's own hop only when its window is short of 5 bytes. */
	place = (struct dp_patch_place){
		.method = site->method, .addr = site->win.addr, .len = site->win.len,
		.hop = site->hop.addr,
		.hop_len = site->method == DP_SITE_JUMP && site->win.len >= DP_HOP_LEN ? 0 :
									       site->hop.len,
	};
	/* The trampoline's entry is needed first: the bytes jump to it. */
	ret = tramp_put(pool, site, vec, why);
	if (!ret)
		ret = dp_patch_bytes_fill(&place, site->tramp.entry, &patch);
	if (!ret)
		ret = redirects_fill(site, &patch);
	if (ret) {
		site->tramp.len = 0;	/* not prepared: no handler serves it */
		return ret;
	}
	site->patch = patch;
	return 0;
}

int dp_inproc_commit(struct dp_code_pool *pool, struct dp_inproc_site *site)
{
	const struct dp_patch_bytes *b = &site->patch;
	int ret = 0;

	if (!site->tramp.len || site->installed)
		return -EINVAL;
	/*
	 * Nothing reaches the hop before a rel8 leads there, and the branches
	 * into a window lead to the trampoline before its bytes are written.
	 */
	if (b->hop_len)
		ret = dp_code_write(pool, site->hop.addr, b->hop, b->hop_len);
	if (!ret && site->nredirects)
		ret = redirects_write(pool, site, false);
	if (!ret && site->method != DP_SITE_REDIRECT)
		ret = dp_code_write(pool, site->win.addr, b->site, b->site_len);
	if (ret) {
		redirects_write(pool, site, true);
		if (b->hop_len)
			dp_code_write(pool, site->hop.addr, site->hop.bytes, DP_HOP_LEN);
	}
	site->installed = !ret;
	return ret;
}

int dp_inproc_remove(struct dp_code_pool *pool, struct dp_inproc_site *site)
{
	int ret = 0;

	if (!site->installed)
		return 0;
	/* The site first, then its branches: then nothing new reaches the hop. */
	if (site->method != DP_SITE_REDIRECT)
		ret = dp_code_write(pool, site->win.addr, site->win.bytes, site->win.len);
	if (!ret)
		ret = redirects_write(pool, site, true);
	if (!ret && site->hop.len)
		ret = dp_code_write(pool, site->hop.addr, site->hop.bytes, DP_HOP_LEN);
	if (!ret)
		site->installed = false;
	return ret;
}

void dp_inproc_trap(const struct dp_inproc_site *site, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	struct dp_regs r;

	dp_regs_from_gregs(g, site->win.addr, &r);
	for (unsigned i = 0; i < site->npoints; i++)
		site->handler(site->args[i], &r);
	g[REG_RAX] = r.rax; g[REG_RCX] = r.rcx; g[REG_RDX] = r.rdx; g[REG_RBX] = r.rbx;
	g[REG_RSP] = r.rsp; g[REG_RBP] = r.rbp; g[REG_RSI] = r.rsi; g[REG_RDI] = r.rdi;
	g[REG_R8] = r.r8; g[REG_R9] = r.r9; g[REG_R10] = r.r10; g[REG_R11] = r.r11;
	g[REG_R12] = r.r12; g[REG_R13] = r.r13; g[REG_R14] = r.r14; g[REG_R15] = r.r15;
	g[REG_EFL] = r.rflags;
	g[REG_RIP] = site->tramp.insn_at[0];
}
