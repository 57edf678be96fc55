#!/bin/sh
# Make a local Node.js base image without any registry: `docker import` of a tarball holding this
# machine's own node binary, npm, a shell and the few tools the Dockerfile and npm scripts run,
# every library `ldd` lists for them, and an /etc/passwd with a `node` user (uid 1000, as in the
# official images). The layout mirrors node:*-slim (node and npm under /usr/local).
#
#   base-image.sh TAG [DOCKER]
#
# The image is labelled with a digest of what went in; when TAG already carries the same digest it
# is kept, so the Dockerfile's layers built on it stay cached from one run to the next.
set -eu
tag=$1
docker=${2:-docker}

node=$(readlink -f "$(command -v node)")
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
tools="sh mkdir chown chmod rm cp mv ln cat ls env"

# shellcheck disable=SC2086
digest=$( { sha256sum "$node" $(for t in $tools; do readlink -f "$(command -v "$t")"; done);
  cat "$npm_dir/package.json"; cat "$0"; } | sha256sum | cut -c1-32)
if [ "$("$docker" image inspect -f '{{index .Config.Labels "org.coral.base-digest"}}' "$tag" 2>/dev/null)" = "$digest" ]; then
  exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT INT TERM

mkdir -p "$stage/usr/bin" "$stage/usr/lib" "$stage/usr/lib64" "$stage/usr/sbin" \
  "$stage/usr/local/bin" "$stage/usr/local/lib/node_modules" "$stage/etc" "$stage/tmp" \
  "$stage/root" "$stage/home/node"
# Debian's merged /usr: /bin, /lib, /lib64 and /sbin are links into /usr.
for d in bin lib lib64 sbin; do ln -s "usr/$d" "$stage/$d"; done
chmod 1777 "$stage/tmp"

cp "$node" "$stage/usr/local/bin/node"
cp -a "$npm_dir" "$stage/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$stage/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$stage/usr/local/bin/npx"
bins="$node"
for t in $tools; do
  p=$(readlink -f "$(command -v "$t")")
  cp "$p" "$stage/usr/bin/$t"
  bins="$bins $p"
done

# Every shared library and the dynamic loader, copied (links resolved) to the path ldd names.
# shellcheck disable=SC2086
for lib in $(ldd $bins 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' | sort -u); do
  cp --parents -L "$lib" "$stage"
done

cat >"$stage/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
node:x:1000:1000::/home/node:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PASSWD
cat >"$stage/etc/group" <<'GROUP'
root:x:0:
node:x:1000:
nogroup:x:65534:
GROUP
chown 1000:1000 "$stage/home/node"

tar --numeric-owner -C "$stage" -cf - . | "$docker" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  --change "LABEL org.coral.base-digest=$digest" \
  - "$tag" >/dev/null
