#!/usr/bin/env bash
# A fleet on one box: two memoryd servers (one of them with two worker processes) on one
# PostgreSQL with pgvector, a client key made through one server and a chat through it,
# the memory read back through the other. On real machines, run the `memoryd serve`
# line on each machine behind a load balancer; everything else is the same.
#
#   MEMORYD_DATABASE_URL=postgresql://memoryd:secret@db-host:5432/memoryd \
#   MEMORYD_UPSTREAM_BASE_URL=https://api.openai.com/v1 MEMORYD_UPSTREAM_API_KEY=sk-... \
#     bash docs/examples/fleet.sh
#
# The smoke suite runs this file as it is against a throwaway PostgreSQL and a local
# fake provider (smoke/test_fleet.py).
set -euo pipefail
: "${MEMORYD_DATABASE_URL:?set MEMORYD_DATABASE_URL=postgresql://user:pass@host:5432/db}"
: "${MEMORYD_UPSTREAM_BASE_URL:?set MEMORYD_UPSTREAM_BASE_URL, e.g. https://api.openai.com/v1}"
# One admin token for the whole fleet (without it the first server makes one and keeps it
# in the database, and the others read it from there).
export MEMORYD_ADMIN_TOKEN=${MEMORYD_ADMIN_TOKEN:-$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')}
PORT_A=${PORT_A:-20128}
PORT_B=${PORT_B:-20129}
READY_TIMEOUT_S=${READY_TIMEOUT_S:-300}  # a cold start loads the embedder on each process
WORK=$(mktemp -d)
CURL=(curl -sf --max-time 10)

# 1. Check the install, the database and the provider before starting anything.
memoryd --data-dir "$WORK/a" doctor

# 2. Start the servers: each has its own data dir (logs, local caches); the memories,
#    keys and settings live in PostgreSQL, and the first server to start migrates it.
memoryd --data-dir "$WORK/a" serve --port "$PORT_A" --workers 2 2>"$WORK/a.log" &
A=$!
memoryd --data-dir "$WORK/b" serve --port "$PORT_B" 2>"$WORK/b.log" &
B=$!
trap 'kill $A $B 2>/dev/null; wait; rm -rf "$WORK"' EXIT
for port in "$PORT_A" "$PORT_B"; do
    deadline=$((SECONDS + READY_TIMEOUT_S))
    until "${CURL[@]}" "http://127.0.0.1:$port/healthz" >/dev/null; do
        if ! kill -0 "$A" 2>/dev/null || ! kill -0 "$B" 2>/dev/null || ((SECONDS > deadline)); then
            echo "a server did not come up on :$port" >&2
            cat "$WORK"/*.log >&2
            exit 1
        fi
        sleep 0.2
    done
done
echo "servers up on :$PORT_A and :$PORT_B"

# 3. A client key, made through server A (the admin token works on every server).
ADMIN=(-H "Authorization: Bearer $MEMORYD_ADMIN_TOKEN" -H "Content-Type: application/json")
KEY_JSON=$("${CURL[@]}" "${ADMIN[@]}" -d '{"name": "my-app"}' "http://127.0.0.1:$PORT_A/api/keys")
KEY=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])' <<<"$KEY_JSON")
KEY_ID=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' <<<"$KEY_JSON")
echo "client key $KEY_ID"

# 4. A chat through server A, as any OpenAI client sends it (base URL + the memoryd key).
"${CURL[@]}" "http://127.0.0.1:$PORT_A/v1/chat/completions" \
    -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" \
    -d '{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "My dog is called Rex."}]}' \
    >/dev/null

# 5. The fact, extracted in the background, read back through server B.
for _ in $(seq 300); do
    FOUND=$("${CURL[@]}" "${ADMIN[@]}" "http://127.0.0.1:$PORT_B/api/memory?apiKeyId=$KEY_ID&q=Rex" || true)
    if grep -q Rex <<<"$FOUND"; then
        echo "server B sees: $(python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["content"])' <<<"$FOUND")"
        exit 0
    fi
    sleep 0.2
done
echo "the memory did not reach server B" >&2
exit 1
