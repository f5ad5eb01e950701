#!/usr/bin/env bash
# Writes a one-layer image archive in `docker save` format, which
# `ctr -n k8s.io images import` loads: for the small static images the test
# cluster needs (pause, CoreDNS, busybox) without a registry or a Docker engine.
#
#   image-archive.sh OUT.tar REF ROOTFS_DIR ENTRYPOINT_JSON [USER]
#
# REF is the image's name:tag (never :latest, so kubelet's IfNotPresent applies);
# ENTRYPOINT_JSON e.g. '["/pause"]'. The layer is reproducible: sorted, owned by
# root, every mtime the epoch.
set -euo pipefail

out="$1" ref="$2" rootfs="$3" entrypoint="$4" user="${5:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "$rootfs" -cf "$work/layer.tar" .
layer_sha="$(sha256sum "$work/layer.tar" | cut -d' ' -f1)"
mkdir "$work/$layer_sha"
mv "$work/layer.tar" "$work/$layer_sha/layer.tar"

user_field=""
[[ -n "$user" ]] && user_field="\"User\":\"$user\","
printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{%s"Env":["PATH=/bin"],"Entrypoint":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$user_field" "$entrypoint" "$layer_sha" >"$work/config.json"
config_sha="$(sha256sum "$work/config.json" | cut -d' ' -f1)"
mv "$work/config.json" "$work/$config_sha.json"
printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' \
  "$config_sha" "$ref" "$layer_sha" >"$work/manifest.json"

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "$work" -cf "$out.tmp" manifest.json "$config_sha.json" "$layer_sha"
mv "$out.tmp" "$out"
