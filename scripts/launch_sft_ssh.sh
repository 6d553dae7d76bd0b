#!/usr/bin/env bash
# Full SFT on several nodes over SSH: starts `python -m train.sft` on every host, node 0 first
# in HOSTS and the rendezvous point (MASTER_ADDR). Each host needs passwordless SSH, this
# repository with its .venv at the same path, and the run directory on a shared filesystem.
#   HOSTS="gpu0 gpu1" scripts/launch_sft_ssh.sh run.name=my-run [more train.sft overrides]
#   HOSTS="gpu0 gpu1" scripts/launch_sft_ssh.sh run.name=my-run --dry-run   # each node prints its command
# Output lines are prefixed with the host; the script fails if any node fails.
set -euo pipefail

read -r -a hosts <<< "${HOSTS:?set HOSTS=\"host0 host1 ...\"}"
REPO=${REPO:-$(cd "$(dirname "$0")/.." && pwd)}
MASTER_ADDR=${MASTER_ADDR:-${hosts[0]}}
MASTER_PORT=${MASTER_PORT:-29500}
NPROC_PER_NODE=${NPROC_PER_NODE:-8}
overrides=$(printf ' %q' "$@")

pids=()
for rank in "${!hosts[@]}"; do
  host=${hosts[$rank]}
  env="NNODES=${#hosts[@]} NODE_RANK=$rank MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT NPROC_PER_NODE=$NPROC_PER_NODE"
  (ssh -o BatchMode=yes "$host" "cd $(printf %q "$REPO") && $env .venv/bin/python -m train.sft$overrides" 2>&1 \
    | sed -u "s/^/[$host] /") &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit $status
