#!/usr/bin/env bash
# Full SFT on several Slurm nodes: one task per node, each runs `python -m train.sft`, which
# launches torchrun over the node's GPUs (MS-SWIFT reads NNODES / NODE_RANK / MASTER_ADDR / MASTER_PORT).
#   sbatch --nodes=2 scripts/launch_sft_slurm.sh run.name=my-run [more train.sft overrides]
#   sbatch --nodes=2 scripts/launch_sft_slurm.sh run.name=my-run --dry-run     # each node prints its command
# The repository (with its .venv) and the run directory must be on a filesystem every node sees.
#SBATCH --job-name=deckforge-sft
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
set -euo pipefail

REPO=${REPO:-${SLURM_SUBMIT_DIR:-$(pwd)}}
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
MASTER_ADDR=${MASTER_ADDR:-$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)}  # sed reads all: no SIGPIPE under pipefail
export MASTER_ADDR
export MASTER_PORT=${MASTER_PORT:-29500}
export NNODES=${SLURM_NNODES:?run this under sbatch or salloc}
export NPROC_PER_NODE=${NPROC_PER_NODE:-8}

cd "$REPO"
# SLURM_NODEID is set per node by srun, so NODE_RANK is read inside the task.
srun --ntasks-per-node=1 bash -c 'NODE_RANK=$SLURM_NODEID exec "$0" -m train.sft "$@"' "$PYTHON" "$@"
