#!/usr/bin/env bash
# The cluster engines the end-to-end tier starts for real: Slurm's daemons and client commands
# and munge (Debian's slurm-wlm and munge, as root through apt-get). Without root or apt-get it
# says what is missing, and the Slurm tests skip saying why.
set -euo pipefail
if command -v slurmctld >/dev/null && command -v munged >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
  echo "installed slurm-wlm and munge"
else
  echo "note: Slurm is not installed; the Slurm tests need, as root: apt-get install slurm-wlm munge" >&2
fi
