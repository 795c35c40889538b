/*
 * What the soak reads in a running server, independently of the product's
 * own records: /proc/PID/maps and /proc/PID/mem against the files.
 *
 *   soak-mem text PID [PATH...]
 *       Every executable mapping of a file (of PATH only, when given): its
 *       bytes in PID's memory against the file's at the mapping's offset.
 *       One line per mapping, "PATH 0xSTART LEN same" or "PATH 0xSTART LEN
 *       differ N first 0xADDR"; exit 0 when every byte is the file's, 1 when
 *       one differs, 2 when PID or a file cannot be read.
 *   soak-mem wx PID
 *       Every mapping that is writable and executable at once (a protection
 *       the kernel reports as "w" and "x" both): one line each; exit 0 when
 *       there is none, 1 when there is one, 2 on a read error.
 *
 * A whole text segment is compared, not only the probed sites: a byte left
 * behind anywhere (a hop, a jump, a half-restored window) is found.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (1u << 20)

struct mapping {
	uint64_t start, end, off;
	char perms[8];
	char path[4096];
};

/* One line of /proc/PID/maps; 0, or -1 when it names no file. */
static int parse_line(const char *line, struct mapping *m)
{
	int n = 0;

	m->path[0] = 0;
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*u %n", &m->start, &m->end,
		   m->perms, &m->off, &n) < 4 || !n)
		return -1;
	snprintf(m->path, sizeof(m->path), "%s", line + n);
	m->path[strcspn(m->path, "\n")] = 0;
	n = (int)strlen(m->path);
	/* A file replaced since it was mapped has nothing to compare with. */
	if (n > 10 && !strcmp(m->path + n - 10, " (deleted)"))
		return -1;
	return m->path[0] == '/' ? 0 : -1;
}

static int wanted(const char *path, char **paths, int npaths)
{
	if (!npaths)
		return 1;
	for (int i = 0; i < npaths; i++)
		if (!strcmp(path, paths[i]))
			return 1;
	return 0;
}

/* Compares one mapping; 0 same, 1 differs, 2 unreadable. */
static int compare(int mem, const struct mapping *m)
{
	static uint8_t a[CHUNK], b[CHUNK];
	uint64_t len = m->end - m->start, done = 0, ndiff = 0, first = 0;
	struct stat st;
	int fd, ret = 0;

	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		printf("%s 0x%" PRIx64 " unreadable: %s\n", m->path, m->start, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 2;
	}
	/* The tail of the last page past the file's end reads as zeros in
	 * memory: compare what the file holds. */
	if ((uint64_t)st.st_size < m->off + len)
		len = (uint64_t)st.st_size > m->off ? (uint64_t)st.st_size - m->off : 0;
	while (done < len) {
		size_t n = len - done < CHUNK ? len - done : CHUNK;

		if (pread(fd, a, n, (off_t)(m->off + done)) != (ssize_t)n ||
		    pread(mem, b, n, (off_t)(m->start + done)) != (ssize_t)n) {
			printf("%s 0x%" PRIx64 " unreadable at +0x%" PRIx64 ": %s\n", m->path,
			       m->start, done, strerror(errno));
			ret = 2;
			break;
		}
		for (size_t i = 0; i < n; i++) {
			if (a[i] == b[i])
				continue;
			if (!ndiff++)
				first = m->start + done + i;
		}
		done += n;
	}
	close(fd);
	if (ret)
		return ret;
	if (ndiff) {
		printf("%s 0x%" PRIx64 " %" PRIu64 " differ %" PRIu64 " first 0x%" PRIx64 "\n",
		       m->path, m->start, len, ndiff, first);
		return 1;
	}
	printf("%s 0x%" PRIx64 " %" PRIu64 " same\n", m->path, m->start, len);
	return 0;
}

static FILE *open_maps(const char *pid)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "re");
	if (!f)
		fprintf(stderr, "soak-mem: %s: %s\n", path, strerror(errno));
	return f;
}

static int cmd_text(const char *pid, char **paths, int npaths)
{
	char path[64], line[8192];
	struct mapping m;
	int mem, worst = 0;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%s/mem", pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	maps = open_maps(pid);
	if (mem < 0 || !maps) {
		if (mem < 0)
			fprintf(stderr, "soak-mem: %s: %s\n", path, strerror(errno));
		if (mem >= 0)
			close(mem);
		if (maps)
			fclose(maps);
		return 2;
	}
	while (fgets(line, sizeof(line), maps)) {
		int r;

		if (parse_line(line, &m) || !strchr(m.perms, 'x') || !wanted(m.path, paths, npaths))
			continue;
		r = compare(mem, &m);
		if (r > worst)
			worst = r;
	}
	fclose(maps);
	close(mem);
	return worst;
}

static int cmd_wx(const char *pid)
{
	char line[8192], perms[8];
	int found = 0;
	FILE *maps = open_maps(pid);

	if (!maps)
		return 2;
	while (fgets(line, sizeof(line), maps)) {
		if (sscanf(line, "%*s %7s", perms) != 1)
			continue;
		if (strchr(perms, 'w') && strchr(perms, 'x')) {
			fputs(line, stdout);
			found = 1;
		}
	}
	fclose(maps);
	return found;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "text"))
		return cmd_text(argv[2], argv + 3, argc - 3);
	if (argc == 3 && !strcmp(argv[1], "wx"))
		return cmd_wx(argv[2]);
	fprintf(stderr, "usage: soak-mem text PID [PATH...] | soak-mem wx PID\n");
	return 2;
}
