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
 * there, and the code holds what the patch writes: a jump into its
 * trampoline, int3s after it, or an int3 on the original instruction.
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
#include "patch/write.h"
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

/* Whether bytes, at addr in m, are the file's there.  0, or -errno with msg. */
static int same_as_file(pid_t pid, const struct dp_map *m, uint64_t addr, const uint8_t *bytes,
			size_t len, const char *what, struct dp_err *msg)
{
	uint8_t file[DP_APP_MAX_ORIG];
	int fd = open_mapped(pid, m);
	ssize_t n;

	if (fd < 0)
		return dp_err_set(msg, fd, "the file mapped at its %s 0x%" PRIx64 " (%s) cannot "
				  "be read: %s", what, addr, m->path, strerror(-fd));
	n = pread(fd, file, len, (off_t)(m->offset + (addr - m->start)));
	close(fd);
	if (n != (ssize_t)len || memcmp(file, bytes, len))
		return dp_err_set(msg, -EINVAL, "the original bytes it gives for its %s 0x%" PRIx64
				  " are not those of %s there", what, addr, m->path);
	return 0;
}

/* Where the jump at `at` (code: its bytes) leads: rel8 or rel32. */
static bool jump_target(const uint8_t *code, size_t len, uint64_t at, uint64_t *to)
{
	if (len >= 2 && code[0] == 0xeb) {
		*to = at + 2 + (int64_t)(int8_t)code[1];
		return true;
	}
	if (len >= 5 && code[0] == 0xe9) {
		int32_t rel;

		memcpy(&rel, code + 1, 4);
		*to = at + 5 + (int64_t)rel;
		return true;
	}
	return false;
}

/*
 * Whether the code holds what ap writes (entry: its trampoline's entry, 0
 * when unknown: then anywhere in [tramp, tramp + tramp_len)).  0, or
 * -EINVAL with msg.
 */
static int holds_patch(pid_t pid, const struct dp_app_patch *ap, uint64_t entry,
		       const uint8_t *cur, struct dp_err *msg)
{
	struct dp_patch_place place = {
		.method = ap->method == DP_APP_METHOD_INT3 ? DP_SITE_INT3 : DP_SITE_JUMP,
		.addr = ap->site,
		.len = ap->len,
		.hop = ap->hop,
		.hop_len = ap->hop_len,
	};
	uint8_t hop[DP_APP_HOP_LEN];
	uint64_t to = 0, via = ap->site;
	struct dp_patch_bytes b;
	const uint8_t *at = cur;

	if (ap->method == DP_APP_METHOD_INT3) {
		if (cur[0] == 0xcc && !memcmp(cur + 1, ap->orig + 1, ap->len - 1u))
			return 0;
		return dp_err_set(msg, -EINVAL, "the code at 0x%" PRIx64 " is neither its int3 "
				  "nor its original bytes", ap->site);
	}
	if (ap->hop_len) {
		if (dp_proc_mem_read(pid, ap->hop, hop, sizeof(hop)))
			return dp_err_set(msg, -EINVAL, "its hop 0x%" PRIx64 " cannot be read",
					  ap->hop);
		at = hop;
		via = ap->hop;
	}
	if (!jump_target(at, ap->hop_len ? sizeof(hop) : ap->len, via, &to) ||
	    (ap->hop_len && at[0] != 0xe9) ||
	    (entry ? to != entry : to < ap->tramp || to - ap->tramp >= ap->tramp_len) ||
	    dp_patch_bytes_fill(&place, to, &b) || memcmp(cur, b.site, b.site_len) ||
	    (b.hop_len && memcmp(hop, b.hop, b.hop_len)))
		return dp_err_set(msg, -EINVAL, "the code at 0x%" PRIx64 " is neither the jump "
				  "into its trampoline (0x%" PRIx64 "..+%u) nor its original "
				  "bytes", ap->site, ap->tramp, ap->tramp_len);
	return 0;
}

int dpd_claim_check(pid_t pid, const struct dp_maps *maps, const struct dp_app_patch *ap,
		    uint64_t entry, bool orig_known, struct dp_err *msg)
{
	uint8_t cur[DP_APP_MAX_ORIG];
	const struct dp_map *m, *hm = NULL;
	int ret;

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
		ret = same_as_file(pid, m, ap->site, ap->orig, ap->len, "site", msg);
		if (!ret && hm)
			ret = same_as_file(pid, hm, ap->hop, ap->hop_orig, ap->hop_len, "hop", msg);
		if (ret)
			return ret;
	}
	ret = dp_proc_mem_read(pid, ap->site, cur, ap->len);
	if (ret)
		return dp_err_set(msg, ret, "the code at 0x%" PRIx64 " cannot be read: %s",
				  ap->site, strerror(-ret));
	if (!memcmp(cur, ap->orig, ap->len))
		return 0;
	ret = holds_patch(pid, ap, entry, cur, msg);
	return ret ? ret : 1;
}

int dpd_image_id(pid_t pid, uint8_t id[DPD_IMAGE_ID_LEN])
{
	char path[64];
	Elf64_auxv_t av[64];
	ssize_t n;
	int fd, ret = -ENOENT;

	/* AT_RANDOM: 16 bytes the kernel draws afresh at every execve. */
	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, av, sizeof(av));
	close(fd);
	for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof(av[0]); i++) {
		if (av[i].a_type == AT_NULL)
			break;
		if (av[i].a_type == AT_RANDOM) {
			ret = dp_proc_mem_read(pid, av[i].a_un.a_val, id, DPD_IMAGE_ID_LEN);
			break;
		}
	}
	return ret;
}
