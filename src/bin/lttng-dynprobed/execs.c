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
#include <errno.h>
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
static bool same_mount_ns(pid_t pid)
{
	char path[64];
	struct stat self, other;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	return !stat("/proc/self/ns/mnt", &self) && !stat(path, &other) &&
	       self.st_dev == other.st_dev && self.st_ino == other.st_ino;
}

void dpd_exec_seen(pid_t pid)
{
	struct dp_proc_status st;
	struct dp_child_entry hold;
	struct dp_err msg = DP_ERR_INIT;
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
	ret = dp_child_catch_entry(pid, &hold);
	if (ret) {
		dpd_info("process %d executed a probed program: cannot hold it at its entry: %s",
			 (int)pid, strerror(-ret));
	} else {
		int wstatus;

		dpd_unlock();
		ret = dp_child_wait_entry(&hold, EXEC_HOLD_MS, EXEC_POLL_MS, &wstatus);
		dpd_lock();
		held = ret == 0;
		if (!held && dp_child_release_entry(&hold, &msg)) {
			dpd_err("process %d: %s", (int)pid, msg.msg);
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
		dpd_install(ev, pid, &rp);
		dpd_remove_if_gone(ev, pid);
		dpd_info("process %d started without the agent: %s: %s%s", (int)pid, ev->names[0],
			 rp.status ? rp.message : "installed",
			 rp.status ? "" : held ? " before its entry point" : " while it runs");
		free(rp.sites);
	}
	for (size_t e = 0; e < nevs; e++)
		dpd_event_unpin(evs[e]);
	free(evs);
	if (held && dp_child_release_entry(&hold, &msg))
		dpd_err("process %d: %s", (int)pid, msg.msg);
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
			if (pe->what == PROC_EVENT_EXEC)
				seen((pid_t)pe->event_data.exec.process_tgid);
		}
	}
	if (n < 0 && errno == ENOBUFS)
		dpd_info("process events lost (the machine executed faster than we read)");
}
