/*
 * The agent across exec and dlopen (follow.h): glibc's exec functions and
 * dlopen, wrapped.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfi-tables.h"
#include "control.h"
#include "follow.h"

extern char **environ;

#define PRELOAD "LD_PRELOAD="
#define PRELOAD_LEN (sizeof(PRELOAD) - 1)
/* Variables kept from the start, at most. */
#define KEEP_MAX 64
/* An environment (or an execl argument list) longer than this is passed
 * as it is: the copy lives on the stack. */
#define ENTRIES_MAX 65536

/* glibc's names, exported (the agent's own symbols are hidden). */
#define DPA_EXPORT __attribute__((visibility("default")))

typedef int execve_fn(const char *, char *const[], char *const[]);
typedef int execv_fn(const char *, char *const[]);
typedef int fexecve_fn(int, char *const[], char *const[]);
typedef int execveat_fn(int, const char *, char *const[], char *const[], int);
typedef int spawn_fn(pid_t *, const char *, const posix_spawn_file_actions_t *,
		     const posix_spawnattr_t *, char *const[], char *const[]);
typedef void *dlopen_fn(const char *, int);

static struct {
	bool env_exec;			/* the environment asked to follow executed images */
	bool daemon_exec;		/* the daemon asks it (FOLLOW; atomic) */
	bool ready;			/* the agent's path and the kept variables are known */
	char preload[PATH_MAX + PRELOAD_LEN];	/* "LD_PRELOAD=AGENT" */
	size_t agent_len;		/* of AGENT */
	char *keep[KEEP_MAX];		/* "NAME=VALUE" of the start */
	size_t nkeep;
	execve_fn *execve, *execvpe;
	execv_fn *execv, *execvp;
	fexecve_fn *fexecve;
	execveat_fn *execveat;
	spawn_fn *spawn, *spawnp;
	dlopen_fn *dlopen;
	void *self_base;		/* where the agent is loaded */
} fw;

/* A dlopen of ours is running in this thread (a constructor's dlopen runs
 * inside it, under the loader's lock: never waited for). */
static __thread unsigned dlopen_depth;

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

#define REAL(f, name) (fw.f ? fw.f : (fw.f = next(name)))

/* Whether executed images get the agent, now. */
static bool following(void)
{
	return fw.ready && (fw.env_exec || __atomic_load_n(&fw.daemon_exec, __ATOMIC_ACQUIRE));
}

/* ---- the environment handed on ----------------------------------------- */

static const char *agent_path(void)
{
	return fw.preload + PRELOAD_LEN;
}

/* Whether an LD_PRELOAD value names the agent (items split by ':' or ' '). */
static bool names_agent(const char *v)
{
	const char *a = agent_path();

	while (*v) {
		size_t n = strcspn(v, ": ");

		if (n == fw.agent_len && !memcmp(v, a, n))
			return true;
		v += n;
		v += *v != '\0';
	}
	return false;
}

static bool same_name(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");

	return !strncmp(a, b, n) && b[n] == '=';
}

static size_t env_count(char *const *envp)
{
	size_t n = 0;

	while (envp && envp[n] && n <= ENTRIES_MAX)
		n++;
	return n;
}

/* Bytes of the LD_PRELOAD entry to build for envp (0: none to build). */
static size_t preload_need(char *const *envp, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(envp[i], PRELOAD, PRELOAD_LEN))
			return names_agent(envp[i] + PRELOAD_LEN)
				       ? 0
				       : PRELOAD_LEN + fw.agent_len + 1 + strlen(envp[i]) + 1;
	return 0;
}

/*
 * envp with the agent kept (follow.h) into out (n + KEEP_MAX + 2 entries),
 * the rebuilt LD_PRELOAD entry in buf (preload_need bytes).
 */
static char **env_fix(char *const *envp, size_t n, char **out, char *buf)
{
	bool preload = false;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		const char *e = envp[i];

		if (!strncmp(e, PRELOAD, PRELOAD_LEN)) {
			preload = true;
			if (!names_agent(e + PRELOAD_LEN)) {
				/* The agent first, the program's own after. */
				size_t len = PRELOAD_LEN + fw.agent_len;

				memcpy(buf, fw.preload, len);
				buf[len] = ':';
				strcpy(buf + len + 1, e + PRELOAD_LEN);
				e = buf;
			}
		}
		out[k++] = (char *)e;
	}
	if (!preload)
		out[k++] = fw.preload;
	for (size_t j = 0; j < fw.nkeep; j++) {
		bool there = false;

		for (size_t i = 0; i < n && !there; i++)
			there = same_name(fw.keep[j], envp[i]);
		if (!there)
			out[k++] = fw.keep[j];
	}
	out[k] = NULL;
	return out;
}

/*
 * Runs CALL with `env` the environment to pass: envp fixed when exec is
 * followed, else envp itself.  On the stack: no allocation, no lock.
 */
#define WITH_ENV(envp, CALL)                                                             \
	do {                                                                             \
		char *const *env_in_ = (envp);                                           \
		bool on_ = following();                                                  \
		size_t n_ = on_ ? env_count(env_in_) : 0;                                \
		if (!on_ || n_ > ENTRIES_MAX) {                                          \
			char *const *env = env_in_;                                      \
			return CALL;                                                     \
		}                                                                        \
		char *out_[n_ + KEEP_MAX + 2];                                           \
		char buf_[preload_need(env_in_, n_) + 1];                                \
		char *const *env = env_fix(env_in_, n_, out_, buf_);                     \
		return CALL;                                                             \
	} while (0)

static int no_function(void)
{
	errno = ENOSYS;
	return -1;
}

static void *no_dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	errno = ENOSYS;
	return NULL;
}

/* ---- the exec family ---------------------------------------------------- */

/*
 * Our own functions by names that bind here whatever the lookup order: an
 * injected agent comes last in it, so a call to "execve" from this file
 * would reach glibc's.  Defined by the aliases after the functions.
 */
static int own_execve(const char *, char *const[], char *const[]);
static int own_execvpe(const char *, char *const[], char *const[]);
static int own_execv(const char *, char *const[]);
static int own_execvp(const char *, char *const[]);

DPA_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	execve_fn *f = REAL(execve, "execve");

	if (!f)
		return no_function();
	WITH_ENV(envp, f(path, argv, env));
}

DPA_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	execve_fn *f = REAL(execvpe, "execvpe");

	if (!f)
		return no_function();
	WITH_ENV(envp, f(file, argv, env));
}

DPA_EXPORT int execv(const char *path, char *const argv[])
{
	if (!following()) {
		execv_fn *f = REAL(execv, "execv");

		return f ? f(path, argv) : no_function();
	}
	return own_execve(path, argv, environ);
}

DPA_EXPORT int execvp(const char *file, char *const argv[])
{
	if (!following()) {
		execv_fn *f = REAL(execvp, "execvp");

		return f ? f(file, argv) : no_function();
	}
	return own_execvpe(file, argv, environ);
}

DPA_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	fexecve_fn *f = REAL(fexecve, "fexecve");

	if (!f)
		return no_function();
	WITH_ENV(envp, f(fd, argv, env));
}

DPA_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	execveat_fn *f = REAL(execveat, "execveat");

	if (!f)
		return no_function();
	WITH_ENV(envp, f(dirfd, path, argv, env, flags));
}

DPA_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	spawn_fn *f = REAL(spawn, "posix_spawn");

	if (!f)
		return ENOSYS;
	WITH_ENV(envp, f(pid, path, fa, attr, argv, env));
}

DPA_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	spawn_fn *f = REAL(spawnp, "posix_spawnp");

	if (!f)
		return ENOSYS;
	WITH_ENV(envp, f(pid, file, fa, attr, argv, env));
}

/*
 * The execl family: the arguments into an array on the stack, as glibc
 * does, then the v form (ours, so that the environment is fixed).
 */
#define ARGV_FROM_VA(arg0, ap, argv, with_env, envp)                                     \
	size_t n_ = 1;                                                                   \
	va_list cp_;                                                                     \
	va_copy(cp_, ap);                                                                \
	while (va_arg(cp_, char *) && n_ <= ENTRIES_MAX)                                 \
		n_++;                                                                    \
	va_end(cp_);                                                                     \
	if (n_ > ENTRIES_MAX) {                                                          \
		va_end(ap);                                                              \
		errno = E2BIG;                                                           \
		return -1;                                                               \
	}                                                                                \
	char *argv[n_ + 1];                                                              \
	argv[0] = (char *)(arg0);                                                        \
	for (size_t i_ = 1; i_ <= n_; i_++)                                              \
		argv[i_] = va_arg(ap, char *);                                           \
	if (with_env)                                                                    \
		envp = va_arg(ap, char *const *);                                        \
	va_end(ap)

DPA_EXPORT int execl(const char *path, const char *arg, ...)
{
	char *const *envp = NULL;
	va_list ap;

	va_start(ap, arg);
	ARGV_FROM_VA(arg, ap, argv, false, envp);
	(void)envp;
	return own_execv(path, argv);
}

DPA_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *const *envp = NULL;
	va_list ap;

	va_start(ap, arg);
	ARGV_FROM_VA(arg, ap, argv, false, envp);
	(void)envp;
	return own_execvp(file, argv);
}

DPA_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *const *envp = NULL;
	va_list ap;

	va_start(ap, arg);
	ARGV_FROM_VA(arg, ap, argv, true, envp);
	return own_execve(path, argv, envp);
}

static int own_execve(const char *, char *const[], char *const[]) __attribute__((alias("execve"), copy(execve)));
static int own_execvpe(const char *, char *const[], char *const[]) __attribute__((alias("execvpe"), copy(execvpe)));
static int own_execv(const char *, char *const[]) __attribute__((alias("execv"), copy(execv)));
static int own_execvp(const char *, char *const[]) __attribute__((alias("execvp"), copy(execvp)));

/* ---- an injected agent: the program's calls led here ------------------- */

/*
 * A preloaded agent comes first in the lookup order: the program's calls to
 * the exec family bind to it.  An injected one comes last, so once the
 * daemon asks it to follow, the slots through which the loaded objects
 * call those functions (their GOT entries: R_X86_64_JUMP_SLOT and
 * R_X86_64_GLOB_DAT relocations naming them) are set to ours, once; ours
 * pass every call to glibc's when not following.  A slot in a read-only
 * (RELRO) page is made writable for the write and read-only again.
 * Objects loaded later, and calls glibc makes inside itself (system,
 * popen), are not led here.
 */
static int own_fexecve(int, char *const[], char *const[]) __attribute__((alias("fexecve"), copy(fexecve)));
static int own_execveat(int, const char *, char *const[], char *const[], int)
	__attribute__((alias("execveat"), copy(execveat)));
static int own_spawn(pid_t *, const char *, const posix_spawn_file_actions_t *,
		     const posix_spawnattr_t *, char *const[], char *const[])
	__attribute__((alias("posix_spawn"), copy(posix_spawn)));
static int own_spawnp(pid_t *, const char *, const posix_spawn_file_actions_t *,
		      const posix_spawnattr_t *, char *const[], char *const[])
	__attribute__((alias("posix_spawnp"), copy(posix_spawnp)));
static int own_execl(const char *, const char *, ...) __attribute__((alias("execl"), copy(execl)));
static int own_execlp(const char *, const char *, ...) __attribute__((alias("execlp"), copy(execlp)));
static int own_execle(const char *, const char *, ...) __attribute__((alias("execle"), copy(execle)));

static const struct {
	const char *name;
	void *fn;
} led[] = {
	{ "execve", (void *)own_execve }, { "execvpe", (void *)own_execvpe },
	{ "execv", (void *)own_execv }, { "execvp", (void *)own_execvp },
	{ "execl", (void *)own_execl }, { "execlp", (void *)own_execlp },
	{ "execle", (void *)own_execle }, { "fexecve", (void *)own_fexecve },
	{ "execveat", (void *)own_execveat }, { "posix_spawn", (void *)own_spawn },
	{ "posix_spawnp", (void *)own_spawnp },
};

static void *led_to(const char *name)
{
	for (size_t i = 0; i < sizeof(led) / sizeof(led[0]); i++)
		if (!strcmp(led[i].name, name))
			return led[i].fn;
	return NULL;
}

/* A dynamic entry's address: relocated by the loader, or not (base added). */
static uintptr_t dyn_addr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

static void slot_set(void **slot, void *fn, uintptr_t relro, size_t relro_len)
{
	uintptr_t a = (uintptr_t)slot, page = a & ~(uintptr_t)4095;
	bool ro = relro_len && a >= relro && a < relro + relro_len;

	if (*slot == fn)
		return;
	if (ro && mprotect((void *)page, 4096, PROT_READ | PROT_WRITE))
		return;
	__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	if (ro)
		mprotect((void *)page, 4096, PROT_READ);
}

static void lead_relocs(uintptr_t base, const ElfW(Rela) *r, size_t size, const ElfW(Sym) *sym,
			const char *str, uintptr_t relro, size_t relro_len)
{
	for (size_t i = 0; r && i < size / sizeof(*r); i++) {
		unsigned long type = ELF64_R_TYPE(r[i].r_info);
		void *fn;

		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		fn = led_to(str + sym[ELF64_R_SYM(r[i].r_info)].st_name);
		if (fn)
			slot_set((void **)(base + r[i].r_offset), fn, relro, relro_len);
	}
}

static int lead_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	size_t jmpsz = 0, relasz = 0, relro_len = 0;
	uintptr_t base = info->dlpi_addr, relro = 0;
	const ElfW(Dyn) *d = NULL;

	(void)size;
	(void)arg;
	if (base == (uintptr_t)fw.self_base || !info->dlpi_name ||
	    strstr(info->dlpi_name, "linux-vdso"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			d = (const ElfW(Dyn) *)(base + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			relro = base + ph->p_vaddr;
			relro_len = ph->p_memsz;
		}
	}
	for (; d && d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_JMPREL: jmprel = (const void *)dyn_addr(base, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: jmpsz = d->d_un.d_val; break;
		case DT_RELA: rela = (const void *)dyn_addr(base, d->d_un.d_ptr); break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		case DT_SYMTAB: sym = (const void *)dyn_addr(base, d->d_un.d_ptr); break;
		case DT_STRTAB: str = (const void *)dyn_addr(base, d->d_un.d_ptr); break;
		}
	}
	if (!sym || !str)
		return 0;
	lead_relocs(base, jmprel, jmpsz, sym, str, relro, relro_len);
	lead_relocs(base, rela, relasz, sym, str, relro, relro_len);
	return 0;
}

/* ---- dlopen ------------------------------------------------------------ */

struct scan {
	bool first;
	bool caller_paths;		/* a RUNPATH, or an RPATH outside the executable */
	unsigned long long adds;	/* objects ever loaded */
};

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *s = arg;
	bool main_object = s->first;

	if (s->first && size >= offsetof(struct dl_phdr_info, dlpi_subs))
		s->adds = info->dlpi_adds;
	s->first = false;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Dyn) *d;

		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
			continue;
		d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
		for (; d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_RUNPATH || (d->d_tag == DT_RPATH && !main_object))
				s->caller_paths = true;
	}
	return 0;
}

static struct scan scan_objects(void)
{
	struct scan s = { .first = true };

	dl_iterate_phdr(scan_one, &s);
	return s;
}

/* dlopen through the agent: the caller held until the daemon has probed
 * what it loaded. */
static void *dlopen_waited(const char *file, int mode)
{
	unsigned long long before = scan_objects().adds;
	void *h;

	dlopen_depth++;
	h = fw.dlopen(file, mode);
	dlopen_depth--;
	if (h && scan_objects().adds != before) {
		int e = errno;

		dpa_control_mapped_wait();
		dpa_cfi_after_dlopen();
		errno = e;
	}
	return h;
}

/*
 * Whether the caller is the tracer itself (the agent, lttng-ust): its own
 * loads are never waited for, as the threads that would answer may be the
 * ones waiting, or need their locks.
 */
static bool caller_is_tracer(void *caller)
{
	Dl_info info;
	const char *base;

	if (!dladdr(caller, &info) || !info.dli_fname)
		return false;
	if (info.dli_fbase == fw.self_base)
		return true;
	base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	return !strncmp(base, "liblttng-ust", 12);
}

/*
 * Where the entry below goes with dlopen's arguments: glibc's dlopen itself (the
 * caller's return address left in place) unless the call is to be waited
 * for and its result cannot depend on who calls (follow.h).
 */
__attribute__((used)) void *dpa_dlopen_route(const char *file, int mode, void *caller);

void *dpa_dlopen_route(const char *file, int mode, void *caller)
{
	dlopen_fn *real = REAL(dlopen, "dlopen");

	(void)mode;
	if (!real)
		return (void *)no_dlopen;
	if (!file || dlopen_depth || strchr(file, '$') || !dpa_control_mapped_wanted() ||
	    caller_is_tracer(caller))
		return (void *)real;
	if (!strchr(file, '/') && scan_objects().caller_paths)
		return (void *)real;
	return (void *)dlopen_waited;
}

/*
 * dlopen's entry: dpa_dlopen_route(file, mode, return address) says where
 * to go, and the call goes there with its arguments and its stack as they
 * came, so that glibc's dlopen, when it is chosen, sees the program's own
 * caller.  Defined at both of glibc's versions of dlopen (agent.map), so
 * that a program built against either binds to it.
 */
__asm__(".text\n"
	".globl dpa_dlopen_entry\n"
	".type dpa_dlopen_entry, @function\n"
	".globl dpa_dlopen_entry_old\n"
	".type dpa_dlopen_entry_old, @function\n"
	"dpa_dlopen_entry:\n"
	"dpa_dlopen_entry_old:\n"
	".cfi_startproc\n"
	"push %rdi\n"
	".cfi_adjust_cfa_offset 8\n"
	"push %rsi\n"
	".cfi_adjust_cfa_offset 8\n"
	"sub $8, %rsp\n"		/* the call below on a 16-byte boundary */
	".cfi_adjust_cfa_offset 8\n"
	"mov 24(%rsp), %rdx\n"	/* the caller's return address */
	"call dpa_dlopen_route\n"
	"add $8, %rsp\n"
	".cfi_adjust_cfa_offset -8\n"
	"pop %rsi\n"
	".cfi_adjust_cfa_offset -8\n"
	"pop %rdi\n"
	".cfi_adjust_cfa_offset -8\n"
	"jmp *%rax\n"
	".cfi_endproc\n"
	".size dpa_dlopen_entry, . - dpa_dlopen_entry\n"
	".size dpa_dlopen_entry_old, . - dpa_dlopen_entry_old\n"
	".symver dpa_dlopen_entry, dlopen@@GLIBC_2.34\n"
	".symver dpa_dlopen_entry_old, dlopen@GLIBC_2.2.5\n");

/* ---- setup ------------------------------------------------------------- */

static bool kept_name(const char *e)
{
	return !strncmp(e, "LTTNG_DYNPROBE_", 15) || !strncmp(e, "LTTNG_UST_", 10) ||
	       !strncmp(e, "LTTNG_HOME=", 11);
}

static void keep(const char *name, const char *value)
{
	size_t n = strlen(name), m = strlen(value);
	char *e;

	if (fw.nkeep >= KEEP_MAX)
		return;
	e = malloc(n + m + 2);
	if (!e)
		return;
	memcpy(e, name, n);
	e[n] = '=';
	memcpy(e + n + 1, value, m + 1);
	fw.keep[fw.nkeep++] = e;
}

void dpa_follow_setup(void)
{
	const char *v = secure_getenv(DPA_FOLLOW_ENV_EXEC);
	char path[PATH_MAX];
	Dl_info info;

	REAL(execve, "execve");
	REAL(execvpe, "execvpe");
	REAL(execv, "execv");
	REAL(execvp, "execvp");
	REAL(fexecve, "fexecve");
	REAL(execveat, "execveat");
	REAL(spawn, "posix_spawn");
	REAL(spawnp, "posix_spawnp");
	REAL(dlopen, "dlopen");

	if (!dladdr((void *)dpa_follow_setup, &info))
		return;
	fw.self_base = info.dli_fbase;
	fw.env_exec = v && *v && strcmp(v, "0");
	/* What an image needs to find the agent and its daemon, known here
	 * whether or not the environment asks to follow: the daemon may ask
	 * later (FOLLOW), when the environment may be changing. */
	if (!info.dli_fname || !realpath(info.dli_fname, path))
		return;
	fw.agent_len = strlen(path);
	memcpy(fw.preload, PRELOAD, PRELOAD_LEN);
	memcpy(fw.preload + PRELOAD_LEN, path, fw.agent_len + 1);
	for (char **e = environ; e && *e; e++) {
		if (kept_name(*e) && fw.nkeep < KEEP_MAX) {
			char *c = strdup(*e);

			if (c)
				fw.keep[fw.nkeep++] = c;
		}
	}
	/* lttng-ust and the agent find a user's sockets under LTTNG_HOME,
	 * else HOME: handed on as LTTNG_HOME, which nothing else reads. */
	if (geteuid() != 0 && !secure_getenv("LTTNG_HOME") && secure_getenv("HOME"))
		keep("LTTNG_HOME", secure_getenv("HOME"));
	/* The socket this agent talks to, so that the new image's agent talks
	 * to the same daemon. */
	if (!secure_getenv(DP_APP_ENV_SOCKET) && !dp_app_socket_path(path, sizeof(path)))
		keep(DP_APP_ENV_SOCKET, path);
	fw.ready = true;
}

int dpa_follow_set(uint32_t flags)
{
	static bool led_here;

	if (flags & DP_APP_FOLLOW_EXEC && !fw.ready)
		return -ENOENT;
	/* Only the control thread calls this. */
	if (flags & DP_APP_FOLLOW_EXEC && !led_here) {
		dl_iterate_phdr(lead_one, NULL);
		led_here = true;
	}
	__atomic_store_n(&fw.daemon_exec, (flags & DP_APP_FOLLOW_EXEC) != 0, __ATOMIC_RELEASE);
	return 0;
}
