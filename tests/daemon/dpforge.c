/*
 * dpforge: a process that says HELLO on the app socket like an agent, and
 * reports a patch it made up (test-claims.sh).  The daemon restores the
 * patches no event claims by writing their "original" bytes at their site:
 * a report must never make it write what the process's file does not hold
 * there, nor anywhere but in the process's own file code.
 *
 *   dpforge SOCKET MODE [PROG ARG...]
 *
 * The claimed patch, by MODE:
 *   anon     a jump in an anonymous executable mapping, "original" nops
 *   noexec   in a read-only mapping of this program's file, "original" zeros
 *   bytes    at forge_site (this program's code), "original" bytes that are
 *            not the file's (nops), the code untouched
 *   wrong    at forge_site, the file's bytes as original, but the code holds
 *            neither them nor the jump the claim says (two int3s)
 *   real     at forge_site, the file's bytes as original, and the code holds
 *            the jump to the claimed trampoline: a true claim
 *   nodump   as real, from a process that made itself not dumpable
 *   setuid   as real, then at once executes PROG (the connection kept open)
 *   exec     as real; on SIGUSR1 executes PROG (the connection kept open)
 *
 * Prints "claim ADDR LEN HEX TRAMP" (the claimed site, the bytes there
 * before the HELLO, the claimed trampoline), then "go" when the daemon says GO (its recovery done) and
 * "removed ADDR" for each site of NOTE_REMOVED (or NOTE_REMOVED_MANY); serves until the daemon closes
 * ("closed", or "refused" before any HELLO_REPLY), then waits for SIGTERM.
 * Exits 2 on errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/app.h"

/* The site of the made-up patches in this program's own code: 16 bytes of
 * plain instructions, never run. */
__attribute__((noinline, used)) void forge_site(void);
__asm__(".text\n.globl forge_site\n.type forge_site,@function\nforge_site:\n"
	"push %rbx\nmov %rdi,%rax\nadd $0x10,%rax\nmov %rax,%rbx\nnop\nnop\nnop\n"
	"pop %rbx\nret\n.size forge_site,.-forge_site\n");

static volatile sig_atomic_t go_exec;

static void on_usr1(int sig)
{
	(void)sig;
	go_exec = 1;
}

static int write_self(uint64_t addr, const void *bytes, size_t len)
{
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pwrite(fd, bytes, len, (off_t)addr);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

/* An executable anonymous page within reach of a jmp rel32 from our code
 * (written before it is made executable). */
static uint8_t *rx_page(void)
{
	uint64_t near = (uint64_t)(uintptr_t)forge_site & ~0xfffull;
	uint8_t *p = MAP_FAILED;

	for (uint64_t d = 16 << 20; p == MAP_FAILED && d < (1ull << 30); d += 16 << 20)
		p = mmap((void *)(uintptr_t)(near - d), 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0xcc, 4096);
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
		return NULL;
	return p;
}

static void jump_bytes(uint8_t *out, uint64_t at, uint64_t to)
{
	int32_t rel = (int32_t)(to - (at + 5));

	out[0] = 0xe9;
	memcpy(out + 1, &rel, 4);
}

/* The patch MODE claims, made up in this process. */
static int make_claim(const char *mode, struct dp_app_patch *ap)
{
	uint8_t *tramp = rx_page(), code[5];
	uint64_t site = (uint64_t)(uintptr_t)forge_site;

	if (!tramp)
		return -1;
	memset(ap, 0, sizeof(*ap));
	ap->method = DP_APP_METHOD_JUMP;
	ap->len = 5;
	ap->tramp = (uint64_t)(uintptr_t)tramp;
	ap->tramp_len = 64;
	ap->nprobes = 1;
	ap->probes[0] = 1;
	if (!strcmp(mode, "anon")) {
		uint8_t *page = rx_page();

		if (!page)
			return -1;
		ap->site = (uint64_t)(uintptr_t)page + 64;
		memset(ap->orig, 0x90, 5);
		jump_bytes(code, ap->site, ap->tramp);
		return write_self(ap->site, code, 5);
	}
	if (!strcmp(mode, "noexec")) {
		int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		void *m = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED)
			return -1;
		ap->site = (uint64_t)(uintptr_t)m + 16;
		memset(ap->orig, 0, 5);
		return 0;
	}
	ap->site = site;
	if (!strcmp(mode, "bytes")) {
		memset(ap->orig, 0x90, 5);
		return 0;
	}
	memcpy(ap->orig, (const void *)forge_site, 5);
	if (!strcmp(mode, "wrong"))
		return write_self(site, "\xcc\xcc", 2);
	jump_bytes(code, site, ap->tramp);
	return write_self(site, code, 5);
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);	/* kept across exec */

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "dpforge: cannot connect to %s: %s\n", path, strerror(errno));
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct dp_app_msg hello = { .type = DP_APP_HELLO, .seq = 1 }, m;
	struct dp_app_probe probe = { .id = 1 };
	struct dp_app_patch ap;
	const char *mode;
	enum dp_proto_err why;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: dpforge SOCKET MODE [PROG ARG...]\n");
		return 2;
	}
	mode = argv[2];
	signal(SIGUSR1, on_usr1);
	if (make_claim(mode, &ap)) {
		fprintf(stderr, "dpforge: cannot make the %s claim: %s\n", mode, strerror(errno));
		return 2;
	}
	if (!strcmp(mode, "nodump"))
		prctl(PR_SET_DUMPABLE, 0);
	printf("claim 0x%" PRIx64 " %u ", ap.site, ap.len);
	for (unsigned i = 0; i < ap.len; i++)
		printf("%02x", ((const uint8_t *)(uintptr_t)ap.site)[i]);
	printf(" 0x%" PRIx64 "\n", ap.tramp);
	fflush(stdout);

	probe.site = ap.site;
	snprintf(probe.event, sizeof(probe.event), "dynprobe:forged");
	hello.hello.pid = (uint32_t)getpid();
	snprintf(hello.hello.agent_version, sizeof(hello.hello.agent_version), "forged");
	hello.hello.probe_hit = ap.tramp;
	hello.hello.state.nprobes = 1;
	hello.hello.state.probes = &probe;
	hello.hello.state.npatches = 1;
	hello.hello.state.patches = &ap;
	fd = connect_to(argv[1]);
	if (fd < 0 || dp_app_send(fd, &hello, DP_APP_TIMEOUT_MS))
		return 2;
	if (!strcmp(mode, "setuid") && argc > 3) {
		execv(argv[3], argv + 3);
		return 2;
	}
	for (bool said_hello = false;;) {
		struct dp_app_msg rep = { .seq = 0 };
		int ret;

		if (go_exec && argc > 3) {
			execv(argv[3], argv + 3);
			return 2;
		}
		ret = dp_app_recv(fd, &m, 200, &why);
		if (ret == -ETIMEDOUT || ret == -EAGAIN || ret == -EINTR)
			continue;
		if (ret) {
			printf("%s\n", said_hello ? "closed" : "refused");
			break;
		}
		if (m.type == DP_APP_HELLO_REPLY) {
			printf("hello\n");
			fflush(stdout);
			said_hello = true;
			continue;
		}
		rep.type = m.type | DP_FRAME_REPLY;
		rep.seq = m.seq;
		if (m.type == DP_APP_GO) {
			printf("go\n");
		} else if (m.type == DP_APP_NOTE_REMOVED) {
			printf("removed 0x%" PRIx64 "\n", m.note_removed);
		} else if (m.type == DP_APP_NOTE_REMOVED_MANY) {
			for (uint32_t i = 0; i < m.removed_many.nsites; i++)
				printf("removed 0x%" PRIx64 "\n", m.removed_many.sites[i]);
		} else if (m.type == DP_APP_PING) {
			rep.ping = m.ping;
		} else if (m.type == DP_APP_LIST_WRITES) {
			rep.leds.nleds = 0;	/* no led: its claim is a jump's */
		} else {
			rep.result.status = -ENOTSUP;
			snprintf(rep.result.error, sizeof(rep.result.error), "dpforge serves no %s",
				 dp_app_type_name(m.type) ? dp_app_type_name(m.type) : "request");
		}
		fflush(stdout);
		dp_app_msg_release(&m);
		if (dp_app_send(fd, &rep, DP_APP_TIMEOUT_MS))
			break;
	}
	/* Closed by the daemon: stay, so that the test may read our memory. */
	fflush(stdout);
	for (;;) {
		if (go_exec && argc > 3) {
			execv(argv[3], argv + 3);
			return 2;
		}
		pause();
	}
}
