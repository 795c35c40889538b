/*
 * Whether a process can be traced, and if not, which rule says no: the checks
 * made before any thread is seized, and the kernel's ptrace permission rules
 * written out so that a refusal can name the one that applies.
 */
#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/maps.h"
#include "proc/proc-status.h"
#include "proc/ptrace.h"

#define CAP_SYS_PTRACE_BIT 19

int dp_proc_status_read(pid_t pid, pid_t tid, struct dp_proc_status *st)
{
	char path[64], line[256];
	FILE *f;

	memset(st, 0, sizeof(*st));
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		*v++ = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = '\0';
		if (!strcmp(line, "Name"))
			snprintf(st->name, sizeof(st->name), "%s", v);
		else if (!strcmp(line, "State"))
			st->state = v[0];
		else if (!strcmp(line, "Tgid"))
			st->tgid = (pid_t)atoi(v);
		else if (!strcmp(line, "PPid"))
			st->ppid = (pid_t)atoi(v);
		else if (!strcmp(line, "TracerPid"))
			st->tracer = (pid_t)atoi(v);
		else if (!strcmp(line, "Uid"))
			sscanf(v, "%u %u %u", &st->uid[0], &st->uid[1], &st->uid[2]);
		else if (!strcmp(line, "Gid"))
			sscanf(v, "%u %u %u", &st->gid[0], &st->gid[1], &st->gid[2]);
		else if (!strcmp(line, "Threads"))
			st->threads = atoi(v);
		else if (!strcmp(line, "CapPrm"))
			st->cap_prm = strtoull(v, NULL, 16);
		else if (!strcmp(line, "CapEff"))
			st->cap_eff = strtoull(v, NULL, 16);
		else if (!strcmp(line, "Seccomp"))
			st->seccomp = atoi(v);
		else if (!strcmp(line, "SigBlk"))
			st->sig_blocked = strtoull(v, NULL, 16);
	}
	fclose(f);
	return 0;
}

/* "name" of a pid for messages; "?" when it is gone or hidden. */
void dp_proc_comm(pid_t pid, char *buf, size_t len)
{
	struct dp_proc_status st;

	if (dp_proc_status_read(pid, 0, &st) || !st.name[0])
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%s", st.name);
}

/* The tracer's thread id in TracerPid, as the process that owns it. */
static pid_t tgid_of(pid_t tid)
{
	struct dp_proc_status st;

	return dp_proc_status_read(tid, 0, &st) ? tid : st.tgid;
}

int dp_proc_check_tracer(pid_t pid, pid_t tid, pid_t tracer, struct dp_err *err)
{
	char name[64], tname[64];
	pid_t owner = tgid_of(tracer);

	dp_proc_comm(pid, name, sizeof(name));
	dp_proc_comm(owner, tname, sizeof(tname));
	if (owner == getpid())
		return dp_err_set(err, -DP_PROC_ETRACED,
			      "pid %d (%s) is already traced by this process: detach it first",
			      (int)pid, name);
	if (tid && tid != pid)
		return dp_err_set(err, -DP_PROC_ETRACED,
			      "thread %d of pid %d (%s) is traced by pid %d (%s): only one tracer "
			      "can attach; detach that one (a debugger or strace) first",
			      (int)tid, (int)pid, name, (int)owner, tname);
	return dp_err_set(err, -DP_PROC_ETRACED,
		      "pid %d (%s) is traced by pid %d (%s): only one tracer can attach; "
		      "detach that one (a debugger or strace) first",
		      (int)pid, name, (int)owner, tname);
}

/*
 * 1: nothing to refuse; -DP_PROC_E32BIT or -DP_PROC_ESTATIC with err; another
 * -errno: the program could not be read.
 */
static int check_elf(pid_t pid, const char *name, unsigned int flags, struct dp_err *err)
{
	char path[64];
	Elf64_Ehdr eh;
	int fd, has_interp = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, &eh, sizeof(eh), 0);
	if (n < EI_NIDENT || memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		/* Not ELF (a script's interpreter would be): nothing to judge. */
		close(fd);
		return 1;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || n < (ssize_t)sizeof(eh) ||
	    eh.e_machine != EM_X86_64) {
		close(fd);
		if (eh.e_ident[EI_CLASS] == ELFCLASS32 && eh.e_machine == EM_X86_64)
			return dp_err_set(err, -DP_PROC_E32BIT,
				      "pid %d (%s) runs an x32 program (32-bit pointers): only "
				      "64-bit x86-64 programs can be probed", (int)pid, name);
		if (eh.e_ident[EI_CLASS] == ELFCLASS32)
			return dp_err_set(err, -DP_PROC_E32BIT,
				      "pid %d (%s) runs a 32-bit program: only 64-bit x86-64 "
				      "programs can be probed", (int)pid, name);
		return dp_err_set(err, -DP_PROC_E32BIT,
			      "pid %d (%s) runs a program for another machine: only 64-bit "
			      "x86-64 programs can be probed", (int)pid, name);
	}
	for (unsigned i = 0; i < eh.e_phnum && eh.e_phentsize == sizeof(Elf64_Phdr); i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP)
			has_interp = 1;
	}
	close(fd);
	if (has_interp || (flags & DP_ATTACH_NO_AGENT))
		return 1;

	/*
	 * No PT_INTERP: a static program, or the loader run as a command
	 * ("ld.so ./prog"), which maps itself.  Ask the mappings.
	 */
	struct dp_maps maps;

	if (dp_maps_read(pid, &maps))
		return 1;
	for (size_t i = 0; i < maps.n; i++) {
		const char *b = maps.v[i].path ? strrchr(maps.v[i].path, '/') : NULL;

		if (b && !strncmp(b + 1, "ld-", 3) && strstr(b, ".so")) {
			dp_maps_free(&maps);
			return 1;
		}
	}
	dp_maps_free(&maps);
	return dp_err_set(err, -DP_PROC_ESTATIC,
		      "pid %d (%s) runs a statically linked program (no dynamic loader is "
		      "mapped): the agent cannot be loaded into it; only dynamically linked "
		      "programs can be probed", (int)pid, name);
}

int dp_proc_check(pid_t pid, unsigned int flags, struct dp_err *err)
{
	struct dp_proc_status st;
	int ret;

	if (pid <= 0)
		return dp_err_set(err, -DP_PROC_ENOPROC, "%d is not a process id", (int)pid);
	ret = dp_proc_status_read(pid, 0, &st);
	if (ret == -ENOENT || ret == -ESRCH)
		return dp_err_set(err, -DP_PROC_ENOPROC, "no process with pid %d", (int)pid);
	if (ret)
		return dp_err_set(err, ret, "cannot read /proc/%d/status: %s", (int)pid,
			    strerror(-ret));
	if (st.tgid != pid)
		return dp_err_set(err, -DP_PROC_ETHREAD,
			      "%d is a thread of process %d (%s): give the process id",
			      (int)pid, (int)st.tgid, st.name);
	if ((st.state == 'Z' || st.state == 'X') && st.threads <= 1)
		return dp_err_set(err, -DP_PROC_EZOMBIE,
			      "pid %d (%s) is a zombie: it has exited and waits for its parent "
			      "(pid %d) to collect it; nothing runs in it to probe",
			      (int)pid, st.name, (int)st.ppid);
	if (st.tracer)
		return dp_proc_check_tracer(pid, 0, st.tracer, err);
	ret = check_elf(pid, st.name, flags, err);
	if (ret > 0 || ret == -DP_PROC_E32BIT || ret == -DP_PROC_ESTATIC)
		return ret > 0 ? 0 : ret;
	/* Unreadable: the permission rules will explain it when we seize. */
	if (ret == -EACCES || ret == -EPERM || ret == -ENOENT)
		return 0;
	return dp_err_set(err, ret, "cannot read the program of pid %d (%s): %s", (int)pid,
		    st.name, strerror(-ret));
}

static int read_yama(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static bool is_descendant(pid_t pid)
{
	pid_t self = getpid();

	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		struct dp_proc_status st;

		if (dp_proc_status_read(pid, 0, &st))
			return false;
		if (st.ppid == self)
			return true;
		pid = st.ppid;
	}
	return false;
}

int dp_ptrace_facts_read(pid_t pid, pid_t tid, struct dp_ptrace_facts *f)
{
	struct dp_proc_status me, st;
	char path[64];
	struct stat sb;
	int ret;

	memset(f, 0, sizeof(*f));
	ret = dp_proc_status_read(getpid(), 0, &me);
	if (ret)
		return ret;
	ret = dp_proc_status_read(pid, tid, &st);
	if (ret)
		return ret;
	f->tracer_uid = getuid();
	f->tracer_gid = getgid();
	f->tracer_cap = (me.cap_eff >> CAP_SYS_PTRACE_BIT) & 1;
	f->tracer_caps = me.cap_prm;
	memcpy(f->target_uid, st.uid, sizeof(f->target_uid));
	memcpy(f->target_gid, st.gid, sizeof(f->target_gid));
	f->target_caps = st.cap_prm;
	/*
	 * The kernel gives the files under /proc/PID to root when the process
	 * is not dumpable (task_dump_owner); a dumpable one's belong to its
	 * euid.  (The directory's own inode may keep an older owner.)
	 */
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f->target_dumpable = stat(path, &sb) || sb.st_uid == st.uid[1] || st.uid[1] == 0;
	f->yama_scope = read_yama();
	f->target_is_descendant = is_descendant(pid);
	return 0;
}

int dp_ptrace_judge(pid_t pid, const struct dp_ptrace_facts *f, struct dp_err *err)
{
	bool same_uid = true, same_gid = true;

	if (f->yama_scope >= 3)
		return dp_err_set(err, -DP_PROC_EYAMA,
			      "cannot trace pid %d: yama ptrace_scope is 3, which forbids ptrace "
			      "to every process, root included; only a reboot lifts it",
			      (int)pid);
	for (int i = 0; i < 3; i++) {
		same_uid &= f->target_uid[i] == f->tracer_uid;
		same_gid &= f->target_gid[i] == f->tracer_gid;
	}
	if (!same_uid && !f->tracer_cap) {
		uid_t other = f->target_uid[1] != f->tracer_uid ? f->target_uid[1]
			    : f->target_uid[0] != f->tracer_uid ? f->target_uid[0]
			    : f->target_uid[2];

		return dp_err_set(err, -DP_PROC_EPRIV,
			      "cannot trace pid %d: it runs as uid %u and this process as uid %u "
			      "without CAP_SYS_PTRACE; run as uid %u or as root", (int)pid,
			      (unsigned)other, (unsigned)f->tracer_uid, (unsigned)other);
	}
	if (!same_gid && !f->tracer_cap)
		return dp_err_set(err, -DP_PROC_EPRIV,
			      "cannot trace pid %d: its groups (gid %u, effective %u, saved %u) "
			      "differ from this process's gid %u (set-group-ID program?) and this "
			      "process lacks CAP_SYS_PTRACE; run as root", (int)pid,
			      (unsigned)f->target_gid[0], (unsigned)f->target_gid[1],
			      (unsigned)f->target_gid[2], (unsigned)f->tracer_gid);
	if (!f->target_dumpable && !f->tracer_cap)
		return dp_err_set(err, -DP_PROC_ENODUMP,
			      "cannot trace pid %d: it is not dumpable (it called "
			      "prctl(PR_SET_DUMPABLE, 0), or changed credentials); only root "
			      "(CAP_SYS_PTRACE) can trace it", (int)pid);
	if ((f->target_caps & ~f->tracer_caps) && !f->tracer_cap)
		return dp_err_set(err, -DP_PROC_EPRIV,
			      "cannot trace pid %d: it holds capabilities this process lacks "
			      "(%#" PRIx64 "); run as root", (int)pid,
			      f->target_caps & ~f->tracer_caps);
	if (f->yama_scope == 2 && !f->tracer_cap)
		return dp_err_set(err, -DP_PROC_EYAMA,
			      "cannot trace pid %d: yama ptrace_scope is 2 (only processes with "
			      "CAP_SYS_PTRACE may trace); run as root, or set "
			      "kernel.yama.ptrace_scope to 0 or 1", (int)pid);
	if (f->yama_scope == 1 && !f->target_is_descendant && !f->tracer_cap)
		return dp_err_set(err, -DP_PROC_EYAMA,
			      "cannot trace pid %d: yama ptrace_scope is 1 (a process may only "
			      "trace its descendants, unless the target allows it with "
			      "prctl(PR_SET_PTRACER)) and pid %d is not a descendant of this "
			      "process; run as root (CAP_SYS_PTRACE), have the program call "
			      "PR_SET_PTRACER, or set kernel.yama.ptrace_scope to 0",
			      (int)pid, (int)pid);
	return 0;
}

/*
 * Threads share the process's credentials unless one changed its own with
 * the raw system call (per-thread setresuid, as some file servers do).
 */
static bool own_credentials(pid_t pid, const struct dp_ptrace_facts *thread)
{
	struct dp_ptrace_facts f;

	return !dp_ptrace_facts_read(pid, 0, &f) &&
	       (memcmp(f.target_uid, thread->target_uid, sizeof(f.target_uid)) ||
		memcmp(f.target_gid, thread->target_gid, sizeof(f.target_gid)) ||
		f.target_caps != thread->target_caps);
}

int dp_proc_explain_eperm(pid_t pid, pid_t tid, struct dp_err *err)
{
	struct dp_ptrace_facts f;
	int ret = dp_ptrace_facts_read(pid, tid, &f);

	if (ret == -ENOENT || ret == -ESRCH)
		return dp_err_set(err, -DP_PROC_ENOPROC, "pid %d exited", (int)pid);
	if (!ret) {
		ret = dp_ptrace_judge(pid, &f, err);
		if (ret && tid && tid != pid && own_credentials(pid, &f))
			dp_err_prefix(err, "thread %d of pid %d runs with credentials of its "
				      "own: ", (int)tid, (int)pid);
		if (ret)
			return ret;
	}
	if (tid && tid != pid)
		return dp_err_set(err, -DP_PROC_EPRIV,
			      "cannot trace thread %d of pid %d: the kernel denied ptrace though "
			      "its ownership, capabilities, dumpability and yama allow it, so a "
			      "security module (SELinux, AppArmor) or a container policy does; "
			      "see the audit log", (int)tid, (int)pid);
	return dp_err_set(err, -DP_PROC_EPRIV,
		      "cannot trace pid %d: the kernel denied ptrace though ownership, "
		      "capabilities, dumpability and yama allow it, so a security module "
		      "(SELinux, AppArmor) or a container policy does; see the audit log",
		      (int)pid);
}
