# The nginx part of soak.sh (sourced): nginx from Debian, a master and two
# workers on 127.0.0.1, under wrk.  Debian's nginx has no .symtab: its
# probes are on its exported (dynamic) symbols, 740 functions, and on libc
# in the workers.

NGINX_PORT=18080
# The page every request gets, its length checked in each answer.
NGINX_BODY=4096
# During the soak each of wrk's 16 connections waits this many ms between
# requests (at most ~1600 requests/s): the events of minutes must fit on
# the disk.
NGINX_DELAY=${SOAK_NGINX_DELAY:-10}

# wrk's script: every answer must be a 200 with the whole page; counted
# per thread, summed at the end.
write_wrk_script() {
	cat >"$1" <<'EOF'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) good = 0; bad = 0 end
function response(status, headers, body)
	if status == 200 and #body == tonumber(os.getenv("SOAK_BODY")) then
		good = good + 1
	else
		bad = bad + 1
	end
end
-- Paced during the soak (SOAK_DELAY ms between a connection's requests):
-- a load the trace's disk space can follow for minutes.
function delay() return tonumber(os.getenv("SOAK_DELAY")) or 0 end
function done(summary, latency, requests)
	local g, b = 0, 0
	for _, t in ipairs(threads) do g = g + t:get("good"); b = b + t:get("bad") end
	local e = summary.errors
	io.write(string.format("soak: requests=%d good=%d bad=%d errors=%d\n", summary.requests,
		g, b, e.connect + e.read + e.write + e.status + e.timeout))
end
EOF
}

# run_wrk SECONDS OUT [DELAY_MS]: wrk on the page (in the foreground), at
# full speed or paced; its output in OUT.  The timeout is long: a stop of all threads to patch hundreds of
# functions is slow on a loaded machine, and slowness is not an error here.
run_wrk() {
	SOAK_BODY=$NGINX_BODY SOAK_DELAY=${3:-0} timeout $(($1 + 120)) wrk -t2 -c16 -d"$1"s --timeout 60s \
		-s "$DP_TMP/nginx/soak.lua" "http://127.0.0.1:$NGINX_PORT/index.html" >"$2" 2>&1
}

# wrk_field OUT KEY: a number of the script's "soak:" line.
wrk_field() {
	sed -nE "s/^soak: .*\b$2=([0-9]+).*/\1/p" "$1"
}

wrk_ok() {
	[ "$(wrk_field "$1" bad)" = 0 ] && [ "$(wrk_field "$1" errors)" = 0 ] &&
		[ "$(wrk_field "$1" good)" = "$(wrk_field "$1" requests)" ] &&
		[ "$(wrk_field "$1" good)" -gt 0 ]
}

wrk_rps() {
	awk '/^Requests\/sec:/ { print $2 }' "$1"
}

nginx_workers() {
	cat /proc/"$SERVER_PID"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . | sort -n
}

# A GET with bash's /dev/tcp: whether the page comes.  Within 60 s: a
# hung server never answers, a machine that stopped for seconds still
# gets its page.
nginx_answers() {
	local reply
	reply=$(timeout 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$NGINX_PORT &&
		printf 'GET /index.html HTTP/1.0\r\n\r\n' >&3 && cat <&3" 2>/dev/null)
	grep -q '^HTTP/1.1 200' <<<"$reply"
}

start_nginx() {
	local d=$DP_TMP/nginx i
	mkdir -p "$d/html" "$d/tmp"
	head -c "$NGINX_BODY" /dev/zero | tr '\0' 'x' >"$d/html/index.html"
	cat >"$d/nginx.conf" <<EOF
worker_processes 2;
pid $d/nginx.pid;
error_log $d/error.log notice;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server {
		listen 127.0.0.1:$NGINX_PORT;
		root $d/html;
	}
}
EOF
	write_wrk_script "$d/soak.lua"
	"$NGINX" -p "$d" -c "$d/nginx.conf" -g 'daemon off; master_process on;' \
		>"$d/nginx.out" 2>&1 &
	SERVER_PID=$!
	STARTED="$STARTED $SERVER_PID"
	for i in $(seq 200); do
		[ "$(nginx_workers | wc -l)" -eq 2 ] && nginx_answers && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$d/nginx.out" "$d/error.log" 2>/dev/null | sed 's/^/# /'
	return 1
}

soak_nginx() {
	local w1 w2 pids_before off d=$DP_TMP/nginx rps0 rps1 t0 t1 ok requests errors

	command -v wrk >/dev/null || tap_bail "wrk is missing (tools/deps.sh)"
	[ -x "$NGINX" ] || tap_bail "$NGINX is missing (nginx-light, tools/deps.sh)"
	start_nginx
	tap_ok $? "nginx: a master ($SERVER_PID) and 2 workers answer on 127.0.0.1:$NGINX_PORT" ||
		return 1
	read -r w1 w2 <<<"$(nginx_workers | tr '\n' ' ')"
	pids_before=$(server_pids | sort -n | tr '\n' ' ')
	snapshot pre

	run_wrk "$WINDOW" "$d/wrk-base"
	wrk_ok "$d/wrk-base"
	tap_ok $? "nginx: wrk without probes, every answer whole ($(wrk_field "$d/wrk-base" requests) requests)" ||
		tap_diag_file "$d/wrk-base"
	rps0=$(wrk_rps "$d/wrk-base")

	off=$(first_site "$NGINX" ngx_http_parse_request_line)
	[ -n "$off" ] || tap_bail "no jump site in ngx_http_parse_request_line"
	EVENTS="A a_http --path $NGINX --function ngx_http_*
A a_core --path $NGINX --function ngx_[!h]*
A a_off --path $NGINX --probe ngx_http_parse_request_line$off
A a_io --path $LIBC --pid $w1,$w2 --function *write*
A a_recv --path $LIBC --pid $w1,$w2 --function recv*
A a_time --path $LIBC --pid $w1,$w2 --function *time*
B b_http --path $NGINX --pid $w1 --function ngx_http_*
B b_pth --path $LIBC --pid $w1,$w2 --function pthread_*
B b_str --path $LIBC --pid $w2 --function str*
B b_epoll --path $LIBC --pid $w1,$w2 --function epoll_*
B b_close --path $LIBC --pid $w1,$w2 --function *close*"
	CONTEXTS="A a_http -t reg:rdi -t int64:accept_disabled:ngx_accept_disabled
A a_core -t regs
A a_off -t reg:rsi -t backtrace
A a_io -t backtrace
B b_http -t backtrace -t reg:rsi
B b_epoll -t regs -t hex64:env:environ"
	setup_sessions
	tap_diag "nginx: $(grep -c . <<<"$EVENTS") events over $(for p in 'ngx_http_*' 'ngx_[!h]*'; do
		"$LTTNG" -n list -u --path "$NGINX" --functions "$p" | tail -n +2; done | wc -l) nginx functions and $(for p in '*write*' 'recv*' '*time*' 'pthread_*' 'str*' 'epoll_*' '*close*'; do
		"$LTTNG" -n list -u --path "$LIBC" --functions "$p" | tail -n +2; done | sort -u | wc -l) libc functions"

	run_wrk "$WINDOW" "$d/wrk-probed"
	wrk_ok "$d/wrk-probed"
	tap_ok $? "nginx: wrk with every probe enabled, every answer whole ($(wrk_field "$d/wrk-probed" requests) requests)" ||
		tap_diag_file "$d/wrk-probed"
	rps1=$(wrk_rps "$d/wrk-probed")

	disable_all
	tap_ok $? "nginx: every event disabled" || tap_diag "$out"
	snapshot warm
	enable_all
	tap_ok $? "nginx: every event enabled again" || tap_diag "$out"

	# The soak: wrk for SOAK seconds, the churn until it ends (bounded
	# by time too, in case wrk hangs: its own timeout kills it).
	t0=$(date +%s)
	run_wrk "$SOAK" "$d/wrk-soak" "$NGINX_DELAY" &
	local load=$!
	STARTED="$STARTED $load"
	churn $((t0 + SOAK + 150)) "$load"
	wait "$load"
	t1=$(date +%s)
	tap_ok "$CHURN_FAIL" "nginx: $CYCLES enable/disable cycles while wrk ran, none failed"
	wrk_ok "$d/wrk-soak"
	tap_ok $? "nginx: wrk during the soak, every answer whole" || tap_diag_file "$d/wrk-soak"

	disable_all
	tap_ok $? "nginx: every event disabled at the end" || tap_diag "$out"
	wx_scan
	tap_ok "$WX_BAD" "nginx: no page writable and executable at once in any process, $WX_SAMPLES samples"
	[ "$(server_pids | sort -n | tr '\n' ' ')" = "$pids_before" ]
	tap_ok $? "nginx: the same master and workers run ($pids_before)" ||
		tap_diag "now: $(server_pids | tr '\n' ' ')"
	! grep -Eq 'exited on signal|\[(alert|emerg|crit)\]' "$d/error.log"
	tap_ok $? "nginx: no crash nor alert in its error log" ||
		grep -E 'signal|alert|emerg|crit' "$d/error.log" | head | sed 's/^/# /'
	nginx_answers
	tap_ok $? "nginx: still answers"
	snapshot end
	check_text
	check_leaks
	check_counts

	requests=$(($(wrk_field "$d/wrk-base" requests) + $(wrk_field "$d/wrk-probed" requests) +
		$(wrk_field "$d/wrk-soak" requests)))
	errors=$(($(wrk_field "$d/wrk-base" errors) + $(wrk_field "$d/wrk-probed" errors) +
		$(wrk_field "$d/wrk-soak" errors) + $(wrk_field "$d/wrk-base" bad) +
		$(wrk_field "$d/wrk-probed" bad) + $(wrk_field "$d/wrk-soak" bad)))
	tap_diag "nginx figures: soak $((t1 - t0)) s, $requests requests ($(wrk_field "$d/wrk-soak" requests) during the churn, $(wrk_rps "$d/wrk-soak") req/s), $errors errors or bad answers, $CYCLES enable/disable cycles, hits $HITS, recorded $RECORDED, recursions $RECURSIONS, traced $TRACED, discarded $DISCARDED"
	tap_diag "nginx throughput: $rps0 req/s without probes, $rps1 req/s with $(grep -c . <<<"$EVENTS") events enabled: ratio $(ratio "$rps1" "$rps0") (wrk -t2 -c16, $WINDOW s each)"
	dp_stop_pid "$SERVER_PID"
}
