/*
 * Processes that start without the agent (--attach-exec, root only): the
 * kernel's process-events connector (netlink NETLINK_CONNECTOR, group
 * CN_IDX_PROC) tells of every exec on the machine as it completes.  A
 * process whose new executable is the object of an enabled path-wide event
 * (of its owner's), and that does not preload the agent (that one says
 * HELLO itself and is held in its constructor), is probed at once:
 *
 *   1. seized where it is, most likely still in its loader: its entry point
 *      (AT_ENTRY) becomes a spin loop, and it is let go (proc/child.h);
 *   2. when its main thread spins there, the loader has mapped and
 *      initialised every library and holds no lock: the path-wide events
 *      whose objects it maps are installed (the agent injected through
 *      that thread, which holds no lock of the C library);
 *   3. the entry's bytes go back: the program's _start, then main, run
 *      probed.
 * Processes of another mount namespace are not ours (same_mount_ns).
 * Between steps 1 and 3 the spin is on record in the run directory, so that
 * a daemon killed meanwhile does not leave the program spinning for good:
 * the next one puts the bytes back as it starts (dpd_execs_recover).
 * A process that ran past its entry before step 1 (the daemon was slow)
 * never spins: after EXEC_HOLD_MS the bytes go back and the events are
 * installed in the running program, like any enable-event: its first calls
 * are then missed.
 *
 * Why the connector: it is the kernel's own notice of each exec, pushed to
 * us with the new process's pid as the exec returns, at no cost to the
 * machine's other processes; polling /proc would come tens of milliseconds
 * late, and an eBPF or ptrace-everything scheme would need more privilege
 * and weigh on every process.  Its limits: root only (CAP_NET_ADMIN), and a
 * notice, not a stop: the process runs while the daemon reads it.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/child.h"
#include "proc/proc-status.h"
#include "proc/ptrace.h"

/* How long a caught process may take to reach its entry point. */
#define EXEC_HOLD_MS 300
#define EXEC_POLL_MS 1

int dpd_execs_fd = -1;

int dpd_execs_open(struct dp_err *err)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	struct {
		struct nlmsghdr nl;
		struct cn_msg cn;
		enum proc_cn_mcast_op op;
	} __attribute__((packed)) msg;
	int fd, rcv = 4 << 20;

	if (geteuid() != 0)
		return dp_err_set(err, -EPERM,
				  "--attach-exec needs root: the kernel's process-events "
				  "connector (netlink, CN_IDX_PROC) is open to root only; "
				  "start programs with the agent preloaded instead");
	fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
	if (fd < 0)
		return dp_err_set(err, -errno, "no process-events connector (netlink): %s",
				  strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return dp_err_set(err, -e, "cannot join the process-events connector: %s",
				  strerror(e));
	}
	memset(&msg, 0, sizeof(msg));
	msg.nl.nlmsg_len = sizeof(msg);
	msg.nl.nlmsg_type = NLMSG_DONE;
	msg.nl.nlmsg_pid = (uint32_t)getpid();
	msg.cn.id.idx = CN_IDX_PROC;
	msg.cn.id.val = CN_VAL_PROC;
	msg.cn.len = sizeof(msg.op);
	msg.op = PROC_CN_MCAST_LISTEN;
	if (send(fd, &msg, sizeof(msg), 0) < 0) {
		int e = errno;

		close(fd);
		return dp_err_set(err, -e, "cannot listen to process events: %s", strerror(e));
	}
	dpd_execs_fd = fd;
	return 0;
}

/* Whether pid preloads the agent (it then says HELLO itself). */
static bool preloads_agent(pid_t pid)
{
	char v[4096];

	/* liblttng-ust-dynprobe.so.0 and .so, installed or not: the agent. */
	return !dp_proc_environ_get(pid, "LD_PRELOAD", v, sizeof(v)) &&
	       strstr(v, "liblttng-ust-dynprobe") != NULL;
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Whether an enabled path-wide event of uid's wants pid (it maps the
 * event's object). */
static bool wanted(const struct dpd_event *ev, pid_t pid, uid_t uid)
{
	return !ev->unlinked && ev->enabled && !ev->npids && ev->obj && ev->owner == uid &&
	       dpd_object_mapped(ev->obj, pid);
}

/*
 * Whether pid sees the files through the daemon's own mount namespace.  The
 * connector tells of execs in every namespace of the machine, but a
 * path-wide event names a file as the daemon sees it, and an agent loaded
 * into a process of another mount namespace (a container, a test's private
 * /var/run/lttng) would talk to that namespace's session daemon: such a
 * process is left to a daemon of its own namespace.
 */
static struct stat self_ns;
static bool self_ns_known;

static void self_ns_read(void)
{
	self_ns_known = !stat("/proc/self/ns/mnt", &self_ns);
}

static bool same_mount_ns(pid_t pid)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct stat self, other;
	char path[64];

	/* Ours does not change: read once (the loop asks at every exec). */
	pthread_once(&once, self_ns_read);
	self = self_ns;
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	return self_ns_known && !stat(path, &other) && self.st_dev == other.st_dev &&
	       self.st_ino == other.st_ino;
}

/*
 * A spin loop at a process's entry that the daemon wrote and has not yet
 * taken back is a file of the run directory, written before the loop and
 * removed once the bytes are back: a daemon killed in between (SIGKILL, a
 * crash, the OOM killer) leaves a program that spins forever, and the next
 * daemon finds it there (dpd_execs_recover).  One line:
 *   pid P start T image HEX32 entry 0xADDR orig HEX4
 * (T: the process's start time, /proc/PID/stat's 22nd field, which tells a
 * reused pid; the image: AT_RANDOM's bytes, which tell another execve of the
 * same process).  Not synced: the daemon's death is the case, not the
 * machine's (a spinning program does not survive a reboot either).
 */
#define SPIN_PREFIX "lttng-dynprobed.entry."

struct spin_record {
	pid_t pid;
	uint64_t start;
	uint8_t image[DPD_IMAGE_ID_LEN];
	uint64_t entry;
	uint8_t orig[DP_CHILD_SPIN_LEN];
};

static void spin_path(pid_t pid, char *buf, size_t len)
{
	snprintf(buf, len, "%s/" SPIN_PREFIX "%d", dpd_cfg.run_dir, (int)pid);
}

/* The start time of pid (clock ticks after boot), or 0. */
static uint64_t start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* After the name (which may hold spaces and parentheses): field 3 on. */
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &t) != 1)
		return 0;
	return t;
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static int unhex(const char *s, uint8_t *b, size_t n)
{
	unsigned int v;

	if (strlen(s) != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		b[i] = (uint8_t)v;
	}
	return 0;
}

static int spin_record_store(const struct spin_record *r)
{
	char path[DP_CLIENT_PATH_MAX + 64], line[256], image[2 * DPD_IMAGE_ID_LEN + 1];
	char orig[2 * DP_CHILD_SPIN_LEN + 1];
	int fd, len, ret = 0;

	hex(image, r->image, sizeof(r->image));
	hex(orig, r->orig, sizeof(r->orig));
	len = snprintf(line, sizeof(line), "pid %d start %" PRIu64 " image %s entry 0x%" PRIx64
		       " orig %s\n", (int)r->pid, r->start, image, r->entry, orig);
	spin_path(r->pid, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	/* One write: a daemon killed before it leaves an empty file, and no
	 * spin (dropped as malformed at the next start). */
	errno = 0;
	if (write(fd, line, (size_t)len) != len)
		ret = errno ? -errno : -ENOSPC;
	close(fd);
	if (ret)
		unlink(path);
	return ret;
}

static void spin_record_remove(pid_t pid)
{
	char path[DP_CLIENT_PATH_MAX + 64];

	spin_path(pid, path, sizeof(path));
	unlink(path);
}

/* The entry's bytes back (a job's own ptrace); the record goes with them,
 * or with the process.  Whether they are back. */
static bool release_entry(const struct dp_child_entry *h)
{
	struct dp_err msg = DP_ERR_INIT;
	bool ok = !dp_child_release_entry(h, &msg);

	if (!ok)
		dpd_err("process %d: %s", (int)h->pid, msg.msg);
	/* Kept for the next daemon while the process lives unrestored. */
	if (ok || !dp_proc_alive(h->pid))
		spin_record_remove(h->pid);
	return ok;
}

/* What pid's entry point holds now, recorded before it is made a spin. */
static int spin_record_write(pid_t pid, struct spin_record *r)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->start = start_time(pid);
	ret = r->start ? 0 : -ESRCH;
	if (!ret)
		ret = dpd_image_id(pid, r->image);
	if (!ret)
		ret = dp_proc_auxv(pid, AT_ENTRY, &r->entry);
	if (!ret)
		ret = dp_proc_mem_read(pid, r->entry, r->orig, sizeof(r->orig));
	if (!ret)
		ret = spin_record_store(r);
	if (ret)
		dpd_info("process %d: its entry point cannot be recorded in %s: %s", (int)pid,
			 dpd_cfg.run_dir, strerror(-ret));
	return ret;
}

/* The catch saw the same bytes as the record (else the record is made
 * right: the catch's are what the release puts back). */
static int spin_record_check(struct spin_record *r, const struct dp_child_entry *h)
{
	if (r->entry == h->entry && !memcmp(r->orig, h->orig, sizeof(r->orig)))
		return 0;
	r->entry = h->entry;
	memcpy(r->orig, h->orig, sizeof(r->orig));
	if (!spin_record_store(r))
		return 0;
	/* No record: no spin either. */
	if (!release_entry(h))
		dpd_err("process %d: left spinning at its entry point 0x%" PRIx64, (int)r->pid,
			r->entry);
	return -EIO;
}

void dpd_exec_seen(pid_t pid)
{
	struct dp_proc_status st;
	struct dp_child_entry hold;
	struct spin_record rec;
	struct dpd_event *ev, **evs;
	bool want = false, held = false;
	int64_t t0 = now_us();
	size_t nevs = 0;
	int ret;

	if (pid == getpid() || dp_proc_status_read(pid, 0, &st) || !same_mount_ns(pid))
		return;
	for (ev = dpd_events; ev && !want; ev = ev->next)
		want = wanted(ev, pid, st.uid[1]);
	if (!want || preloads_agent(pid))
		return;
	/* Ours from the catch to the release: ptrace is this thread's. */
	if (dpd_hold(pid))
		return;
	/* No spin that a restarted daemon could not find: recorded first. */
	ret = spin_record_write(pid, &rec);
	if (!ret) {
		ret = dp_child_catch_entry(pid, &hold);
		if (!ret)
			ret = spin_record_check(&rec, &hold);
		else
			spin_record_remove(pid);
	}
	if (ret) {
		dpd_info("process %d executed a probed program: cannot hold it at its entry: %s",
			 (int)pid, strerror(-ret));
	} else {
		int wstatus;

		dpd_unlock();
		ret = dp_child_wait_entry(&hold, EXEC_HOLD_MS, EXEC_POLL_MS, &wstatus);
		dpd_lock();
		held = ret == 0;
		if (held)
			dpd_fault("spun");
		if (!held && !release_entry(&hold)) {
			dpd_unhold(pid);
			return;
		}
	}
	dpd_info("process %d executed a probed program without the agent: %s (%.1f ms)", (int)pid,
		 held ? "held at its entry point" : "past its entry point, probed as it runs",
		 (double)(now_us() - t0) / 1000);
	/* A copy of the list, pinned: installing lets the lock go. */
	for (ev = dpd_events; ev; ev = ev->next)
		nevs++;
	evs = calloc(nevs ? nevs : 1, sizeof(*evs));
	nevs = 0;
	for (ev = dpd_events; ev && evs; ev = ev->next) {
		dpd_event_pin(ev);
		evs[nevs++] = ev;
	}
	for (size_t e = 0; e < nevs; e++) {
		struct dp_client_proc rp;

		ev = evs[e];
		if (!wanted(ev, pid, st.uid[1]))
			continue;
		memset(&rp, 0, sizeof(rp));
		dpd_install_pinned(ev, pid, &rp);
		dpd_remove_if_gone(ev, pid);
		dpd_info("process %d started without the agent: %s: %s%s", (int)pid, ev->names[0],
			 rp.status ? rp.message : "installed",
			 rp.status ? "" : held ? " before its entry point" : " while it runs");
		free(rp.sites);
	}
	for (size_t e = 0; e < nevs; e++)
		dpd_event_unpin(evs[e]);
	free(evs);
	if (held)
		release_entry(&hold);
	dpd_unhold(pid);
}

void dpd_execs_readable(void (*seen)(pid_t pid))

{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	ssize_t n;

	while ((n = recv(dpd_execs_fd, buf, sizeof(buf), 0)) > 0) {
		for (struct nlmsghdr *nl = (struct nlmsghdr *)buf; NLMSG_OK(nl, (size_t)n);
		     nl = NLMSG_NEXT(nl, n)) {
			struct cn_msg *cn = NLMSG_DATA(nl);
			struct proc_event *pe = (struct proc_event *)cn->data;

			if (nl->nlmsg_type == NLMSG_ERROR || nl->nlmsg_type == NLMSG_NOOP ||
			    cn->id.idx != CN_IDX_PROC || cn->len < sizeof(*pe))
				continue;
			/* Another namespace's process (another container's, a
			 * test run's beside) is never a job: its execs cost the
			 * loop one stat each. */
			if (pe->what == PROC_EVENT_EXEC &&
			    same_mount_ns((pid_t)pe->event_data.exec.process_tgid))
				seen((pid_t)pe->event_data.exec.process_tgid);
		}
	}
	if (n < 0 && errno == ENOBUFS)
		dpd_info("process events lost (the machine executed faster than we read)");
}

static int spin_record_parse(const char *path, struct spin_record *r)
{
	char line[256], image[64], orig[16];
	unsigned long long start, entry;
	ssize_t n;
	int fd, pid;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	line[n] = '\0';
	memset(r, 0, sizeof(*r));
	if (sscanf(line, "pid %d start %llu image %63s entry %llx orig %15s", &pid, &start,
		   image, &entry, orig) != 5 || pid <= 0 || !start ||
	    unhex(image, r->image, sizeof(r->image)) || unhex(orig, r->orig, sizeof(r->orig)))
		return -EINVAL;
	r->pid = pid;
	r->start = start;
	r->entry = entry;
	return 0;
}

/* With every thread of r's process held: whether it is still the program
 * the record names, spinning at its entry; a message why not in msg. */
static bool still_spins(struct dp_proc *p, const struct spin_record *r, struct dp_err *msg)
{
	static const uint8_t spin[DP_CHILD_SPIN_LEN] = { 0xeb, 0xfe };
	uint8_t image[DPD_IMAGE_ID_LEN], now[DP_CHILD_SPIN_LEN];
	uint64_t entry;

	if (dpd_image_id(r->pid, image) || memcmp(image, r->image, sizeof(image)) ||
	    dp_proc_auxv(r->pid, AT_ENTRY, &entry) || entry != r->entry) {
		dp_err_set(msg, -ESTALE, "it executed another program since");
		return false;
	}
	if (dp_proc_read(p, r->entry, now, sizeof(now))) {
		dp_err_set(msg, -EFAULT, "its entry point cannot be read: %s", dp_proc_errmsg(p));
		return false;
	}
	if (memcmp(now, spin, sizeof(spin))) {
		dp_err_set(msg, -EALREADY, "its entry point does not spin (%02x %02x)", now[0],
			   now[1]);
		return false;
	}
	return true;
}

/* r's entry bytes back if it still spins there: 0 restored, 1 nothing to
 * do (why in msg), or -errno with msg. */
static int spin_restore(const struct spin_record *r, struct dp_err *msg)
{
	struct dp_proc *p;
	int ret;

	if (!dp_proc_alive(r->pid)) {
		dp_err_set(msg, -ESRCH, "the process is gone");
		return 1;
	}
	/* Another process under a reused pid is not touched at all. */
	if (start_time(r->pid) != r->start) {
		dp_err_set(msg, -ESRCH, "the process is gone (its pid is another's now)");
		return 1;
	}
	p = dp_proc_open(r->pid);
	if (!p)
		return dp_err_set(msg, -ENOMEM, "out of memory");
	ret = dp_proc_attach(p, DP_ATTACH_NO_AGENT);
	if (ret) {
		*msg = *dp_proc_err(p);
		dp_proc_close(p);
		return ret == -DP_PROC_ENOPROC || ret == -DP_PROC_EZOMBIE ? 1 : ret;
	}
	if (!still_spins(p, r, msg))
		ret = 1;
	else if ((ret = dp_proc_write(p, r->entry, r->orig, sizeof(r->orig))))
		*msg = *dp_proc_err(p);
	if (dp_proc_detach(p) && !ret) {
		*msg = *dp_proc_err(p);
		ret = msg->code ? msg->code : -EIO;
	}
	dp_proc_close(p);
	return ret;
}

void dpd_execs_recover(void)
{
	char path[DP_CLIENT_PATH_MAX + sizeof(((struct dirent *)0)->d_name) + 1];
	struct dirent *de;
	DIR *dir = opendir(dpd_cfg.run_dir);

	while (dir && (de = readdir(dir))) {
		struct dp_err msg = DP_ERR_INIT;
		struct spin_record r;
		int ret;

		if (strncmp(de->d_name, SPIN_PREFIX, strlen(SPIN_PREFIX)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dpd_cfg.run_dir, de->d_name);
		ret = spin_record_parse(path, &r);
		if (ret) {
			dpd_info("%s: not a record of an entry point, dropped", path);
		} else {
			ret = spin_restore(&r, &msg);
			if (!ret)
				dpd_info("process %d: its entry point 0x%" PRIx64 " restored "
					 "(%02x %02x): a daemon died while it spun there",
					 (int)r.pid, r.entry, r.orig[0], r.orig[1]);
			else if (ret > 0)
				dpd_info("process %d: the record of its entry point 0x%" PRIx64
					 " dropped: %s", (int)r.pid, r.entry, msg.msg);
			else
				dpd_err("process %d: cannot restore its entry point 0x%" PRIx64
					" (%02x %02x), left by a daemon that died: %s", (int)r.pid,
					r.entry, r.orig[0], r.orig[1], msg.msg);
		}
		unlink(path);
	}
	if (dir)
		closedir(dir);
}
