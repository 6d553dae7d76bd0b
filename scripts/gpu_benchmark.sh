#!/usr/bin/env bash
# The SFT throughput benchmark on one H200, as one prepared run (docs/training.md, "Throughput on a GPU").
#
#   bash scripts/gpu_benchmark.sh fetch    # here, once: the wheels below into .whl/ (ignored), with their sizes
#   bash scripts/gpu_benchmark.sh          # on the GPU machine: install .whl/, run SETTINGS, results to $OUT
#
# The device call: carry [".whl", "runs/demo/sft"], timeout_s 600, command "bash scripts/gpu_benchmark.sh".
# The machine has python 3.12, torch 2.11 + CUDA 13, transformers 5.17, accelerate, peft, triton; the
# wheels are what MS-SWIFT's template and packing import and the image lacks, plus Liger (16.5 MiB together;
# with the demo export, about 20 MiB of the 64 MiB a call may carry).
# Dropped: flash-attn. It has no binary wheel on PyPI (building it there takes hours), and flash-attn-4
# needs nvidia-cutlass-dsl-libs-cu13, a 92 MB wheel, over the limit alone. FlexAttention (in torch) is the
# block-skipping kernel we have; sdpa builds a full mask over the pack.
set -euo pipefail

WHEELS=(
  ms-swift==4.6.0 datasets==4.8.4 multiprocess==0.70.19 dill==0.4.1 modelscope==1.40.2 modelscope-hub==0.5.1
  cryptography==50.0.2 cffi==2.1.1 json-repair==0.64.6 binpacking==2.0.1 pydantic==2.14.4 pydantic-core==2.50.5
  annotated-types==0.8.0 typing-inspection==0.4.5 liger-kernel==0.8.5
)
# Most important first; each gets what is left of BUDGET_S. 8 of the 40 layers: one H200 holds them with
# AdamW at 51,200 tokens, and MFU per layer is what carries over to 8 GPUs with ZeRO-3.
SETTINGS=(
  "sdpa-liger-51200:--layers 8 --max-length 51200 --attn sdpa --liger"
  "flex-liger-51200:--layers 8 --max-length 51200 --attn flex --liger"
  "sdpa-liger-32768:--layers 8 --max-length 32768 --attn sdpa --liger"
  "sdpa-51200:--layers 8 --max-length 51200 --attn sdpa --no-liger"
)
BUDGET_S=${BUDGET_S:-540}  # 9 minutes of the 10 a device call may run
DATA=${DATA:-runs/demo/sft}
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "fetch" ]]; then
  platforms=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]/#/--platform=}" -d .whl "${WHEELS[@]}"
  ls -l .whl
  du -ch .whl/*.whl "$DATA" | tail -1
  exit 0
fi

: "${OUT:?set OUT to the folder for the results (the device machine sets it)}"
[[ -f "$DATA/train.jsonl" ]] || { echo "no export at $DATA: carry it (python -m pipeline.synthesize run.name=demo limit=8 makes it)"; exit 2; }
exec > >(tee "$OUT/log.txt") 2>&1
start=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
for setting in "${SETTINGS[@]}"; do
  name=${setting%%:*}
  left=$((BUDGET_S - (SECONDS - start)))
  if ((left < 60)); then echo "# $name: skipped, ${left} s of the budget left"; continue; fi
  echo "# $name (${left} s left)"
  # shellcheck disable=SC2086  # the options are words
  timeout "$left" python3 -m benchmarks.sft_throughput --size full --data "$DATA" --steps 5 --warmup 2 \
    ${setting#*:} --json "$OUT/$name.json" 2>&1 | grep -v -E "^\[INFO:swift\]|Warning" || echo "# $name: failed or timed out"
done
shopt -s nullglob
results=("$OUT"/*.json)
((${#results[@]})) || { echo "no setting finished"; exit 1; }
python3 -m benchmarks.sft.report "${results[@]}" | tee "$OUT/table.md"
