#!/usr/bin/env bash
# setup-peers.sh — install the peer libraries kgen-bench -tags peers compares against, on Debian
# (run as root or with sudo): OpenBLAS (pthread build, libopenblas.so.0 under openblas-pthread/)
# and BLIS (OpenMP build, libblis.so.4 under blis-openmp/), plus their headers (blis.h lists the
# arch_t configurations that BLIS_ARCH_TYPE numbers). Idempotent: installs only what is missing.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
libdir=/usr/lib/x86_64-linux-gnu
case "$(uname -m)" in
  aarch64) libdir=/usr/lib/aarch64-linux-gnu ;;
esac
need=()
[ -e "$libdir/openblas-pthread/libopenblas.so.0" ] || need+=(libopenblas0-pthread)
[ -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] || [ -e /usr/include/aarch64-linux-gnu/openblas-pthread/cblas.h ] || need+=(libopenblas-pthread-dev)
[ -e "$libdir/blis-openmp/libblis.so.4" ] || need+=(libblis4-openmp)
[ -e /usr/include/blis/blis.h ] || need+=(libblis-openmp-dev)
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
for f in "$libdir/openblas-pthread/libopenblas.so.0" "$libdir/blis-openmp/libblis.so.4"; do
  [ -e "$f" ] || { echo "setup-peers: $f is missing after the install" >&2; exit 1; }
done
echo "setup-peers: ok (OpenBLAS: $libdir/openblas-pthread, BLIS: $libdir/blis-openmp)"
