/*
 * What a process's code is said to hold, checked against the code itself
 * before the daemon writes there: the patches an agent's HELLO reports (the
 * agent may be anyone's, root's app socket being open to every user), and
 * every site a removal restores (the process may have executed another
 * program meanwhile).  Also the identity of the program a process runs, so
 * that an exec is noticed.
 *
 * A patch is believed only when its window (and its hop) lie in one
 * executable mapping of a file, its original bytes are that file's bytes
 * there, and the code holds a patch of its kind: a jump into executable
 * memory, int3s after it, or an int3 on the original instruction.
 * Restoring such a patch can then only give the code back its file's bytes.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/maps.h"
#include "proc/proc-status.h"

/* The executable file mapping holding [addr, addr + len), or NULL with msg. */
static const struct dp_map *code_map(const struct dp_maps *maps, uint64_t addr, size_t len,
				     const char *what, struct dp_err *msg)
{
	const struct dp_map *m = dp_maps_find(maps, addr);

	if (!m || addr + len > m->end || addr + len < addr) {
		dp_err_set(msg, -EFAULT, "its %s 0x%" PRIx64 "..+%zu is not within one mapping",
			   what, addr, len);
		return NULL;
	}
	if (!(m->prot & PROT_EXEC) || !m->inode || !m->path || m->path[0] != '/') {
		dp_err_set(msg, -EPERM, "its %s 0x%" PRIx64 " lies in a%s mapping (%s), not in "
			   "the code of a file", what, addr,
			   m->prot & PROT_EXEC ? "n executable" : " non-executable",
			   m->inode && m->path ? m->path : "anonymous");
		return NULL;
	}
	return m;
}

/*
 * The file mapped by m, opened: through /proc/PID/map_files (the very file,
 * even replaced on disk; root only), else through the process's root, if it
 * is the same file (device and inode).  -errno.
 */
static int open_mapped(pid_t pid, const struct dp_map *m)
{
	char path[4200];
	struct stat sb;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || sb.st_ino != m->inode || major(sb.st_dev) != m->dev_major ||
	    minor(sb.st_dev) != m->dev_minor) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

void dpd_claim_files_init(struct dpd_claim_files *f, pid_t pid, bool blocks)
{
	memset(f, 0, sizeof(*f));
	f->blocks = blocks;
	f->pid = pid;
	f->fd = -1;
	f->mem = -1;
}

static void files_close(struct dpd_claim_files *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->fblock.len = 0;
}

void dpd_claim_files_release(struct dpd_claim_files *f)
{
	files_close(f);
	if (f->mem >= 0)
		close(f->mem);
	f->mem = -1;
	free(f->fblock.buf);
	free(f->mblock.buf);
	f->fblock = f->mblock = (struct dpd_claim_block){ 0 };
}

/* len bytes at off of fd, from b's block (read when off is not in it), a
 * block never reaching out of [lo, hi).  0, -errno, or -EIO for fewer
 * bytes.  A block that cannot be read whole (a file's end, a hole of
 * /proc/PID/mem) leaves the read to be direct. */
static int block_read(int fd, struct dpd_claim_block *b, uint64_t lo, uint64_t hi, uint64_t off,
		      void *out, size_t len)
{
	ssize_t n;

	if (b->len && off >= b->at && off + len <= b->at + b->len) {
		memcpy(out, b->buf + (off - b->at), len);
		return 0;
	}
	if (!b->buf)
		b->buf = malloc(DPD_CLAIM_BLOCK);
	if (b->buf && len <= DPD_CLAIM_BLOCK && lo <= off && off + len <= hi) {
		uint64_t at = off & ~(uint64_t)(DPD_CLAIM_BLOCK - 1);
		uint64_t end = at + DPD_CLAIM_BLOCK < hi ? at + DPD_CLAIM_BLOCK : hi;

		if (at < lo)
			at = lo;
		n = pread(fd, b->buf, end - at, (off_t)at);
		b->at = at;
		b->len = n > 0 ? (size_t)n : 0;
		if (b->len && off + len <= b->at + b->len) {
			memcpy(out, b->buf + (off - b->at), len);
			return 0;
		}
	}
	n = pread(fd, out, len, (off_t)off);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int dpd_claim_files_read(struct dpd_claim_files *f, uint64_t addr, void *buf, size_t len)
{
	/* Blocks only within the mapping read: the bytes of another (a
	 * device's, whose reads may do something) are never touched. */
	const struct dp_map *m = f->blocks && f->maps ? dp_maps_find(f->maps, addr) : NULL;
	char path[64];

	if (f->mem < 0) {
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)f->pid);
		f->mem = open(path, O_RDONLY | O_CLOEXEC);
		if (f->mem < 0)
			return -errno;
	}
	return block_read(f->mem, &f->mblock, m ? m->start : 0, m ? m->end : 0, addr, buf, len);
}

/* The file m maps, opened in f (the one open already when it is m's). */
static int files_open(struct dpd_claim_files *f, const struct dp_map *m)
{
	if (f->fd >= 0 && f->start == m->start && f->end == m->end && f->inode == m->inode)
		return f->fd;
	files_close(f);
	f->fd = open_mapped(f->pid, m);
	if (f->fd < 0) {
		int ret = f->fd;

		f->fd = -1;
		return ret;
	}
	f->start = m->start;
	f->end = m->end;
	f->inode = m->inode;
	return f->fd;
}

/* Whether bytes, at addr in m, are the file's there.  0, or -errno with msg. */
static int same_as_file(struct dpd_claim_files *f, const struct dp_map *m, uint64_t addr,
			const uint8_t *bytes, size_t len, const char *what, struct dp_err *msg)
{
	uint8_t file[DP_APP_MAX_ORIG];
	int fd = files_open(f, m), ret;

	if (fd < 0)
		return dp_err_set(msg, fd, "the file mapped at its %s 0x%" PRIx64 " (%s) cannot "
				  "be read: %s", what, addr, m->path, strerror(-fd));
	ret = block_read(fd, &f->fblock, 0, f->blocks ? UINT64_MAX : 0, m->offset + (addr - m->start),
			 file, len);
	if (ret || memcmp(file, bytes, len))
		return dp_err_set(msg, -EINVAL, "the original bytes it gives for its %s 0x%" PRIx64
				  " are not those of %s there", what, addr, m->path);
	return 0;
}

/*
 * Whether the code holds a patch of ap's method at its site: an int3 on
 * the first byte; or a jump (rel32, or rel8 to a jmp rel32 hop) whose end
 * lies in executable memory.  The rest of the window holds the original
 * bytes or int3s.  The jump's end is not asked to be ap's trampoline, nor
 * its length ap's: a daemon killed while it replaced a patch (a shared
 * patch rebuilt, patches combined) leaves the agent noting the new one
 * while the code holds the old; restoring either gives the same file
 * bytes.  0, or -EINVAL with msg.
 */
static int holds_patch(struct dpd_claim_files *f, const struct dp_maps *maps,
		       const struct dp_app_patch *ap, const uint8_t *cur, struct dp_err *msg)
{
	uint64_t to = 0, hop;
	uint8_t hb[5];
	size_t body = 1;
	const struct dp_map *m;

	if (ap->method == DP_APP_METHOD_INT3) {
		if (cur[0] != 0xcc)
			return dp_err_set(msg, -EINVAL, "the code at 0x%" PRIx64 " is neither its "
					  "int3 nor its original bytes", ap->site);
	} else if (cur[0] == 0xe9 && ap->len >= 5) {
		int32_t rel;

		memcpy(&rel, cur + 1, 4);
		to = ap->site + 5 + (int64_t)rel;
		body = 5;
	} else if (cur[0] == 0xeb && ap->len >= 2) {
		int32_t rel;

		hop = ap->site + 2 + (int64_t)(int8_t)cur[1];
		if (dpd_claim_files_read(f, hop, hb, sizeof(hb)) || hb[0] != 0xe9)
			return dp_err_set(msg, -EINVAL, "the code at 0x%" PRIx64 " jumps to a hop "
					  "(0x%" PRIx64 ") that holds no jump", ap->site, hop);
		memcpy(&rel, hb + 1, 4);
		to = hop + 5 + (int64_t)rel;
		body = 2;
	} else {
		return dp_err_set(msg, -EINVAL, "the code at 0x%" PRIx64 " is neither a jump "
				  "(its trampoline: 0x%" PRIx64 ") nor its original bytes", ap->site,
				  ap->tramp);
	}
	m = to ? dp_maps_find(maps, to) : NULL;
	if (to && (!m || !(m->prot & PROT_EXEC)))
		return dp_err_set(msg, -EINVAL, "the code at 0x%" PRIx64 " jumps to 0x%" PRIx64
				  ", which is not executable", ap->site, to);
	for (size_t i = body; i < ap->len; i++)
		if (cur[i] != ap->orig[i] && cur[i] != 0xcc)
			return dp_err_set(msg, -EINVAL, "the code at 0x%" PRIx64 " holds bytes that "
					  "are neither its original ones nor int3s after its %s",
					  ap->site, body == 1 ? "int3" : "jump");
	return 0;
}

int dpd_claim_check(pid_t pid, const struct dp_maps *maps, const struct dp_app_patch *ap,
		    bool orig_known, struct dp_err *msg)
{
	struct dpd_claim_files f;
	int ret;

	dpd_claim_files_init(&f, pid, false);
	ret = dpd_claim_check_files(&f, maps, ap, orig_known, msg);
	dpd_claim_files_release(&f);
	return ret;
}

int dpd_claim_check_files(struct dpd_claim_files *f, const struct dp_maps *maps,
			  const struct dp_app_patch *ap, bool orig_known, struct dp_err *msg)
{
	uint8_t cur[DP_APP_MAX_ORIG];
	const struct dp_map *m, *hm = NULL;
	int ret;

	if (f->blocks)
		f->maps = maps;
	if (!ap->len || ap->len > DP_APP_MAX_ORIG || ap->hop_len > DP_APP_HOP_LEN ||
	    (ap->method != DP_APP_METHOD_JUMP && ap->method != DP_APP_METHOD_INT3))
		return dp_err_set(msg, -EINVAL, "its window (%u bytes, method %u) is not one a "
				  "patch has", ap->len, ap->method);
	m = code_map(maps, ap->site, ap->len, "site", msg);
	if (!m)
		return msg->code;
	if (ap->hop_len) {
		hm = code_map(maps, ap->hop, ap->hop_len, "hop", msg);
		if (!hm)
			return msg->code;
	}
	if (!orig_known) {
		ret = same_as_file(f, m, ap->site, ap->orig, ap->len, "site", msg);
		if (!ret && hm)
			ret = same_as_file(f, hm, ap->hop, ap->hop_orig, ap->hop_len, "hop", msg);
		if (ret)
			return ret;
	}
	ret = dpd_claim_files_read(f, ap->site, cur, ap->len);
	if (ret)
		return dp_err_set(msg, ret, "the code at 0x%" PRIx64 " cannot be read: %s",
				  ap->site, strerror(-ret));
	if (!memcmp(cur, ap->orig, ap->len))
		return 0;
	ret = holds_patch(f, maps, ap, cur, msg);
	return ret ? ret : 1;
}

int dpd_image_id(pid_t pid, uint8_t id[DPD_IMAGE_ID_LEN])
{
	uint64_t at;
	/* AT_RANDOM: 16 bytes the kernel draws afresh at every execve. */
	int ret = dp_proc_auxv(pid, AT_RANDOM, &at);

	return ret ? ret : dp_proc_mem_read(pid, at, id, DPD_IMAGE_ID_LEN);
}

/* What write w holds: 0 its original bytes, 1 a patch of its kind (a
 * branch whose displacement alone changed; a jmp rel32 into executable
 * memory), or -EINVAL with msg. */
static int write_state(struct dpd_claim_files *f, const struct dp_maps *maps,
		       const struct dp_app_write *w, uint8_t disp_len, struct dp_err *msg)
{
	uint8_t cur[DP_APP_MAX_WRITE_LEN];
	int ret = dpd_claim_files_read(f, w->addr, cur, w->len);
	size_t keep;

	if (ret)
		return dp_err_set(msg, ret, "the code at 0x%" PRIx64 " cannot be read: %s",
				  w->addr, strerror(-ret));
	if (!memcmp(cur, w->orig, w->len))
		return 0;
	if (w->kind == DP_APP_WRITE_HOP) {
		int32_t rel;
		const struct dp_map *m;

		memcpy(&rel, cur + 1, 4);
		m = dp_maps_find(maps, w->addr + 5 + (int64_t)rel);
		if (cur[0] == 0xe9 && m && (m->prot & PROT_EXEC))
			return 1;
		return dp_err_set(msg, -EINVAL, "the hop at 0x%" PRIx64 " is neither a jump into "
				  "executable memory nor its original bytes", w->addr);
	}
	if (!disp_len)
		disp_len = w->len >= 5 ? 4 : 1;
	keep = w->len > disp_len ? w->len - disp_len : 0;
	if (keep && !memcmp(cur, w->orig, keep))
		return 1;
	return dp_err_set(msg, -EINVAL, "the branch at 0x%" PRIx64 " is neither its original "
			  "bytes nor they with another displacement", w->addr);
}

static int check_led(struct dpd_claim_files *f, const struct dp_maps *maps,
		     const struct dp_app_patch *ap, const struct dpd_led *led, bool orig_known,
		     struct dp_err *msg)
{
	unsigned norig = 0, npatch = 0;
	int ret;

	if (ap->method == DP_APP_METHOD_REDIRECT) {
		uint8_t cur[DP_APP_MAX_ORIG];
		const struct dp_map *m;

		/* Never written: its bytes must be the file's, and be there. */
		if (!ap->len || ap->len > DP_APP_MAX_ORIG || ap->hop_len)
			return dp_err_set(msg, -EINVAL, "its window (%u bytes) is not one a "
					  "redirect has", ap->len);
		m = code_map(maps, ap->site, ap->len, "site", msg);
		if (!m)
			return msg->code;
		if (!orig_known) {
			ret = same_as_file(f, m, ap->site, ap->orig, ap->len, "site", msg);
			if (ret)
				return ret;
		}
		ret = dpd_claim_files_read(f, ap->site, cur, ap->len);
		if (ret)
			return dp_err_set(msg, ret, "the code at 0x%" PRIx64 " cannot be read: %s",
					  ap->site, strerror(-ret));
		if (memcmp(cur, ap->orig, ap->len))
			return dp_err_set(msg, -EINVAL, "the window of the redirect at 0x%" PRIx64
					  " is not its original bytes", ap->site);
	} else {
		ret = dpd_claim_check_files(f, maps, ap, orig_known, msg);
		if (ret < 0)
			return ret;
		norig += ret == 0;
		npatch += ret == 1;
	}
	for (unsigned k = 0; led && k < led->nwrites; k++) {
		const struct dp_app_write *w = &led->w[k];
		const char *what = w->kind == DP_APP_WRITE_HOP ? "hop" : "branch";
		const struct dp_map *m;

		if (!w->len || w->len > DP_APP_MAX_WRITE_LEN)
			return dp_err_set(msg, -EINVAL, "a write of %u bytes is not one a patch has",
					  w->len);
		m = code_map(maps, w->addr, w->len, what, msg);
		if (!m)
			return msg->code;
		if (!orig_known) {
			ret = same_as_file(f, m, w->addr, w->orig, w->len, what, msg);
			if (ret)
				return ret;
		}
		ret = write_state(f, maps, w, led->disp_len[k], msg);
		if (ret < 0)
			return ret;
		norig += ret == 0;
		npatch += ret == 1;
	}
	return !npatch ? 0 : !norig ? 1 : 2;
}

int dpd_claim_check_led(pid_t pid, const struct dp_maps *maps, const struct dp_app_patch *ap,
			const struct dpd_led *led, bool orig_known, struct dp_err *msg)
{
	struct dpd_claim_files f;
	int ret;

	dpd_claim_files_init(&f, pid, false);
	ret = check_led(&f, maps, ap, led, orig_known, msg);
	dpd_claim_files_release(&f);
	return ret;
}
