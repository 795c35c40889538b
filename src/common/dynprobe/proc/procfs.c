/*
 * A process seen through /proc without being attached to it: whether it
 * still runs, its program, its threads, every process of the machine, and
 * its memory (/proc/PID/mem: the owner of a process, or CAP_SYS_PTRACE, may
 * read and write it while it runs).  ptrace.c keeps its own descriptor for
 * a held process; these open one per call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "array.h"
#include "proc/proc-status.h"

bool dp_proc_alive(pid_t pid)
{
	struct dp_proc_status st;

	return !dp_proc_status_read(pid, 0, &st) && st.state != 'Z' && st.state != 'X';
}

int dp_proc_auxv(pid_t pid, uint64_t type, uint64_t *value)
{
	char path[64];
	uint64_t av[2];
	int fd, ret = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (read(fd, av, sizeof(av)) == sizeof(av) && av[0] != AT_NULL) {
		if (av[0] == type) {
			*value = av[1];
			ret = 0;
			break;
		}
	}
	close(fd);
	return ret;
}

int dp_proc_exe(pid_t pid, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	if (!len)
		return -EINVAL;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

int dp_proc_environ_get(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64], data[65536];
	size_t nlen = strlen(name), n = 0;
	ssize_t r;
	int fd;

	if (!len)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (n < sizeof(data) - 1 && (r = read(fd, data + n, sizeof(data) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	data[n] = '\0';
	for (size_t i = 0; i < n; i += strlen(data + i) + 1) {
		if (!strncmp(data + i, name, nlen) && data[i + nlen] == '=') {
			snprintf(buf, len, "%s", data + i + nlen + 1);
			return 0;
		}
	}
	return -ENOENT;
}

/* The numeric entries of a /proc directory: processes or threads. */
static int list_ids(const char *dir, pid_t **ids, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t cap = 0;
	int ret = 0;

	*ids = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long id = strtol(de->d_name, &end, 10);

		if (*end || id <= 0)
			continue;
		ret = DP_ARRAY_RESERVE(*ids, cap, *n, 16);
		if (ret)
			break;
		(*ids)[(*n)++] = (pid_t)id;
	}
	closedir(d);
	return ret;
}

int dp_proc_list(pid_t **pids, size_t *n)
{
	return list_ids("/proc", pids, n);
}

int dp_proc_tasks(pid_t pid, pid_t **tids, size_t *n)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	return list_ids(dir, tids, n);
}

/* pread into rbuf, or pwrite of wbuf: all of len at addr in pid's memory. */
static int mem_io(pid_t pid, uint64_t addr, void *rbuf, const void *wbuf, size_t len)
{
	char path[64];
	ssize_t done;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, (wbuf ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	done = wbuf ? pwrite(fd, wbuf, len, (off_t)addr) : pread(fd, rbuf, len, (off_t)addr);
	err = errno;
	close(fd);
	if (done < 0)
		return -err;
	return (size_t)done == len ? 0 : -EIO;
}

int dp_proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return mem_io(pid, addr, buf, NULL, len);
}

int dp_proc_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	return mem_io(pid, addr, NULL, buf, len);
}
