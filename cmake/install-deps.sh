#!/usr/bin/env bash
# Installs every Debian package simmer needs, only those missing. Idempotent; safe to rerun.
# Usage: cmake/install-deps.sh [--with-slurm] [--with-fuzz]
#   --with-slurm  slurm-wlm + munge, for the job-script test
#   --with-fuzz   clang 14 and its compiler-rt (libFuzzer, sanitizers), for tests/fuzz/run_fuzz.sh
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin
  libeigen3-dev
  libboost-program-options-dev
  zlib1g-dev
  libhdf5-openmpi-dev hdf5-tools
  catch2
  libbenchmark-dev
  python3-h5py python3-xarray python3-netcdf4 python3-numpy python3-scipy python3-matplotlib python3-pytest
  dataset-fashion-mnist
)
for arg in "$@"; do
  case "$arg" in
    --with-slurm) packages+=(slurm-wlm munge) ;;
    --with-fuzz) packages+=(clang libclang-rt-14-dev) ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
