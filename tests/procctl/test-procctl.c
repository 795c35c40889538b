/*
 * 200 cycles of attach, stop every thread, read and write memory, remote
 * mmap/mprotect/munmap, move thread PCs between two copies of a function,
 * resume and detach, against procctl-target (8 workers checking their
 * results, threads sleeping in read(), nanosleep() and a futex) while
 * another process keeps sending it real-time signals.  Then the target must
 * have computed right all along, have handled every signal sent, have slept
 * every nanosleep in full, and its read() must return the data written after
 * each detach.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf/elf.h"
#include "proc/maps.h"
#include "proc/ptrace.h"
#include "proc/remote.h"
#include "procctl-util.h"
#include "tap.h"
#include "x86/insn.h"

#define CYCLES 200
#define WORKERS 8

static volatile sig_atomic_t sender_stop;

static void on_term(int sig)
{
	sender_stop = 1;
}

/* A child that sigqueue()s SIGRTMIN+1 to pid until SIGTERM; writes its count. */
static pid_t start_sender(pid_t pid, int *result_fd)
{
	int fds[2];
	pid_t child;

	if (pipe(fds))
		return -1;
	child = tap_fork();
	if (child == 0) {
		unsigned long sent = 0;
		unsigned int seed = (unsigned int)getpid();
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_term;
		sigaction(SIGTERM, &sa, NULL);
		close(fds[0]);
		while (!sender_stop) {
			union sigval v = { .sival_int = (int)sent };

			if (sigqueue(pid, SIGRTMIN + 1, v) == 0)
				sent++;
			else if (errno != EAGAIN)
				break;
			usleep(50 + rand_r(&seed) % 400);
		}
		if (write(fds[1], &sent, sizeof(sent)) != sizeof(sent))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	*result_fd = fds[0];
	return child;
}

/* compute_a's instruction starts, decoded from the target's own bytes. */
static size_t insn_starts(struct dp_proc *p, uint64_t addr, uint64_t size, uint64_t *off,
			  size_t max)
{
	uint8_t code[4096];
	size_t n = 0;

	if (size > sizeof(code) || dp_proc_read(p, addr, code, size))
		return 0;
	for (uint64_t o = 0; o < size && n < max;) {
		struct dp_insn insn;

		if (dp_insn_decode(code + o, size - o, &insn))
			return 0;
		off[n++] = o;
		o += insn.len;
	}
	return n;
}

static int func_size(const char *prog, const char *name, uint64_t *size)
{
	struct dp_elf *elf = dp_elf_open(prog);
	const struct dp_func *f;
	size_t n;

	if (!elf || dp_elf_funcs(elf, &f, &n))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (f[i].name && !strcmp(f[i].name, name)) {
			*size = f[i].size;
			dp_elf_close(elf);
			return 0;
		}
	dp_elf_close(elf);
	return -1;
}

static bool mapped(pid_t pid, uint64_t addr)
{
	struct dp_maps maps;
	bool found;

	if (dp_maps_read(pid, &maps))
		return false;
	found = dp_maps_find(&maps, addr) != NULL;
	dp_maps_free(&maps);
	return found;
}

struct counts {
	unsigned attach_fail, not_held, few_threads, mem_fail, mmap_fail, maps_fail;
	unsigned regs_changed, move_fail, refused_mid, mid_moved, restart_refused;
	unsigned detach_fail, pong_fail, signal_stops, no_reader;
	unsigned long moved;
	uint64_t max_held_ns;
	char first_error[512];
};

static void note(struct counts *c, const char *what, struct dp_proc *p)
{
	if (!c->first_error[0])
		snprintf(c->first_error, sizeof(c->first_error), "%s: %s", what,
			 p ? dp_proc_errmsg(p) : "");
}

/* The reader thread: asleep in read(), the kernel planning its restart. */
static pid_t find_reader(struct dp_proc *p, struct user_regs_struct *r)
{
	size_t n;
	const struct dp_thread *t = dp_proc_threads(p, &n);

	for (size_t i = 0; i < n; i++)
		if (!dp_proc_get_regs(p, t[i].tid, r) && r->orig_rax == SYS_read &&
		    dp_regs_restarts(r))
			return t[i].tid;
	return 0;
}

static void one_cycle(struct target *tg, int cycle, const struct dp_pc_move *ab,
		      const struct dp_pc_move *ba, size_t nmoves, uint64_t size, struct counts *c)
{
	struct dp_proc *p = dp_proc_open(tg->pid);
	const struct dp_thread *t;
	struct user_regs_struct before, after, rr;
	uint64_t v = (uint64_t)cycle, back = 0, addr = 0, pattern[64], check[64];
	pid_t host, reader;
	bool reader_host;
	unsigned int moved = 0;
	size_t n;
	int ret;

	if (dp_proc_attach(p, 0)) {
		c->attach_fail++;
		note(c, "attach", p);
		dp_proc_close(p);
		return;
	}
	t = dp_proc_threads(p, &n);
	if (n < WORKERS + 4)
		c->few_threads++;
	for (size_t i = 0; i < n; i++) {
		if (t[i].stop == DP_STOP_NONE)
			c->not_held++;
		if (t[i].stop == DP_STOP_SIGNAL)
			c->signal_stops++;
	}
	/* A signal while every thread is held: delivered after the detach. */
	kill(tg->pid, SIGUSR2);

	if (dp_proc_write(p, tg->marker, &v, sizeof(v)) ||
	    dp_proc_read(p, tg->marker, &back, sizeof(back)) || back != v) {
		c->mem_fail++;
		note(c, "memory", p);
	}

	/*
	 * The reader blocks the test signals, so nothing may be delivered to
	 * it on the way: it must come back with every register as it was,
	 * its read() still to be restarted.
	 */
	host = find_reader(p, &before);
	reader_host = host != 0;
	if (!reader_host) {
		/* Still answering the last ping: another thread, not compared. */
		host = dp_remote_pick(p);
		c->no_reader++;
	}
	for (int i = 0; i < 64; i++)
		pattern[i] = (uint64_t)cycle * 1000003u + (uint64_t)i;
	ret = dp_remote_mmap(p, host, 0, 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &addr);
	if (!ret)
		ret = dp_proc_write(p, addr, pattern, sizeof(pattern));
	if (!ret)
		ret = dp_remote_mprotect(p, host, addr, 4096, PROT_READ);
	/* Read-only now: /proc/PID/mem still writes, as a debugger's would. */
	if (!ret)
		ret = dp_proc_write(p, addr + 8, &pattern[0], 8);
	if (!ret)
		ret = dp_proc_read(p, addr, check, sizeof(check));
	if (!ret && (check[0] != pattern[0] || check[1] != pattern[0] ||
		     memcmp(check + 2, pattern + 2, sizeof(pattern) - 16)))
		ret = -1;
	if (!ret && cycle % 20 == 0 && !mapped(tg->pid, addr))
		c->maps_fail++;
	if (!ret)
		ret = dp_remote_munmap(p, host, addr, 4096);
	if (!ret && cycle % 20 == 0 && mapped(tg->pid, addr))
		c->maps_fail++;
	if (ret) {
		c->mmap_fail++;
		note(c, "remote mmap", p);
	}
	if (!reader_host)
		;
	else if (dp_proc_get_regs(p, host, &after) || memcmp(&before, &after, sizeof(before))) {
		if (!c->regs_changed++) {
			const uint64_t *x = (const uint64_t *)&before, *y = (const uint64_t *)&after;

			for (size_t i = 0; i < sizeof(before) / 8; i++)
				if (x[i] != y[i])
					tap_diag("register %zu: %#" PRIx64 " became %#" PRIx64, i,
						 x[i], y[i]);
		}
	}

	/* A map that names no instruction: a thread inside must refuse the lot. */
	{
		struct user_regs_struct r0[64], r1[64];
		size_t k = n < 64 ? n : 64;
		bool inside = false;

		for (size_t i = 0; i < k; i++) {
			dp_proc_get_regs(p, t[i].tid, &r0[i]);
			inside |= r0[i].rip > tg->compute_a && r0[i].rip < tg->compute_a + size;
		}
		ret = dp_proc_move_pcs(p, tg->compute_a + 1, tg->compute_a + size, NULL, 0, &moved);
		if (inside && ret == -EINVAL && strstr(dp_proc_errmsg(p), "not at an instruction"))
			c->refused_mid++;
		for (size_t i = 0; i < k; i++)
			if (!dp_proc_get_regs(p, t[i].tid, &r1[i]) && r1[i].rip != r0[i].rip)
				c->mid_moved++;
	}
	/* Between the copies, both ways. */
	if (cycle % 2 == 0)
		ret = dp_proc_move_pcs(p, tg->compute_a, tg->compute_a + size, ab, nmoves, &moved);
	else
		ret = dp_proc_move_pcs(p, tg->compute_b, tg->compute_b + size, ba, nmoves, &moved);
	if (ret) {
		c->move_fail++;
		note(c, "move", p);
	}
	c->moved += moved;

	/* A sleeping read(): its restart re-runs the syscall at rip - 2. */
	reader = find_reader(p, &rr);
	if (reader) {
		struct dp_pc_move away = { rr.rip, rr.rip + 0x40 }, stay = { rr.rip, rr.rip };

		if (dp_proc_move_pcs(p, rr.rip - 2, rr.rip + 1, &away, 1, &moved) == -EINVAL &&
		    strstr(dp_proc_errmsg(p), "system call") &&
		    !dp_proc_move_pcs(p, rr.rip - 2, rr.rip + 1, &stay, 1, &moved) && !moved)
			c->restart_refused++;
	}

	if (dp_proc_detach(p)) {
		c->detach_fail++;
		note(c, "detach", p);
	}
	if (dp_proc_max_held_ns(p) > c->max_held_ns)
		c->max_held_ns = dp_proc_max_held_ns(p);
	dp_proc_close(p);

	/* Written after the detach: the restarted read() must return it. */
	{
		char cmd[64], line[256], prefix[64];
		struct dp_deadline d;
		bool ok = false;

		snprintf(cmd, sizeof(cmd), "ping %d", cycle);
		snprintf(prefix, sizeof(prefix), "pong %d ", cycle);
		dp_deadline_start(&d, TARGET_ANSWER_MS, NULL);
		while (!ok && !dp_deadline_passed(&d) &&
		       !target_ask(tg, cmd, prefix, line, sizeof(line), TARGET_ANSWER_MS)) {
			ok = kv(line, "usr2") == (uint64_t)cycle + 1 && kv(line, "marker") == v;
			if (!ok)
				util_sleep_ms(2);
		}
		if (!ok) {
			c->pong_fail++;
			if (!c->first_error[0])
				snprintf(c->first_error, sizeof(c->first_error),
					 "cycle %d: no answer with usr2=%d marker=%d", cycle,
					 cycle + 1, cycle);
		}
	}
}

int main(void)
{
	/* 20 ms sleeps: a run that takes half a second still makes a dozen,
	 * each spanning holds. */
	char *argv[] = { "./procctl-target", "-t", "8", "-S", "20", NULL };
	struct dp_pc_move ab[512], ba[512];
	uint64_t off[512], size = 0;
	struct counts c;
	struct target tg;
	unsigned long sent = 0;
	char line[512];
	size_t nmoves;
	int result_fd = -1, status;
	pid_t sender;

	alarm(600);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&c, 0, sizeof(c));
	if (!tap_ok(target_spawn(&tg, "./procctl-target", argv, NULL, false) == 0,
		    "the target starts"))
		return tap_done();
	{
		int ret = func_size("./procctl-target", "compute_a", &size);

		tap_ok(ret == 0 && size > 16, "compute_a's size is known from the symbol table "
		       "(%" PRIu64 " bytes)", size);
	}
	{
		struct dp_proc *p = dp_proc_open(tg.pid);
		uint8_t a[4096], b[4096];
		int ret = dp_proc_attach(p, 0);

		nmoves = ret ? 0 : insn_starts(p, tg.compute_a, size, off, 512);
		tap_ok(!ret && nmoves > 4 && !dp_proc_read(p, tg.compute_a, a, size) &&
		       !dp_proc_read(p, tg.compute_b, b, size) && !memcmp(a, b, size),
		       "compute_a and compute_b are the same %zu instructions", nmoves);
		dp_proc_close(p);
	}
	for (size_t i = 0; i < nmoves; i++) {
		ab[i] = (struct dp_pc_move){ tg.compute_a + off[i], tg.compute_b + off[i] };
		ba[i] = (struct dp_pc_move){ tg.compute_b + off[i], tg.compute_a + off[i] };
	}

	sender = start_sender(tg.pid, &result_fd);
	for (int cycle = 0; cycle < CYCLES; cycle++)
		one_cycle(&tg, cycle, ab, ba, nmoves, size, &c);
	kill(sender, SIGTERM);
	if (read(result_fd, &sent, sizeof(sent)) != sizeof(sent))
		sent = 0;
	waitpid(sender, &status, 0);
	if (c.first_error[0])
		tap_diag("first error: %s", c.first_error);

	tap_ok(!c.attach_fail, "%d attaches (%u failed)", CYCLES, c.attach_fail);
	tap_ok(!c.few_threads && !c.not_held, "every thread held at each stop (%u short lists, "
	       "%u threads not held); %u were held at a signal's delivery", c.few_threads,
	       c.not_held, c.signal_stops);
	tap_ok(!c.mem_fail, "memory written and read back through /proc/PID/mem (%u failed)",
	       c.mem_fail);
	tap_ok(!c.mmap_fail && !c.maps_fail, "remote mmap, write to a read-only page, mprotect, "
	       "munmap (%u failed, %u maps mismatches)", c.mmap_fail, c.maps_fail);
	tap_ok(!c.regs_changed && c.no_reader < CYCLES / 4, "the thread asleep in read() that "
	       "ran the system calls has all its registers back (%u differed; %u times it was "
	       "not asleep yet)", c.regs_changed, c.no_reader);
	tap_ok(!c.move_fail && c.moved > 0, "threads moved between compute_a and compute_b: "
	       "%lu moves, %u failures", c.moved, c.move_fail);
	tap_ok(c.refused_mid > 0 && !c.mid_moved, "a PC the map cannot translate is refused and "
	       "nothing moves (%u refusals, %u threads moved anyway)", c.refused_mid, c.mid_moved);
	tap_ok(c.restart_refused > 0, "a thread sleeping in read() is not moved away from its "
	       "syscall instruction (%u times)", c.restart_refused);
	tap_ok(!c.detach_fail, "%d detaches (%u failed)", CYCLES, c.detach_fail);
	tap_ok(!c.pong_fail, "after each detach, read() returns the line written and the "
	       "SIGUSR2 sent while held was handled (%u failed)", c.pong_fail);
	tap_diag("longest time all threads stayed held: %.3f ms", c.max_held_ns / 1e6);

	/* Let the last queued signals be handled. */
	util_sleep_ms(300);
	if (tap_ok(target_ask(&tg, "report", "report", line, sizeof(line), TARGET_ANSWER_MS) == 0,
		   "the target reports")) {
		tap_diag("%s", line);
		tap_ok(kv(line, "calls") > 1000 && kv(line, "errors") == 0,
		       "workers computed right throughout (%" PRIu64 " calls, %" PRIu64 " errors)",
		       kv(line, "calls"), kv(line, "errors"));
		tap_ok(sent > 0 && kv(line, "rt") == sent,
		       "every real-time signal sent was handled (%lu sent, %" PRIu64 " handled)",
		       sent, kv(line, "rt"));
		tap_ok(kv(line, "usr2") == CYCLES, "every SIGUSR2 sent while held was handled "
		       "(%" PRIu64 ")", kv(line, "usr2"));
		tap_ok(kv(line, "sleeps") > 5 && kv(line, "short") == 0 && kv(line, "eintr") == 0,
		       "nanosleep() slept its full 20 ms every time (%" PRIu64 " sleeps, %" PRIu64
		       " short, %" PRIu64 " EINTR)", kv(line, "sleeps"), kv(line, "short"),
		       kv(line, "eintr"));
	}
	tap_ok(target_ask(&tg, "wake", "woken", line, sizeof(line), TARGET_ANSWER_MS) == 0 &&
	       kv(line, "spurious") == 0, "the futex waiter never woke early (%s)", line);
	tap_ok(target_quit(&tg, 5000) == 0, "the target exits cleanly, its own checks passed");
	return tap_done();
}
