#!/usr/bin/env bash
# `make run`: the whole system on the embedded SQLite databases, with nothing but Go.
# Imports demo reports of the last 90 days (relative to today, Moscow calendar), starts the fake
# Discord (unless DISCORD_TOKEN is set), the collector (counting live from the gateway too, its
# default; DISCORD_GATEWAY=off for the REST search alone), stats-svc and forum-svc (seeded with
# the demo forum, with a webhook to a local receiver that prints each delivery), prints curl
# examples, and stops everything on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
DATA=${DATA:-./data}
FAKE_ADDR=${FAKE_ADDR:-127.0.0.1:8090}
HOOK_ADDR=${HOOK_ADDR:-127.0.0.1:8091}
mkdir -p "$DATA"

export LOG_FORMAT=${LOG_FORMAT:-text}
export LOG_LEVEL=${LOG_LEVEL:-warn}
STATS_DB="sqlite:$DATA/stats.db"
FORUM_DB="sqlite:$DATA/forum.db"

pids=()
stop() {
	trap - INT TERM EXIT
	echo
	echo "stopping..."
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	echo "stopped."
	exit 0
}
trap stop INT TERM EXIT

wait_http() { # url
	for _ in $(seq 1 100); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1" >&2
	return 1
}

echo "importing demo reports of the last 90 days into $STATS_DB"
DATABASE_URL=$STATS_DB "$BIN/collector-svc" demo --days 90 --catalog deploy/compose/catalog.json

if [ -z "${DISCORD_TOKEN:-}" ]; then
	echo "DISCORD_TOKEN is empty: collecting from the fake Discord on $FAKE_ADDR"
	"$BIN/collector-svc" fake-discord --addr "$FAKE_ADDR" --shards 2 --max-concurrency 2 &
	pids+=($!)
	export DISCORD_API_BASE="http://$FAKE_ADDR"
	# The fake's REST API takes any token; its gateway, as Discord's, refuses an empty one.
	export DISCORD_TOKEN=fake-discord-demo
	export CATALOG_FILE=${CATALOG_FILE:-deploy/compose/catalog.json}
	sleep 0.5
else
	: "${CATALOG_FILE:?set CATALOG_FILE to your servers (JSON or YAML list of {number, name, guildId})}"
	export CATALOG_FILE
fi

# Live counts from the gateway (DISCORD_GATEWAY defaults to on) flow into the live_* tables, and
# today's and this month's reports of the servers counted live are written from them.
DATABASE_URL=$STATS_DB HTTP_ADDR=127.0.0.1:8083 "$BIN/collector-svc" serve &
pids+=($!)
DATABASE_URL=$STATS_DB HTTP_ADDR=127.0.0.1:8082 "$BIN/stats-svc" serve &
pids+=($!)
DATABASE_URL=$FORUM_DB "$BIN/forum-svc" migrate >/dev/null
DATABASE_URL=$FORUM_DB "$BIN/forum-svc" seed --file forum-svc/demo/seed.json
# A webhook receiver that checks the signatures and prints what it gets; each run registers a new
# webhook to it (with a new secret) and disables the previous runs' ones.
HOOK_URL="http://$HOOK_ADDR/webhook"
DATABASE_URL=$FORUM_DB "$BIN/forum-svc" webhook list | awk -v u="$HOOK_URL" '$2 == "active" && $3 == u {print $1}' |
	while read -r old; do DATABASE_URL=$FORUM_DB "$BIN/forum-svc" webhook disable "$old" >/dev/null; done
read -r HOOK_ID HOOK_SECRET < <(DATABASE_URL=$FORUM_DB "$BIN/forum-svc" webhook add --url "$HOOK_URL" --events '*' 2>/dev/null)
"$BIN/forum-svc" webhook receive --addr "$HOOK_ADDR" --secret "$HOOK_SECRET" &
pids+=($!)
# The receiver is on a loopback address, which deliveries refuse unless allowed.
WEBHOOK_ALLOW_PRIVATE=true DATABASE_URL=$FORUM_DB HTTP_ADDR=127.0.0.1:8081 "$BIN/forum-svc" serve &
pids+=($!)

wait_http http://127.0.0.1:8082/healthz
wait_http http://127.0.0.1:8081/healthz
wait_http http://127.0.0.1:8083/healthz

msk() { TZ=Europe/Moscow date -d "$1" +%F; } # a day of the Moscow calendar, relative to today

cat <<MSG

Everything runs (Ctrl-C stops it):
  dashboard      http://127.0.0.1:8082/
  stats-svc      http://127.0.0.1:8082/api/openapi.json
  forum-svc      http://127.0.0.1:8081
  collector-svc  http://127.0.0.1:8083/metrics (health and metrics only)
  webhooks       webhook $HOOK_ID (every event) -> $HOOK_URL: the receiver prints each delivery here;
                 DATABASE_URL=$FORUM_DB $BIN/forum-svc webhook deliveries --webhook $HOOK_ID

Statistics (the demo holds 90 days up to today, today in progress; server 2's day of
10 days ago is stale, server 3 has no report for 20 days ago):
  curl -s 'http://127.0.0.1:8082/api/chat-statistics'
  curl -s 'http://127.0.0.1:8082/api/chat-statistics?period=week&server=1'
  curl -s 'http://127.0.0.1:8082/api/chat-statistics?period=day&date=$(msk '-10 days')&server=2'
  curl -s 'http://127.0.0.1:8082/api/chat-series?from=$(msk '-29 days')&to=$(msk today)'
  curl -s -OJ 'http://127.0.0.1:8082/api/chat-series?from=$(msk '-89 days')&to=$(msk today)&format=csv'
  curl -s -H 'Accept: text/csv' 'http://127.0.0.1:8082/api/chat-statistics?period=week'
  curl -s 'http://127.0.0.1:8082/api/chat-icons'

Forum-svc live events: bob's stream (server-sent events; leave it open, then reply as alice in
conversation 10 from another terminal):
  curl -N -H 'Forum-Api-Key: demo-bob-read-only-key-0123456789abcd' 'http://127.0.0.1:8081/api/events'

Forum-svc demo users and keys (forum-svc/demo/README.md):
MSG
sed -n '/^Keys/,$p' forum-svc/demo/README.md
wait -n "${pids[@]}" || true
echo "a service exited; see its output above" >&2
