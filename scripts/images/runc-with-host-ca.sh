#!/usr/bin/env bash
# buildkitd's runc (--oci-worker-binary) when the host trusts a CA the images
# must not carry: this machine reaches the npm registry and PyPI through a
# TLS-intercepting egress proxy whose CA only the host's bundle has, so
# `npm ci` and `pip install` in a RUN step would fail on its certificate. For
# each container BuildKit starts, the host's bundle directory is bind-mounted
# read-only at /mnt and NODE_EXTRA_CA_CERTS, PIP_CERT and SSL_CERT_FILE point at
# it, in that RUN's process only: nothing reaches a layer or the image config.
# /mnt because it exists, empty, in every Debian rootfs: a mount onto a missing
# path would leave its stub in the layer. A rootfs without an empty /mnt runs
# unchanged.
#
# Environment (set by scripts/build-images.sh on buildkitd):
#   FFKUBE_RUNC      the real runc
#   FFKUBE_BUILD_CA  a directory holding the host's bundle as ca.crt
set -euo pipefail
bundle=""
if [[ "${1:-}" == run || " $* " == *" run "* ]]; then
  args=("$@")
  for ((i = 0; i < ${#args[@]} - 1; i++)); do
    [[ "${args[i]}" == --bundle ]] && bundle="${args[i + 1]}"
  done
fi
if [[ -n "$bundle" && -n "${FFKUBE_BUILD_CA:-}" ]]; then
  node - "$bundle/config.json" "$FFKUBE_BUILD_CA" <<'JS'
const { readFileSync, readdirSync, writeFileSync } = require('node:fs')
const { isAbsolute, join } = require('node:path')
const [file, caDir] = process.argv.slice(2)
const bundle = file.slice(0, -'/config.json'.length)
const spec = JSON.parse(readFileSync(file, 'utf8'))
const root = isAbsolute(spec.root.path) ? spec.root.path : join(bundle, spec.root.path)
let empty = false
try { empty = readdirSync(join(root, 'mnt')).length === 0 } catch {}
if (empty && !spec.mounts.some((m) => m.destination === '/mnt')) {
  spec.mounts.push({ destination: '/mnt', type: 'bind', source: caDir, options: ['rbind', 'ro', 'nosuid', 'nodev', 'noexec'] })
  const env = spec.process.env ?? []
  for (const name of ['NODE_EXTRA_CA_CERTS', 'PIP_CERT', 'SSL_CERT_FILE']) {
    if (!env.some((e) => e.startsWith(`${name}=`))) env.push(`${name}=/mnt/ca.crt`)
  }
  spec.process.env = env
  writeFileSync(file, JSON.stringify(spec))
}
JS
fi
exec "${FFKUBE_RUNC:-runc}" "$@"
