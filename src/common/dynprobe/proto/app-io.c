/*
 * The app protocol on a socket: sending, receiving, request/reply calls,
 * and where the socket lives (see app.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/app.h"

int dp_app_send(int fd, const struct dp_app_msg *m, int timeout_ms)
{
	struct dp_wbuf w;
	int ret;

	ret = dp_app_encode(m, &w);
	if (!ret)
		ret = dp_frame_write_all(fd, w.data, w.len, timeout_ms);
	dp_wbuf_release(&w);
	return ret;
}

int dp_app_recv(int fd, struct dp_app_msg *m, int timeout_ms, enum dp_proto_err *why)
{
	struct dp_frame_hdr h;
	uint8_t *payload;
	int ret;

	ret = dp_frame_recv_msg(fd, &dp_app_proto, timeout_ms, &h, &payload, why);
	if (!ret) {
		ret = dp_app_decode(&h, payload, m, why);
	} else {
		/* The header is good enough to say who spoke, or zeroed. */
		memset(m, 0, sizeof(*m));
		m->type = h.type;
		m->seq = h.seq;
		m->major = h.major;
		m->minor = h.minor;
	}
	free(payload);
	return ret;
}

int dp_app_call(int fd, struct dp_app_msg *req, uint32_t *seq, struct dp_app_msg *reply,
		int timeout_ms, enum dp_proto_err *why)
{
	int ret;

	*why = DP_PROTO_ERR_NONE;
	memset(reply, 0, sizeof(*reply));
	req->seq = (*seq)++;
	ret = dp_app_send(fd, req, timeout_ms);
	if (ret)
		return ret;
	for (;;) {
		ret = dp_app_recv(fd, reply, timeout_ms, why);
		if (ret == -EPROTO && *why == DP_PROTO_ERR_TYPE && !dp_app_type_is_reply(reply->type)) {
			/* A request of a newer minor version while we wait: say
			 * we do not know it, and keep waiting for our reply. */
			struct dp_app_msg no = {
				.type = DP_APP_UNSUPPORTED, .seq = reply->seq,
				.unsupported = reply->type,
			};

			ret = dp_app_send(fd, &no, timeout_ms);
			if (ret)
				return ret;
			continue;
		}
		if (ret)
			return ret;
		break;
	}
	ret = dp_frame_check_reply(req->type, req->seq, reply->type, reply->seq, why);
	if (ret == -EPROTO)
		dp_app_msg_release(reply);
	return ret;
}

int dp_app_socket_path(char *buf, size_t size)
{
	const char *env = secure_getenv(DP_APP_ENV_SOCKET);
	size_t max = sizeof(((struct sockaddr_un *)0)->sun_path);
	int n;

	if (env && *env) {
		n = snprintf(buf, size, "%s", env);
	} else if (geteuid() == 0) {
		n = snprintf(buf, size, "/var/run/lttng/dynprobe-app.sock");
	} else {
		const char *home = secure_getenv("LTTNG_HOME");

		if (!home || !*home)
			home = secure_getenv("HOME");
		if (!home || !*home)
			return -ENOENT;
		n = snprintf(buf, size, "%s/.lttng/dynprobe-app.sock", home);
	}
	if (n < 0 || (size_t)n >= size || (size_t)n >= max)
		return -ENAMETOOLONG;
	return 0;
}
