/*
 * Deadlines that do not charge the time the waiter was stopped (deadline.h).
 */
#include "deadline.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <time.h>

uint64_t dp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t dp_now_ms(void)
{
	return (int64_t)(dp_now_ns() / 1000000ull);
}

void dp_deadline_start(struct dp_deadline *d, int timeout_ms, struct dp_deadline *outer)
{
	int64_t now = dp_now_ms();

	d->end = timeout_ms < 0 ? -1 : now + timeout_ms;
	d->last = now;
	d->forgiven = 0;
	d->timeout_ms = timeout_ms;
	d->outer = outer;
}

int64_t dp_deadline_at(struct dp_deadline *d, int64_t now)
{
	int64_t outer = d->outer ? dp_deadline_at(d->outer, now) : -1;
	int64_t gap = now - d->last, left;

	if (gap > DP_DEADLINE_STALL_MS && d->forgiven < DP_DEADLINE_STALL_MAX_MS) {
		if (gap > DP_DEADLINE_STALL_MAX_MS - d->forgiven)
			gap = DP_DEADLINE_STALL_MAX_MS - d->forgiven;
		d->forgiven += gap;
		if (d->end >= 0)
			d->end += gap;
	}
	if (now > d->last)
		d->last = now;
	left = d->end < 0 ? -1 : d->end > now ? d->end - now : 0;
	/* Inside another deadline: whichever comes first. */
	if (outer >= 0 && (left < 0 || outer < left))
		left = outer;
	return left;
}

void dp_deadline_charge(struct dp_deadline *d)
{
	int64_t now = dp_now_ms();

	for (; d; d = d->outer)
		if (now > d->last)
			d->last = now;
}

int dp_deadline_left(struct dp_deadline *d)
{
	int64_t left = dp_deadline_at(d, dp_now_ms());

	return left > INT_MAX ? INT_MAX : (int)left;
}

int dp_deadline_slice(struct dp_deadline *d)
{
	int left = dp_deadline_left(d);

	if (left < 0)
		return -1;	/* nothing to expire, nothing to check */
	return left > DP_DEADLINE_SLICE_MS ? DP_DEADLINE_SLICE_MS : left;
}

int dp_deadline_poll(struct pollfd *fds, unsigned long nfds, struct dp_deadline *d)
{
	for (;;) {
		int slice = dp_deadline_slice(d), ret;

		if (!slice)
			return 0;
		ret = poll(fds, (nfds_t)nfds, slice);
		if (ret > 0)
			return ret;
		if (ret < 0 && errno != EINTR)
			return -errno;
	}
}
