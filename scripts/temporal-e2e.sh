#!/usr/bin/env bash
# temporal-e2e.sh — research runs on a real Temporal server, end to end.
#
# Gets a Temporal development server (the temporal CLI if it is on PATH or
# `go install go.temporal.io/cli/cmd/temporal@v1.5.1` works, else
# scripts/temporal-dev), starts it on loopback, builds research once, starts
# the fake model/search/web (scripts/fakeapi) with a latency per model call,
# starts the workers, submits the research runs with `research batch`, kills
# one worker with SIGKILL once 40% of the reports have arrived, and checks:
#
#   - every run's report arrived (one .md per question, and the summary
#     lists each run as completed);
#   - each report is valid: an answer that names its question, citations
#     matching the Sources list, every URL one the fake served, no invented
#     link (scripts/temporal-e2e-check reports);
#   - no finished activity ran twice: in every run's history each scheduled
#     activity completed at most once and no activity ID was scheduled again
#     after it completed, and every model prompt the fake saw twice belongs
#     to an activity that was re-executed because its attempt was lost with
#     the killed worker (scripts/temporal-e2e-check history).
#
# It prints a summary (runs, wall time, runs/minute, re-executed in-flight
# activities, duplicate completions) and exits non-zero when a check fails.
#
# Usage: scripts/temporal-e2e.sh [--runs N] [--workers 1|2] [--latency D]
#        [--no-kill] [--kill-at PCT] [--kill-after SECS] [--overhead N]
#        [--batch-concurrency N] [--worker-concurrency N]
#        [--port P] [--task-queue Q] [--timeout SECS] [--keep] [--work DIR]
#
#   --runs N         research runs to submit (default 50)
#   --workers N      workers to start, 1 or 2 (default 2; 1 implies --no-kill)
#   --latency D      the fake's latency per model call (default 100ms)
#   --no-kill        kill no worker (for throughput figures)
#   --kill-at PCT    kill worker 1 once PCT% of the reports arrived (default 40)
#   --kill-after S   ... or S seconds after the batch started, whichever first
#   --batch-concurrency N   research batch --concurrency (default: its own, 16)
#   --worker-concurrency N  research worker --concurrency (default: its own, 64)
#   --overhead N     afterwards, time N runs of one question in-process and N
#                    on Temporal, alternating, and print the medians
#   --port P         Temporal frontend port (default: a free one)
#   --timeout S      give up on the batch after S seconds (default 900)
#   --keep           keep the work directory (it is kept anyway on failure)
#   --work DIR       work directory (default: a new one under /tmp)
set -euo pipefail

RUNS=50
WORKERS=2
LATENCY=100ms
KILL=1
KILL_AT=40
KILL_AFTER=
OVERHEAD=0
BATCH_CONCURRENCY=
WORKER_CONCURRENCY=
PORT=
QUEUE=deepgraph-e2e
TIMEOUT=900
KEEP=0
WORK=

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die() {
	echo "temporal-e2e: $*" >&2
	exit 2
}

while (($# > 0)); do
	case "$1" in
	--runs) RUNS=${2:?}; shift ;;
	--workers) WORKERS=${2:?}; shift ;;
	--latency) LATENCY=${2:?}; shift ;;
	--no-kill) KILL=0 ;;
	--kill-at) KILL_AT=${2:?}; shift ;;
	--kill-after) KILL_AFTER=${2:?}; shift ;;
	--overhead) OVERHEAD=${2:?}; shift ;;
	--batch-concurrency) BATCH_CONCURRENCY=${2:?}; shift ;;
	--worker-concurrency) WORKER_CONCURRENCY=${2:?}; shift ;;
	--port) PORT=${2:?}; shift ;;
	--task-queue) QUEUE=${2:?}; shift ;;
	--timeout) TIMEOUT=${2:?}; shift ;;
	--keep) KEEP=1 ;;
	--work) WORK=${2:?}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "--runs wants a positive number"
[[ $WORKERS == 1 || $WORKERS == 2 ]] || die "--workers wants 1 or 2"
if ! [[ $KILL_AT =~ ^[0-9]+$ ]] || ((KILL_AT > 100)); then
	die "--kill-at wants a percentage"
fi
[[ -z $KILL_AFTER || $KILL_AFTER =~ ^[0-9]+$ ]] || die "--kill-after wants whole seconds"
[[ $OVERHEAD =~ ^[0-9]+$ ]] || die "--overhead wants a number"
[[ -z $BATCH_CONCURRENCY || $BATCH_CONCURRENCY =~ ^[1-9][0-9]*$ ]] || die "--batch-concurrency wants a positive number"
[[ -z $WORKER_CONCURRENCY || $WORKER_CONCURRENCY =~ ^[1-9][0-9]*$ ]] || die "--worker-concurrency wants a positive number"
if ((WORKERS < 2)); then
	KILL=0 # the only worker cannot be killed and the runs still finish
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $WORK ]]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/temporal-e2e.XXXXXX")
fi
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
BIN=$WORK/bin
OUT=$WORK/out
BLOBS=$WORK/blobs
LOGS=$WORK/logs
mkdir -p "$BIN" "$OUT" "$BLOBS" "$LOGS"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ------------------------------------------------------------ cleanup

PIDS=()
cleanup() {
	local rc=$? pid alive i
	trap '' INT TERM # a second Ctrl-C must not cut the cleanup short
	# SIGTERM to everything started, newest first (the batch, the workers,
	# the fake, the server); SIGKILL to what is left after 5 s.
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		kill -TERM "${PIDS[i]}" 2>/dev/null || true
	done
	for _ in $(seq 50); do
		alive=0
		for pid in "${PIDS[@]}"; do
			if kill -0 "$pid" 2>/dev/null; then
				alive=1
			fi
		done
		((alive)) || break
		sleep 0.1
	done
	for pid in "${PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if ((rc == 0 && KEEP == 0)); then
		rm -rf "$WORK"
	else
		echo "temporal-e2e: work directory kept: $WORK (logs in $LOGS)" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD... starts CMD in the background, output in $LOGS/NAME.out
# and .err; its PID is in $STARTED.
start() {
	local name=$1
	shift
	"$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" &
	STARTED=$!
	PIDS+=("$STARTED")
}

# wait_line FILE PATTERN PID SECS waits for a line matching PATTERN in FILE
# while PID lives.
wait_line() {
	local file=$1 pattern=$2 pid=$3 secs=$4 i
	for ((i = 0; i < secs * 10; i++)); do
		if grep -q -- "$pattern" "$file" 2>/dev/null; then
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "temporal-e2e: process $pid exited before printing \"$pattern\"; its stderr:" >&2
			tail -n 20 "${file%.out}.err" >&2 || true
			return 1
		fi
		sleep 0.1
	done
	echo "temporal-e2e: no \"$pattern\" in $file after ${secs}s" >&2
	return 1
}

# ------------------------------------------------------------ build

cd "$ROOT"
log "building research, the fake and the checker"
go build -o "$BIN/research" ./cmd/research
go build -tags temporal -o "$BIN/research-temporal" ./cmd/research
go build -o "$BIN/fakeapi" ./scripts/fakeapi
go build -o "$BIN/check" ./scripts/temporal-e2e-check

if [[ -z $PORT ]]; then
	PORT=$("$BIN/check" freeport)
fi
ADDR=127.0.0.1:$PORT

# ------------------------------------------------------------ Temporal

SERVER=
if command -v temporal >/dev/null 2>&1; then
	SERVER=$(command -v temporal)
elif GOBIN=$BIN timeout 300 go install go.temporal.io/cli/cmd/temporal@v1.5.1 >"$LOGS/go-install-temporal.log" 2>&1; then
	SERVER=$BIN/temporal
else
	log "go install go.temporal.io/cli/cmd/temporal@v1.5.1 failed: $(grep -m1 -o '[0-9]\{3\} [A-Z][A-Za-z ]*' "$LOGS/go-install-temporal.log" || tail -n 1 "$LOGS/go-install-temporal.log")"
	log "building scripts/temporal-dev instead"
	(cd "$ROOT/scripts/temporal-dev" && go build -o "$BIN/temporal-dev" .)
fi
if [[ -n $SERVER ]]; then
	SERVER_NAME="temporal CLI ($SERVER)"
	start temporal "$SERVER" server start-dev --ip 127.0.0.1 --port "$PORT" --headless --log-level warn
else
	SERVER_NAME="scripts/temporal-dev"
	start temporal "$BIN/temporal-dev" --ip 127.0.0.1 --port "$PORT" --log-level warn
	wait_line "$LOGS/temporal.out" "ready on" "$STARTED" 120
fi
SERVER_PID=$STARTED
"$BIN/check" wait --temporal "$ADDR" --timeout 120s
log "Temporal dev server ($SERVER_NAME) up on $ADDR, pid $SERVER_PID"

# ------------------------------------------------------------ fake, workers

COUNT_FILE=$WORK/model-calls.txt
: >"$COUNT_FILE"
start fakeapi "$BIN/fakeapi" --latency "$LATENCY" --count-file "$COUNT_FILE"
wait_line "$LOGS/fakeapi.out" "fakeapi listening on" "$STARTED" 30
FAKEAPI_URL=$(awk 'NR == 1 { print $4 }' "$LOGS/fakeapi.out")
log "fake model, search and web on $FAKEAPI_URL (model latency $LATENCY)"

# The research processes: the fake's providers, and a home of their own.
export FAKEAPI_URL
# shellcheck source=scripts/fakeapi/env.sh
. "$ROOT/scripts/fakeapi/env.sh"
export HOME=$WORK/home XDG_CONFIG_HOME=$WORK/home/.config XDG_STATE_HOME=$WORK/home/.local/state XDG_CACHE_HOME=$WORK/home/.cache
mkdir -p "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME"

WORKER_PIDS=()
for ((w = 1; w <= WORKERS; w++)); do
	start "worker$w" "$BIN/research" worker --temporal "$ADDR" --task-queue "$QUEUE" --blob-dir "$BLOBS" \
		${WORKER_CONCURRENCY:+--concurrency "$WORKER_CONCURRENCY"}
	WORKER_PIDS+=("$STARTED")
done
"$BIN/check" wait --temporal "$ADDR" --task-queue "$QUEUE" --pollers "$WORKERS" --timeout 60s
log "$WORKERS worker(s) polling task queue $QUEUE: pids ${WORKER_PIDS[*]}"

# ------------------------------------------------------------ the batch

QUESTIONS=$WORK/questions.txt
TOPICS=(leader-election log-replication sharding consistent-hashing vector-clocks
	gossip-protocols two-phase-commit snapshot-isolation write-ahead-logging bloom-filters)
for ((i = 1; i <= RUNS; i++)); do
	t=${TOPICS[$(((i - 1) % ${#TOPICS[@]}))]}
	printf 'Question %d: how does %s behave under failure in system %d?\n' "$i" "${t//-/ }" "$i"
done >"$QUESTIONS"

count_reports() {
	find "$OUT" -maxdepth 1 -type f -name '*.md' ! -iname 'summary*' | wc -l
}

KILL_THRESHOLD=$(((RUNS * KILL_AT + 99) / 100))
log "submitting $RUNS research runs (research batch); $(
	if ((KILL)); then echo "worker 1 gets SIGKILL at $KILL_THRESHOLD reports${KILL_AFTER:+ or ${KILL_AFTER}s}"; else echo "no worker is killed"; fi
)"
T0=$(now)
start batch "$BIN/research" batch "$QUESTIONS" --temporal "$ADDR" --task-queue "$QUEUE" --out "$OUT" --blob-dir "$BLOBS" \
	${BATCH_CONCURRENCY:+--concurrency "$BATCH_CONCURRENCY"}
BATCH_PID=$STARTED
KILLED_AT=
KILLED_REPORTS=
INFLIGHT=
while kill -0 "$BATCH_PID" 2>/dev/null; do
	n=$(count_reports)
	t=$(elapsed "$T0" "$(now)")
	if ((KILL)) && [[ -z $KILLED_AT ]]; then
		if ((n >= KILL_THRESHOLD)) || { [[ -n $KILL_AFTER ]] && awk -v t="$t" -v k="$KILL_AFTER" 'BEGIN { exit !(t >= k) }'; }; then
			# Kill it while it runs activities (the SDK's worker identity
			# is PID@HOST@), so that the kill loses work in flight.
			INFLIGHT=$("$BIN/check" inflight --temporal "$ADDR" --identity-prefix "${WORKER_PIDS[0]}@" --min 1 --wait 10s || echo "?")
			kill -KILL "${WORKER_PIDS[0]}"
			wait "${WORKER_PIDS[0]}" 2>/dev/null || true
			KILLED_AT=$(elapsed "$T0" "$(now)")
			KILLED_REPORTS=$(count_reports)
			log "SIGKILL to worker 1 (pid ${WORKER_PIDS[0]}) at ${KILLED_AT}s, $KILLED_REPORTS of $RUNS reports in, $INFLIGHT activities running on it just before"
		fi
	fi
	if awk -v t="$t" -v k="$TIMEOUT" 'BEGIN { exit !(t >= k) }'; then
		log "the batch is still running after ${TIMEOUT}s ($n of $RUNS reports): giving up"
		exit 1
	fi
	sleep 0.1
done
BATCH_RC=0
wait "$BATCH_PID" || BATCH_RC=$?
T1=$(now)
WALL=$(elapsed "$T0" "$T1")
RATE=$(awk -v n="$RUNS" -v s="$WALL" 'BEGIN { printf "%.1f", n * 60 / s }')
log "the batch exited with status $BATCH_RC after ${WALL}s"

# ------------------------------------------------------------ checks

FAILED=()
check() { # check NAME COND-RESULT
	if (($2)); then
		log "check $1: OK"
	else
		log "check $1: FAILED"
		FAILED+=("$1")
	fi
}

check "research batch exits 0" "$((BATCH_RC == 0))"
if ((BATCH_RC != 0)); then
	tail -n 20 "$LOGS/batch.err" >&2 || true
fi
if ((KILL)); then
	KILLED_MIDWAY=0
	if [[ -n $KILLED_AT ]] && ((KILLED_REPORTS < RUNS)); then
		KILLED_MIDWAY=1
	fi
	check "a worker was killed while runs were in flight" "$KILLED_MIDWAY"
fi

NREPORTS=$(count_reports)
check "$RUNS reports arrived ($NREPORTS)" "$((NREPORTS == RUNS))"

COMPLETED_ROWS=0
if [[ -f $OUT/summary.md ]]; then
	COMPLETED_ROWS=$(grep -c '^| [0-9]* | .* | done |' "$OUT/summary.md" || true)
fi
check "summary.md lists $RUNS runs as done ($COMPLETED_ROWS)" "$((COMPLETED_ROWS == RUNS))"

# The reports (Markdown and JSON) and summary.json.
REPORTS_RC=0
"$BIN/check" reports --out "$OUT" --questions "$QUESTIONS" --urls "$FAKEAPI_URL/_fake/urls" | tee "$LOGS/check-reports.txt" || REPORTS_RC=$?
check "every report is valid, summary.json lists every run as done" "$((REPORTS_RC == 0))"

HISTORY_RC=0
"$BIN/check" history --temporal "$ADDR" --runs "$RUNS" --count-file "$COUNT_FILE" --blob-dir "$BLOBS" | tee "$LOGS/check-history.txt" || HISTORY_RC=$?
check "no finished activity executed twice (histories and model calls)" "$((HISTORY_RC == 0))"

figure() { sed -n "s/.*history-figures:.* $1=\([-0-9]*\).*/\1/p" "$LOGS/check-history.txt"; }
REEXEC=$(figure reexecuted)
DUPS=$(figure dup_completions)
RESCHED=$(figure rescheduled)
REPEATS=$(figure repeated_prompts)
if ((!KILL)); then
	check "without a kill nothing ran twice" "$((${REEXEC:-1} == 0 && ${REPEATS:-1} == 0))"
fi

# ------------------------------------------------------------ overhead

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
if ((OVERHEAD > 0)); then
	Q="How does Raft elect a leader under failure?"
	: >"$WORK/local.times"
	: >"$WORK/temporal.times"
	log "overhead: $OVERHEAD runs of one question in-process and $OVERHEAD on Temporal, alternating"
	for ((i = 1; i <= OVERHEAD; i++)); do
		a=$(now)
		"$BIN/research" "$Q" >"$LOGS/overhead-local-$i.md" 2>"$LOGS/overhead-local-$i.err" || FAILED+=("overhead local run $i")
		b=$(now)
		"$BIN/research" --temporal "$ADDR" --task-queue "$QUEUE" --blob-dir "$BLOBS" "$Q" >"$LOGS/overhead-temporal-$i.md" 2>"$LOGS/overhead-temporal-$i.err" || FAILED+=("overhead Temporal run $i")
		c=$(now)
		awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f\n", b - a }' >>"$WORK/local.times"
		awk -v b="$b" -v c="$c" 'BEGIN { printf "%.3f\n", c - b }' >>"$WORK/temporal.times"
	done
	LOCAL_MED=$(median <"$WORK/local.times")
	TEMPORAL_MED=$(median <"$WORK/temporal.times")
	echo "overhead: in-process wall times (s): $(paste -sd' ' "$WORK/local.times")"
	echo "overhead: on Temporal wall times (s): $(paste -sd' ' "$WORK/temporal.times")"
	echo "overhead: median in-process ${LOCAL_MED}s, on Temporal ${TEMPORAL_MED}s, difference $(awk -v a="$LOCAL_MED" -v b="$TEMPORAL_MED" 'BEGIN { printf "%+.3fs (%.2fx)", b - a, b / a }')"
	# The client polls the run's progress (every 500ms), so its wall time
	# is rounded up to a poll; the server's own record has no such step.
	"$BIN/check" durations --temporal "$ADDR" --question "$Q" --blob-dir "$BLOBS" | sed 's/^/overhead: Temporal runs /' || FAILED+=("overhead durations")
fi

# ------------------------------------------------------------ summary

echo
echo "== temporal e2e summary =="
echo "server:            $SERVER_NAME on $ADDR"
echo "model latency:     $LATENCY per call (fake on $FAKEAPI_URL)"
echo "concurrency:       batch ${BATCH_CONCURRENCY:-16 (default)} runs in flight, ${WORKER_CONCURRENCY:-64 (default)} tasks per worker"
echo "workers:           $WORKERS$(if [[ -n $KILLED_AT ]]; then echo " (worker 1, pid ${WORKER_PIDS[0]}, SIGKILLed at ${KILLED_AT}s with $KILLED_REPORTS of $RUNS reports in and $INFLIGHT activities running on it)"; fi)"
echo "runs:              $RUNS submitted, $NREPORTS reports, $COMPLETED_ROWS done in the summary"
echo "wall time:         ${WALL}s"
echo "throughput:        $RATE runs/minute"
echo "re-executed in-flight activities: ${REEXEC:-?}$(if [[ -n $KILLED_AT ]]; then echo " (their attempt was lost with the killed worker: expected)"; fi)"
echo "repeated model prompts:           ${REPEATS:-?} (each from one of those re-executions)"
echo "duplicate completions:            ${DUPS:-?}; activities rescheduled after completing: ${RESCHED:-?}"
if ((${#FAILED[@]} > 0)); then
	echo "result:            FAIL (${#FAILED[@]} checks: $(printf '%s; ' "${FAILED[@]}"))"
	exit 1
fi
echo "result:            PASS"
