/*
 * notify-wait: a notification client for trigger tests (the lttng CLI has
 * none).  Subscribes to the condition of the trigger named TRIGGER, creates
 * READY_FILE once subscribed, then prints one line per notification with its
 * captured values, until COUNT arrived (plus a short linger, to catch any
 * extra one) or TIMEOUT seconds passed:
 *
 *   notify-wait TRIGGER COUNT TIMEOUT READY_FILE
 *   notification TRIGGER: u:5 str:v5 s:-5
 *   total 1
 *
 * Captured values print as u:N (unsigned), s:N (signed), r:X (real),
 * str:TEXT, or "unavailable".  Exit 0 if exactly COUNT arrived.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lttng/lttng.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_value(const struct lttng_event_field_value *v)
{
	uint64_t u;
	int64_t s;
	double r;
	const char *str;

	switch (lttng_event_field_value_get_type(v)) {
	case LTTNG_EVENT_FIELD_VALUE_TYPE_UNSIGNED_INT:
	case LTTNG_EVENT_FIELD_VALUE_TYPE_UNSIGNED_ENUM:
		lttng_event_field_value_unsigned_int_get_value(v, &u);
		printf(" u:%" PRIu64, u);
		break;
	case LTTNG_EVENT_FIELD_VALUE_TYPE_SIGNED_INT:
	case LTTNG_EVENT_FIELD_VALUE_TYPE_SIGNED_ENUM:
		lttng_event_field_value_signed_int_get_value(v, &s);
		printf(" s:%" PRId64, s);
		break;
	case LTTNG_EVENT_FIELD_VALUE_TYPE_REAL:
		lttng_event_field_value_real_get_value(v, &r);
		printf(" r:%g", r);
		break;
	case LTTNG_EVENT_FIELD_VALUE_TYPE_STRING:
		lttng_event_field_value_string_get_value(v, &str);
		printf(" str:%s", str);
		break;
	default:
		printf(" type:%d", (int)lttng_event_field_value_get_type(v));
		break;
	}
}

static void print_notification(const char *trigger, struct lttng_notification *n)
{
	const struct lttng_evaluation *eval = lttng_notification_get_evaluation(n);
	const struct lttng_event_field_value *caps = NULL, *v;
	unsigned len = 0;

	printf("notification %s:", trigger);
	if (lttng_evaluation_event_rule_matches_get_captured_values(eval, &caps) ==
		    LTTNG_EVALUATION_EVENT_RULE_MATCHES_STATUS_OK &&
	    lttng_event_field_value_array_get_length(caps, &len) ==
		    LTTNG_EVENT_FIELD_VALUE_STATUS_OK) {
		for (unsigned i = 0; i < len; i++) {
			if (lttng_event_field_value_array_get_element_at_index(caps, i, &v) ==
			    LTTNG_EVENT_FIELD_VALUE_STATUS_OK)
				print_value(v);
			else
				printf(" unavailable");
		}
	}
	printf("\n");
}

/* The condition of the trigger named `name`, to subscribe with. */
static const struct lttng_condition *find_condition(const char *name,
						    struct lttng_triggers **list)
{
	unsigned count = 0;

	if (lttng_list_triggers(list) != LTTNG_OK ||
	    lttng_triggers_get_count(*list, &count) != LTTNG_TRIGGER_STATUS_OK)
		return NULL;
	for (unsigned i = 0; i < count; i++) {
		const struct lttng_trigger *t = lttng_triggers_get_at_index(*list, i);
		const char *tname = NULL;

		if (lttng_trigger_get_name(t, &tname) == LTTNG_TRIGGER_STATUS_OK &&
		    !strcmp(tname, name))
			return lttng_trigger_get_const_condition(t);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct lttng_triggers *triggers = NULL;
	const struct lttng_condition *cond;
	struct lttng_notification_channel *chan;
	unsigned want, got = 0;
	double deadline, linger_end = 0;
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: notify-wait TRIGGER COUNT TIMEOUT READY_FILE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	want = (unsigned)strtoul(argv[2], NULL, 0);
	deadline = now_s() + strtod(argv[3], NULL);

	cond = find_condition(argv[1], &triggers);
	if (!cond) {
		fprintf(stderr, "notify-wait: no trigger named %s\n", argv[1]);
		return 2;
	}
	chan = lttng_notification_channel_create(lttng_session_daemon_notification_endpoint);
	if (!chan || lttng_notification_channel_subscribe(chan, cond) !=
			     LTTNG_NOTIFICATION_CHANNEL_STATUS_OK) {
		fprintf(stderr, "notify-wait: cannot subscribe to %s\n", argv[1]);
		return 2;
	}
	fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[4]);
		return 2;
	}
	close(fd);

	for (;;) {
		struct lttng_notification *n = NULL;
		bool pending = false;
		double t = now_s();

		if (t > deadline || (linger_end && t > linger_end))
			break;
		if (lttng_notification_channel_has_pending_notification(chan, &pending) !=
		    LTTNG_NOTIFICATION_CHANNEL_STATUS_OK) {
			fprintf(stderr, "notify-wait: channel error\n");
			break;
		}
		if (!pending) {
			usleep(10000);
			continue;
		}
		switch (lttng_notification_channel_get_next_notification(chan, &n)) {
		case LTTNG_NOTIFICATION_CHANNEL_STATUS_OK:
			print_notification(argv[1], n);
			lttng_notification_destroy(n);
			if (++got == want)
				linger_end = now_s() + 0.5;
			break;
		case LTTNG_NOTIFICATION_CHANNEL_STATUS_NOTIFICATIONS_DROPPED:
			printf("dropped\n");
			break;
		default:
			fprintf(stderr, "notify-wait: cannot read a notification\n");
			deadline = 0;
			break;
		}
	}
	printf("total %u\n", got);
	lttng_notification_channel_destroy(chan);
	lttng_triggers_destroy(triggers);
	return got == want ? 0 : 1;
}
