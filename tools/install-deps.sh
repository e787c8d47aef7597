#!/usr/bin/env bash
# Installs what Paddock needs on a Debian 12 machine. Idempotent and quiet when everything is
# already present. Run as root, or with sudo available.
set -euo pipefail

pkgs=(build-essential cmake pkg-config git
      libczmq-dev libzmq3-dev libmsgpack-dev libraft-dev libuv1-dev libcmocka-dev libjansson-dev libglpk-dev
      libmicrohttpd-dev libhttp-parser-dev zlib1g-dev prometheus
      clang libclang-rt-14-dev clang-format iproute2 systemd procps python3 snakemake)
# zlib packs the RM's views (proto/pack.h); libmicrohttpd serves /metrics; prometheus (with promtool) is what tests/metrics scrapes with;
# python3 (standard library only) runs tools/deadline-eval; snakemake (Debian's 7.21, with its
# dependencies) runs tests/snakemake through clients/snakemake/paddock.
# Headless Chromium checks the rendered job reports; optional for building.
if [ "${PADDOCK_WITH_BROWSER:-1}" = 1 ]; then
    pkgs+=(chromium)
fi

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "paddock: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
