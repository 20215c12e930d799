#!/usr/bin/env bash
# fetch-ptxas.sh DEST — put NVIDIA's ptxas, cuobjdump and nvdisasm (CUDA 12.4, the nvidia-cuda-toolkit
# package of Debian 13 "trixie", non-free) into DEST without changing the system's apt configuration: a
# private sources list and cache directory are used. CUDA 12.4 is PTX ISA 8.4 with targets up to sm_90a
# (the PTX backend's wgmma path); cuobjdump -sass shows the machine code the tests check (HGMMA).
set -euo pipefail
dest=${1:?usage: fetch-ptxas.sh DEST}
mkdir -p "$dest"
if [ -x "$dest/ptxas" ] && [ -x "$dest/cuobjdump" ] && [[ $("$dest/ptxas" --version) == *"release 12."* ]]; then exit 0; fi
uri=""; suite=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  suite=$(awk '/^Suites:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
[ -n "$uri" ] && [ -n "$suite" ] || { echo "fetch-ptxas: no Debian mirror configured" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri trixie non-free" > "$tmp/sources.list"
o=(-o "Dir::Etc::sourcelist=$tmp/sources.list" -o "Dir::Etc::sourceparts=-" -o "Dir::State::Lists=$tmp/lists"
   -o "Dir::Cache::archives=$tmp/archives" -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
apt-get "${o[@]}" -qq update
(cd "$tmp" && apt-get "${o[@]}" -qq download nvidia-cuda-toolkit)
dpkg-deb -x "$tmp"/nvidia-cuda-toolkit_*.deb "$tmp/x"
for tool in ptxas cuobjdump nvdisasm; do
  install -m 0755 "$tmp/x/usr/bin/$tool" "$dest/$tool"
done
"$dest/ptxas" --version | tail -1
