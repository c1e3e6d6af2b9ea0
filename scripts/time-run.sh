#!/usr/bin/env bash
# How long `make run` takes to start: scripts/run.sh from its launch until all three services
# answer GET /readyz with 200, on fresh SQLite databases (the demo import, the forum's migrations
# and seed included, the build not). RUNS runs (default 5), one after another; prints each time
# and the median in milliseconds. BIN names the binaries' directory (default bin: `make build`
# first), so that two builds can be timed the same way.
#
#   make build && scripts/time-run.sh 5
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-5}
BIN=${BIN:-bin}
URLS=(http://127.0.0.1:8081/readyz http://127.0.0.1:8082/readyz http://127.0.0.1:8083/readyz)

for port in 8081 8082 8083 8090; do
	if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
		echo "port $port is in use: stop what listens there first" >&2
		exit 1
	fi
done

now_ms() { date +%s%3N; }

times=()
for i in $(seq 1 "$RUNS"); do
	data=$(mktemp -d)
	start=$(now_ms)
	BIN=$BIN DATA=$data scripts/run.sh >"$data/run.log" 2>&1 &
	run=$!
	ready=""
	while [ -z "$ready" ]; do
		ready=yes
		for u in "${URLS[@]}"; do
			if ! curl -fsS -o /dev/null --max-time 1 "$u" 2>/dev/null; then
				ready=""
				break
			fi
		done
		if [ -z "$ready" ]; then
			if ! kill -0 "$run" 2>/dev/null || [ $(($(now_ms) - start)) -gt 60000 ]; then
				echo "run $i: not ready within 60 s or run.sh exited; its output:" >&2
				cat "$data/run.log" >&2
				kill -TERM "$run" 2>/dev/null || true
				wait "$run" 2>/dev/null || true
				exit 1
			fi
			sleep 0.02
		fi
	done
	elapsed=$(($(now_ms) - start))
	kill -TERM "$run"
	wait "$run" 2>/dev/null || true
	rm -rf "$data"
	times+=("$elapsed")
	echo "run $i: ${elapsed} ms"
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
echo "median of $RUNS: ${median} ms"
