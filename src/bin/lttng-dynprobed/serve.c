/*
 * The server: one thread, the loop, owns every connection, accepts, and
 * reads whatever bytes arrive without ever blocking; a frame is buffered
 * until it is whole, then handed to a worker, which serves it (under
 * lock.c's rules) and answers.  A stalled or slow peer costs the others
 * nothing: its half frame waits in its own buffer, and the connection is
 * closed when the frame is not whole DPD_FRAME_MS after its first byte (an
 * agent's connection before HELLO: after it connected).
 *
 * Bounds, so that one user cannot starve the others (root's app socket is
 * open to every user, as lttng-sessiond's is):
 *  - connections: at most --max-user-connections open per user (clients,
 *    agents before and after HELLO), the daemon's own user excepted; the
 *    next one gets a REFUSE saying why, and the log says it once a second;
 *  - bytes: the frames of a user's connections, from their header until a
 *    worker is done with them (assembled, queued, served), hold at most
 *    DPD_USER_BUF_MAX bytes; a connection that would go past is closed;
 *  - work: a connection has one request served at a time (its next frame
 *    is read after the reply), and a user's jobs occupy at most
 *    DPD_USER_JOBS workers at once: the others wait in the queue while
 *    other users' jobs go first.  HELLOs are not held to that (an install
 *    may be waiting for one), but a user other than the daemon's has at
 *    most DPD_USER_HELLOS of them queued or served at once: its next
 *    whole HELLO waits in its connection, which is not read meanwhile.
 *
 * Workers are started by a thread of their own, the spawner, so that the
 * loop waits for nothing but poll (pthread_create takes locks of the C
 * library, and of a sanitizer's runtime).
 *
 * Agent connections after HELLO belong to their process's holder while a
 * job holds it (its calls read their replies there).  The loop only polls
 * them; data outside a call (a MAPPED, a close) becomes a job that holds
 * the process, looks without blocking, and reads only a whole frame.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/proc-status.h"

#define DPD_FRAME_MS 5000
#define DPD_USER_BUF_MAX (64u << 20)
#define DPD_USER_JOBS 4
#define DPD_USER_HELLOS 8
#define DPD_MAX_WORKERS 32
/* An agent connection that holds half a frame is looked at again after
 * this long (it stays readable meanwhile). */
#define DPD_AGENT_QUIET_MS 200
/* Exec notices waiting for a worker: beyond, they are dropped. */
#define DPD_MAX_EXEC_JOBS 256

int dpd_max_user_conns = 128;

enum conn_kind { CONN_CLIENT, CONN_APP };

struct conn {
	struct conn *next;
	enum conn_kind kind;
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	uint8_t *buf;
	size_t len, want;		/* want: the header's size, then the frame's */
	int64_t deadline;		/* the frame must be whole by then (0: none) */
	/* Under q_mu: a worker serves its frame; then `dead` (close it) or
	 * `adopted` (an agent's now: forget it, do not close). */
	bool busy, dead, adopted;
	/* Loop only: a whole HELLO waits for its user's HELLOs to go down
	 * (DPD_USER_HELLOS). */
	bool waiting;
};

enum job_kind { JOB_CLIENT, JOB_HELLO, JOB_AGENT, JOB_PENDING, JOB_EXEC, JOB_POLL };

static const char *const job_names[] = {
	"a client's request", "an agent's HELLO", "an agent's message", "a process's pending installs",
	"an exec notice", "the session poll",
};

struct job {
	struct job *next;
	enum job_kind kind;
	uid_t uid;
	struct conn *c;			/* JOB_CLIENT, JOB_HELLO */
	uint8_t *frame;
	size_t len;
	size_t counted;			/* of its user's buffered bytes */
	pid_t pid;			/* JOB_AGENT, JOB_PENDING, JOB_EXEC */
	int fd;				/* JOB_AGENT */
	int64_t queued;			/* when it was queued (dpd_now_ms) */
	uint64_t epoch;			/* dpd_objects_epoch() as it began */
	struct job *run_next;		/* in `running` */
};

struct user {
	uid_t uid;
	int running;			/* jobs in workers */
	int hellos;			/* HELLO jobs queued or in workers */
	size_t buffered;		/* frame bytes of its connections and jobs */
};

static struct conn *conns;
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static struct job *queue;
/* The jobs in workers: the objects that fell idle before the first of
 * them began can be closed (resolve.c). */
static struct job *running;
static struct user *users;
static size_t nusers;
static int nworkers, nidle, nrunning, nexec_jobs;
static bool stopping, poll_running;
/* Workers to start (counted in nworkers already): the spawner starts them,
 * so that the loop never waits in pthread_create (which takes locks of the
 * C library and, under a sanitizer, of its runtime). */
static pthread_cond_t spawn_cond = PTHREAD_COND_INITIALIZER;
static int spawn_want;
static pthread_t spawner_thread;
static bool spawner_running;
static int wake_fd = -1;

static void wake_loop(void)
{
	uint64_t one = 1;

	if (write(wake_fd, &one, sizeof(one)) < 0)
		return;
}

/* With q_mu. */
static struct user *user_of(uid_t uid)
{
	struct user *v;

	for (size_t i = 0; i < nusers; i++)
		if (users[i].uid == uid)
			return &users[i];
	v = realloc(users, (nusers + 1) * sizeof(*v));
	if (!v)
		return NULL;
	users = v;
	memset(&users[nusers], 0, sizeof(users[0]));
	users[nusers].uid = uid;
	return &users[nusers++];
}

/* ---- workers ---------------------------------------------------------- */

/* With q_mu: a job's frame, freed, no longer counts against its user. */
static void job_uncount(struct job *j)
{
	struct user *u = user_of(j->uid);

	if (!u)
		return;
	u->buffered -= j->counted;
	j->counted = 0;
	if (j->kind == JOB_HELLO)
		u->hellos--;
}

static void run_client(struct job *j)
{
	struct dpd_client cl = { .fd = j->c->fd, .uid = j->c->uid, .gid = j->c->gid,
				 .pid = j->c->pid };
	struct dp_client_msg rep;
	uint16_t type = j->len >= 8 ? (uint16_t)(j->frame[6] | j->frame[7] << 8) : 0;
	/* PING touches no state: it is answered even while every other
	 * request waits for the lock. */
	bool lock = type != DP_CLIENT_PING;
	const char *name = dp_client_type_name(type);
	int ret;

	/* Named for health.c by the request's type. */
	if (lock)
		dpd_lock_by(name ? name : "a client request");
	ret = dpd_client_request(&cl, j->frame, j->len, &rep);
	if (lock)
		dpd_unlock();
	if (ret >= 0 && !dpd_client_reply(&cl, &rep))
		ret = -1;
	pthread_mutex_lock(&q_mu);
	j->c->dead = ret != 0;
	j->c->busy = false;
	pthread_mutex_unlock(&q_mu);
}

static void run_hello(struct job *j)
{
	struct conn *c = j->c;
	bool adopted;

	/* It takes the state lock itself, once the frame is decoded. */
	adopted = dpd_agent_hello(c->fd, c->pid, c->uid, c->gid, j->frame, j->len);
	pthread_mutex_lock(&q_mu);
	c->adopted = adopted;
	c->dead = !adopted;
	c->busy = false;
	pthread_mutex_unlock(&q_mu);
}

static void run_job(struct job *j)
{
	switch (j->kind) {
	case JOB_CLIENT:
		run_client(j);
		break;
	case JOB_HELLO:
		run_hello(j);
		break;
	case JOB_AGENT: {
		bool partial;

		dpd_lock();
		partial = dpd_agent_readable(j->pid, j->fd);
		dpd_unlock();
		dpd_watch_done(j->pid, j->fd, partial ? dpd_now_ms() + DPD_AGENT_QUIET_MS : 0);
		break;
	}
	case JOB_PENDING:
		dpd_lock();
		dpd_install_pending(j->pid);
		dpd_unlock();
		break;
	case JOB_EXEC:
		dpd_lock();
		dpd_exec_seen(j->pid);
		dpd_unlock();
		break;
	case JOB_POLL:
		dpd_lock();
		dpd_procs_reap();
		dpd_sessions_poll();
		dpd_unlock();
		pthread_mutex_lock(&q_mu);
		poll_running = false;
		pthread_mutex_unlock(&q_mu);
		break;
	}
}

/* With q_mu: the first job whose user has a worker to spare.  A HELLO
 * always has one: an install of that user's may be waiting for it (and it
 * is quick, one per connection). */
static struct job *take_job(void)
{
	for (struct job **jp = &queue; *jp; jp = &(*jp)->next) {
		struct user *u = user_of((*jp)->uid);
		struct job *j = *jp;

		if (u && u->running >= DPD_USER_JOBS && j->kind != JOB_HELLO)
			continue;
		*jp = j->next;
		if (u)
			u->running++;
		return j;
	}
	return NULL;
}

void dpd_block_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

/* With q_mu: j leaves `running`; the epoch the oldest job still running
 * noted (now's when none runs). */
static uint64_t job_done(struct job *j)
{
	uint64_t oldest = dpd_objects_epoch();

	for (struct job **it = &running; *it;) {
		if (*it == j) {
			*it = j->run_next;
			continue;
		}
		if ((*it)->epoch < oldest)
			oldest = (*it)->epoch;
		it = &(*it)->run_next;
	}
	return oldest;
}

static void *worker(void *arg)
{
	uint64_t oldest;

	(void)arg;
	dpd_block_signals();
	pthread_mutex_lock(&q_mu);
	for (;;) {
		struct job *j;
		struct user *u;

		while (!stopping && !(j = take_job())) {
			nidle++;
			pthread_cond_wait(&q_cond, &q_mu);
			nidle--;
		}
		if (stopping)
			break;
		if (j->kind == JOB_EXEC)
			nexec_jobs--;
		nrunning++;
		j->epoch = dpd_objects_epoch();
		j->run_next = running;
		running = j;
		{
			int64_t waited = dpd_now_ms() - j->queued;
			int nw = nworkers, ni = nidle;

			pthread_mutex_unlock(&q_mu);
			/* As health.c's reports: a job that waited that long for
			 * a worker held its peer up. */
			if (waited >= 2000)
				dpd_err("%s (uid %u) waited %lld ms for a worker (%d workers, %d "
					"idle)", job_names[j->kind], (unsigned)j->uid,
					(long long)waited, nw, ni);
		}
		run_job(j);
		free(j->frame);
		pthread_mutex_lock(&q_mu);
		u = user_of(j->uid);
		if (u)
			u->running--;
		job_uncount(j);
		nrunning--;
		oldest = job_done(j);
		free(j);
		/* A user's job done may let another of its jobs run. */
		pthread_cond_broadcast(&q_cond);
		wake_loop();
		if (dpd_objects_trim_wanted()) {
			/* The state lock is never taken holding q_mu. */
			pthread_mutex_unlock(&q_mu);
			dpd_lock_by("closing idle objects");
			dpd_objects_trim(oldest);
			dpd_unlock();
			pthread_mutex_lock(&q_mu);
		}
	}
	nworkers--;
	pthread_cond_broadcast(&q_cond);
	pthread_mutex_unlock(&q_mu);
	return NULL;
}

static void *spawner(void *arg)
{
	(void)arg;
	dpd_block_signals();
	pthread_mutex_lock(&q_mu);
	for (;;) {
		pthread_t t;
		bool ok;

		while (!stopping && !spawn_want)
			pthread_cond_wait(&spawn_cond, &q_mu);
		if (stopping)
			break;
		spawn_want--;
		pthread_mutex_unlock(&q_mu);
		ok = !pthread_create(&t, NULL, worker, NULL);
		if (ok)
			pthread_detach(t);
		else
			dpd_err("cannot start a worker thread: its jobs wait for another");
		pthread_mutex_lock(&q_mu);
		if (!ok) {
			nworkers--;
			pthread_cond_broadcast(&q_cond);
		}
	}
	/* The workers never started are not waited for. */
	nworkers -= spawn_want;
	spawn_want = 0;
	pthread_cond_broadcast(&q_cond);
	pthread_mutex_unlock(&q_mu);
	return NULL;
}

/* Queues a job (taking frame); a worker is started when none is idle. */
static int submit(struct job *j)
{
	pthread_mutex_lock(&q_mu);
	if (stopping) {
		job_uncount(j);
		pthread_mutex_unlock(&q_mu);
		free(j->frame);
		free(j);
		return -ESHUTDOWN;
	}
	j->next = NULL;
	j->queued = dpd_now_ms();
	for (struct job **jp = &queue;; jp = &(*jp)->next)
		if (!*jp) {
			*jp = j;
			break;
		}
	if (j->kind == JOB_EXEC)
		nexec_jobs++;
	/* A HELLO gets a worker even when every one waits (for a hold an
	 * install keeps until that HELLO comes). */
	if (nidle <= spawn_want && (nworkers < DPD_MAX_WORKERS ||
				     (j->kind == JOB_HELLO && nworkers < 2 * DPD_MAX_WORKERS))) {
		nworkers++;
		spawn_want++;
		pthread_cond_signal(&spawn_cond);
	}
	pthread_cond_signal(&q_cond);
	pthread_mutex_unlock(&q_mu);
	return 0;
}

static struct job *job_new(enum job_kind kind, uid_t uid)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		dpd_err("out of memory queueing a job");
		return NULL;
	}
	j->kind = kind;
	j->uid = uid;
	return j;
}

static void pending_released(pid_t pid)
{
	struct dpd_proc *p = dpd_proc_find(pid);
	struct job *j;

	/* The state lock is held: the flag is the holder's to clear. */
	if (!p || p->fd < 0 || (!p->go_pending && !p->mapped) || p->pending_queued)
		return;
	j = job_new(JOB_PENDING, p->uid);
	if (!j)
		return;
	j->pid = pid;
	if (!submit(j))
		p->pending_queued = true;
}

static void exec_notice(pid_t pid)
{
	static int64_t last_said;
	struct dp_proc_status st;
	struct job *j;
	bool full;

	if (dp_proc_status_read(pid, 0, &st))
		return;
	pthread_mutex_lock(&q_mu);
	full = nexec_jobs >= DPD_MAX_EXEC_JOBS;
	pthread_mutex_unlock(&q_mu);
	if (full) {
		if (dpd_now_ms() - last_said > 1000) {
			dpd_info("more than %d exec notices wait: process %d not looked at",
				 DPD_MAX_EXEC_JOBS, (int)pid);
			last_said = dpd_now_ms();
		}
		return;
	}
	j = job_new(JOB_EXEC, st.uid[0]);
	if (!j)
		return;
	j->pid = pid;
	submit(j);
}

/* ---- connections ------------------------------------------------------ */

static size_t user_conns(uid_t uid)
{
	size_t n = dpd_watch_count(uid);

	for (struct conn *c = conns; c; c = c->next)
		n += c->uid == uid;
	return n;
}

static void refuse_conn(int fd, enum conn_kind kind, const char *reason)
{
	if (kind == CONN_CLIENT) {
		struct dp_client_msg m = { .type = DP_CLIENT_REFUSE };

		m.refuse.major = DP_CLIENT_MAJOR;
		m.refuse.minor = DP_CLIENT_MINOR;
		snprintf(m.refuse.reason, sizeof(m.refuse.reason), "%s", reason);
		dp_client_send(fd, &m, 100);
	} else {
		struct dp_app_msg m = { .type = DP_APP_REFUSE };

		m.refuse.major = DP_APP_MAJOR;
		m.refuse.minor = DP_APP_MINOR;
		snprintf(m.refuse.reason, sizeof(m.refuse.reason), "%s", reason);
		dp_app_send(fd, &m, 100);
	}
}

/* Accepts one connection: 0, or -errno (-EAGAIN: none waits). */
static int accept_one(int listen_fd, enum conn_kind kind)
{
	static int64_t last_said;
	static unsigned refused;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct conn *c;
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		close(fd);
		return 0;
	}
	/* The client socket is 0600, a user's app socket too: second locks. */
	if ((kind == CONN_CLIENT && cred.uid != geteuid() && cred.uid != 0) ||
	    (kind == CONN_APP && cred.uid != geteuid() && geteuid() != 0)) {
		dpd_err("%s pid %d of uid %u refused", kind == CONN_CLIENT ? "client" : "agent of",
			(int)cred.pid, (unsigned)cred.uid);
		close(fd);
		return 0;
	}
	if (cred.uid != geteuid() && user_conns(cred.uid) >= (size_t)dpd_max_user_conns) {
		char reason[160];

		snprintf(reason, sizeof(reason), "uid %u has %d connections to lttng-dynprobed "
			 "open, the most one user may have (--max-user-connections): close some",
			 (unsigned)cred.uid, dpd_max_user_conns);
		refuse_conn(fd, kind, reason);
		close(fd);
		refused++;
		if (dpd_now_ms() - last_said >= 1000) {
			dpd_err("%s pid %d refused: %s (%u refused since the last message)",
				kind == CONN_CLIENT ? "client" : "agent of", (int)cred.pid, reason,
				refused);
			last_said = dpd_now_ms();
			refused = 0;
		}
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return 0;
	}
	c->kind = kind;
	c->fd = fd;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	/* An agent says HELLO at once. */
	if (kind == CONN_APP)
		c->deadline = dpd_now_ms() + DPD_FRAME_MS;
	c->next = conns;
	conns = c;
	dpd_dbg("%s pid %d connected", kind == CONN_CLIENT ? "client" : "agent of", (int)c->pid);
	return 0;
}

static void conn_unbuffer(struct conn *c)
{
	struct user *u;

	pthread_mutex_lock(&q_mu);
	u = user_of(c->uid);
	if (u && c->want > DP_FRAME_HDR_LEN)
		u->buffered -= c->want - DP_FRAME_HDR_LEN;
	pthread_mutex_unlock(&q_mu);
	free(c->buf);
	c->buf = NULL;
	c->len = c->want = 0;
}

static void conn_free(struct conn *c, bool close_fd)
{
	for (struct conn **cp = &conns; *cp; cp = &(*cp)->next)
		if (*cp == c) {
			*cp = c->next;
			break;
		}
	conn_unbuffer(c);
	if (close_fd)
		close(c->fd);
	free(c);
}

static const char *conn_name(const struct conn *c)
{
	return c->kind == CONN_CLIENT ? "client" : "agent of";
}

/* Whether c's whole HELLO must wait: its user has DPD_USER_HELLOS. */
static bool hello_waits(const struct conn *c)
{
	struct user *u;
	bool full;

	if (c->kind != CONN_APP || c->uid == geteuid())
		return false;
	pthread_mutex_lock(&q_mu);
	u = user_of(c->uid);
	full = u && u->hellos >= DPD_USER_HELLOS;
	pthread_mutex_unlock(&q_mu);
	return full;
}

/* The whole frame to a worker (it stays counted against its user until
 * the worker is done with it); false when it could not be queued. */
static bool conn_dispatch(struct conn *c)
{
	struct job *j;
	struct user *u;

	if (hello_waits(c)) {
		/* Not read meanwhile, and with no deadline: its peer sent
		 * the whole frame in time. */
		c->waiting = true;
		c->deadline = 0;
		return true;
	}
	j = job_new(c->kind == CONN_CLIENT ? JOB_CLIENT : JOB_HELLO, c->uid);
	if (!j)
		return false;
	c->waiting = false;
	j->c = c;
	j->frame = c->buf;
	j->len = c->len;
	j->counted = c->want > DP_FRAME_HDR_LEN ? c->want - DP_FRAME_HDR_LEN : 0;
	c->buf = NULL;
	c->len = c->want = 0;
	pthread_mutex_lock(&q_mu);
	u = user_of(c->uid);
	if (u && j->kind == JOB_HELLO)
		u->hellos++;
	else if (!u)
		j->counted = 0;	/* then it was never counted */
	pthread_mutex_unlock(&q_mu);
	c->deadline = 0;
	c->busy = true;
	if (submit(j)) {
		c->busy = false;
		return false;
	}
	return true;
}

/* Whether the peer of fd closed it (POLLHUP: not a half-close). */
static bool peer_closed(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

/* Reads what c has: false when it is to close. */
static bool conn_read(struct conn *c)
{
	const struct dp_frame_proto *proto = c->kind == CONN_CLIENT ? &dp_client_proto :
				     &dp_app_proto;
	ssize_t n;

	if (!c->want) {
		c->buf = malloc(DP_FRAME_HDR_LEN);
		if (!c->buf)
			return false;
		c->want = DP_FRAME_HDR_LEN;
	}
	n = recv(c->fd, c->buf + c->len, c->want - c->len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0) {
		if (c->len || c->kind == CONN_APP)
			dpd_info("%s pid %d closed %s", conn_name(c), (int)c->pid,
				 c->len ? "in the middle of a frame" : "before saying HELLO");
		return false;
	}
	if (!c->len && !c->deadline)
		c->deadline = dpd_now_ms() + DPD_FRAME_MS;
	c->len += (size_t)n;
	if (c->len == DP_FRAME_HDR_LEN && c->want == DP_FRAME_HDR_LEN) {
		struct dp_frame_hdr h;
		enum dp_proto_err why;
		struct user *u;
		uint8_t *v;
		bool over;

		/* Another major version is still read whole, to be refused
		 * with its own words. */
		if (dp_frame_hdr_decode(c->buf, proto->magic, proto->major, proto->max_payload, &h,
					&why) &&
		    why != DP_PROTO_ERR_VERSION) {
			dpd_info("%s pid %d: %s: connection closed", conn_name(c), (int)c->pid,
				 dp_proto_err_str(why));
			return false;
		}
		if (h.len > proto->max_payload) {
			dpd_info("%s pid %d: %s: connection closed", conn_name(c), (int)c->pid,
				 dp_proto_err_str(DP_PROTO_ERR_TOO_BIG));
			return false;
		}
		pthread_mutex_lock(&q_mu);
		u = user_of(c->uid);
		over = !u || u->buffered + h.len > DPD_USER_BUF_MAX;
		if (!over)
			u->buffered += h.len;
		pthread_mutex_unlock(&q_mu);
		if (over) {
			dpd_err("%s pid %d: uid %u's connections would buffer more than %u MiB of "
				"frames: connection closed", conn_name(c), (int)c->pid,
				(unsigned)c->uid, DPD_USER_BUF_MAX >> 20);
			return false;
		}
		c->want = DP_FRAME_HDR_LEN + h.len;
		v = realloc(c->buf, c->want);
		if (!v)
			return false;
		c->buf = v;
	}
	if (c->len != c->want)
		return true;
	/* A client that closed once its request was sent (its call timed out,
	 * it was killed) would never learn the outcome: nothing is done. */
	if (c->kind == CONN_CLIENT && peer_closed(c->fd)) {
		dpd_info("client pid %d closed its connection before its request was read: "
			 "not served", (int)c->pid);
		return false;
	}
	return conn_dispatch(c);
}

/* ---- the loop --------------------------------------------------------- */

static void stop_workers(void)
{
	pthread_mutex_lock(&q_mu);
	/* What no worker took yet is dropped; what runs finishes (every wait
	 * of a job has its timeout). */
	while (queue) {
		struct job *j = queue;

		queue = j->next;
		job_uncount(j);
		free(j->frame);
		free(j);
	}
	while (nrunning) {
		pthread_mutex_unlock(&q_mu);
		usleep(10000);
		pthread_mutex_lock(&q_mu);
	}
	stopping = true;
	pthread_cond_broadcast(&q_cond);
	pthread_cond_broadcast(&spawn_cond);
	pthread_mutex_unlock(&q_mu);
	if (spawner_running)
		pthread_join(spawner_thread, NULL);
	spawner_running = false;
	pthread_mutex_lock(&q_mu);
	while (nworkers) {
		pthread_mutex_unlock(&q_mu);
		usleep(1000);
		pthread_mutex_lock(&q_mu);
	}
	pthread_mutex_unlock(&q_mu);
}

void dpd_serve(int sig_fd, int client_fd)
{
	int64_t next_poll = dpd_now_ms() + dpd_cfg.poll_ms;
	bool quit = false;
	int ret;

	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0) {
		dpd_err("eventfd: %s", strerror(errno));
		return;
	}
	ret = pthread_create(&spawner_thread, NULL, spawner, NULL);
	spawner_running = !ret;
	if (ret) {
		dpd_err("cannot start the thread that starts workers: %s", strerror(ret));
		close(wake_fd);
		return;
	}
	dpd_watch_wake = wake_loop;
	dpd_hold_released = pending_released;
	while (!quit) {
		struct dpd_watch *w = NULL;
		struct conn *c, *cnext;
		struct pollfd *pfd;
		size_t n = 5, nw, i, first_conn, first_watch;
		int64_t now = dpd_now_ms(), wake_at = 0;
		int timeout;

		/* What the workers finished. */
		dpd_loop_step("closing what the workers finished");
		pthread_mutex_lock(&q_mu);
		for (c = conns; c; c = cnext) {
			cnext = c->next;
			if (c->busy || (!c->dead && !c->adopted))
				continue;
			pthread_mutex_unlock(&q_mu);
			conn_free(c, !c->adopted);
			pthread_mutex_lock(&q_mu);
		}
		pthread_mutex_unlock(&q_mu);
		nw = dpd_watch_copy(&w);
		for (c = conns; c; c = c->next)
			n++;
		pfd = calloc(n + nw, sizeof(*pfd));
		if (!pfd) {
			free(w);
			dpd_err("out of memory");
			sleep(1);
			continue;
		}
		pfd[0] = (struct pollfd){ .fd = sig_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = client_fd, .events = POLLIN };
		pfd[2] = (struct pollfd){ .fd = dpd_app_listen_fd, .events = POLLIN };
		/* -1 (ignored by poll) without --attach-exec */
		pfd[3] = (struct pollfd){ .fd = dpd_execs_fd, .events = POLLIN };
		pfd[4] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };
		i = first_conn = 5;
		pthread_mutex_lock(&q_mu);
		for (c = conns; c; c = c->next) {
			bool idle = !c->busy && !c->dead && !c->adopted && !c->waiting;

			pfd[i++] = (struct pollfd){ .fd = idle ? c->fd : -1, .events = POLLIN };
			if (idle && c->deadline && (!wake_at || c->deadline < wake_at))
				wake_at = c->deadline;
		}
		pthread_mutex_unlock(&q_mu);
		first_watch = i;
		for (size_t k = 0; k < nw; k++) {
			bool quiet = w[k].busy || w[k].quiet_until > now;

			pfd[i++] = (struct pollfd){ .fd = quiet ? -1 : w[k].fd, .events = POLLIN };
			if (!w[k].busy && w[k].quiet_until > now &&
			    (!wake_at || w[k].quiet_until < wake_at))
				wake_at = w[k].quiet_until;
		}
		if (dpd_cfg.poll_ms > 0 && (!wake_at || next_poll < wake_at))
			wake_at = next_poll;
		timeout = !wake_at ? -1 : wake_at <= now ? 0 : (int)(wake_at - now);
		dpd_loop_step(NULL);
		ret = poll(pfd, i, timeout);
		dpd_loop_step("reading connections");
		if (ret < 0 && errno != EINTR) {
			dpd_err("poll: %s", strerror(errno));
			free(pfd);
			free(w);
			break;
		}
		if (ret > 0 && (pfd[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
				dpd_info("signal %u: restoring every site and exiting", si.ssi_signo);
				quit = true;
			}
		}
		if (ret > 0 && (pfd[4].revents & POLLIN)) {
			uint64_t v;

			if (read(wake_fd, &v, sizeof(v)) < 0)
				v = 0;
		}
		now = dpd_now_ms();
		/* Connections: the list is the one pfd was built from (only
		 * this thread adds or frees). */
		i = first_conn;
		for (c = conns; c && !quit; c = cnext) {
			short rev = pfd[i++].revents;

			cnext = c->next;
			if ((rev && !conn_read(c)) || (c->waiting && !conn_dispatch(c))) {
				conn_free(c, true);
				continue;
			}
			/* A conn handed to a worker has no deadline. */
			if (c->deadline && c->deadline <= now) {
				dpd_info("%s pid %d: %s within %d ms: connection closed", conn_name(c),
					 (int)c->pid, c->kind == CONN_APP && !c->len ?
					 "no HELLO" : "half a frame, not the rest",
					 DPD_FRAME_MS);
				conn_free(c, true);
			}
		}
		dpd_loop_step("queueing agent messages");
		for (size_t k = 0; k < nw && !quit; k++) {
			struct job *j;

			if (!pfd[first_watch + k].revents)
				continue;
			j = job_new(JOB_AGENT, w[k].uid);
			if (!j)
				continue;
			j->pid = w[k].pid;
			j->fd = w[k].fd;
			dpd_watch_busy(w[k].pid, w[k].fd);
			if (submit(j))
				dpd_watch_done(w[k].pid, w[k].fd, 0);
		}
		dpd_loop_step("reading exec notices");
		if (!quit && (pfd[3].revents & POLLIN))
			dpd_execs_readable(exec_notice);
		dpd_loop_step("accepting connections");
		if (!quit && (pfd[2].revents & POLLIN))
			while (accept_one(dpd_app_listen_fd, CONN_APP) == 0)
				;
		if (!quit && (pfd[1].revents & POLLIN)) {
			while (accept_one(client_fd, CONN_CLIENT) == 0)
				;
			dpd_fault("accept");
		}
		free(pfd);
		free(w);
		dpd_loop_step("queueing the session poll");
		if (!quit && dpd_cfg.poll_ms > 0 && now >= next_poll) {
			struct job *j = NULL;

			/* One poll at a time: liblttng-ctl's calls share one
			 * connection, two at once read each other's replies. */
			pthread_mutex_lock(&q_mu);
			if (!poll_running) {
				j = job_new(JOB_POLL, geteuid());
				poll_running = j != NULL;
			}
			pthread_mutex_unlock(&q_mu);
			if (j && submit(j)) {
				pthread_mutex_lock(&q_mu);
				poll_running = false;
				pthread_mutex_unlock(&q_mu);
			}
			next_poll = now + dpd_cfg.poll_ms;
		}
	}
	dpd_loop_step("waiting for the workers to stop");
	stop_workers();
	dpd_loop_step(NULL);
	while (conns)
		conn_free(conns, true);
	dpd_hold_released = NULL;
}
