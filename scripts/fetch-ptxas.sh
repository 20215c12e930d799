#!/usr/bin/env bash
# fetch-ptxas.sh DEST — put NVIDIA's ptxas (CUDA 11.8, Debian non-free) into DEST without changing the
# system's apt configuration: a private sources list and cache directory are used.
set -euo pipefail
dest=${1:?usage: fetch-ptxas.sh DEST}
mkdir -p "$dest"
[ -x "$dest/ptxas" ] && exit 0
uri=""; suite=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  suite=$(awk '/^Suites:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
[ -n "$uri" ] && [ -n "$suite" ] || { echo "fetch-ptxas: no Debian mirror configured" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite non-free" > "$tmp/sources.list"
o=(-o "Dir::Etc::sourcelist=$tmp/sources.list" -o "Dir::Etc::sourceparts=-" -o "Dir::State::Lists=$tmp/lists"
   -o "Dir::Cache::archives=$tmp/archives" -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
apt-get "${o[@]}" -qq update
(cd "$tmp" && apt-get "${o[@]}" -qq download nvidia-cuda-toolkit)
dpkg-deb -x "$tmp"/nvidia-cuda-toolkit_*.deb "$tmp/x"
install -m 0755 "$tmp/x/usr/bin/ptxas" "$dest/ptxas"
"$dest/ptxas" --version | tail -1
