#!/usr/bin/env bash
# Serve GLM-4.6V-Flash (or any model) with vLLM's OpenAI-compatible server, on a GPU machine.
# vLLM lives in its own venv (.venv-vllm): it pins torch/transformers versions that
# clash with MS-SWIFT, and the pipeline only talks to it over HTTP.
#
#   scripts/serve_vllm.sh                                  # zai-org/GLM-4.6V-Flash on port 8000
#   MODEL=/ckpt/checkpoint-500 SERVED_NAME=glm-sft TP=2 scripts/serve_vllm.sh
#   python -m pipeline.synthesize llm=vllm llm.base_url=http://HOST:8000/v1 llm.model=glm-sft
#
# Environment: MODEL, SERVED_NAME, PORT (8000), TP (tensor parallel, 1), MAX_LEN (65536),
# MAX_IMAGES (64 per prompt), GPU_UTIL (0.9), VLLM_VERSION (0.33.0), VENV (.venv-vllm),
# VLLM_API_KEY (optional; clients send it from the env var named by llm.api_key_env),
# MAX_NUM_SEQS (requests in one batch: --max-num-seqs; vLLM's default if unset),
# MAX_QUEUED (requests in flight, waiting and running, before vLLM answers 503: --max-num-queued-reqs;
# unbounded if unset).
#
# A fleet: run this on each GPU host and give the pipeline every replica, e.g.
#   python -m pipeline.synthesize llm=vllm llm.base_url=[http://gpu1:8000/v1,http://gpu2:8000/v1] llm.admission=metrics
# The client's admission (core/llm/fleet.py) holds each replica's calls under a limit it learns: it grows while calls
# succeed and is cut by each burst of 503s, so set MAX_QUEUED (about 2 x MAX_NUM_SEQS: a full batch plus as many
# waiting) to have vLLM refuse before its queue grows without bound; and vLLM renders a multimodal request before it
# refuses it, so refusals cost it seconds each: llm.admission=metrics keeps them rare by reading this server's
# /metrics (vllm:num_requests_waiting, vllm:kv_cache_usage_perc; served by default) and holding llm.target_queue
# requests waiting. llm.max_concurrency (64 for llm=vllm) caps the limit per replica for the whole run.
set -euo pipefail

MODEL=${MODEL:-zai-org/GLM-4.6V-Flash}
SERVED_NAME=${SERVED_NAME:-$MODEL}
PORT=${PORT:-8000}
TP=${TP:-1}
MAX_LEN=${MAX_LEN:-65536}
MAX_IMAGES=${MAX_IMAGES:-64}
GPU_UTIL=${GPU_UTIL:-0.9}
VLLM_VERSION=${VLLM_VERSION:-0.33.0}
VENV=${VENV:-.venv-vllm}

if [ ! -x "$VENV/bin/vllm" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -U pip
  "$VENV/bin/pip" install -q "vllm==$VLLM_VERSION"
fi

args=(
  serve "$MODEL"
  --served-model-name "$SERVED_NAME"
  --port "$PORT"
  --tensor-parallel-size "$TP"
  --max-model-len "$MAX_LEN"
  --gpu-memory-utilization "$GPU_UTIL"
  --limit-mm-per-prompt "{\"image\": $MAX_IMAGES}"
  --enable-auto-tool-choice
  --tool-call-parser glm45
  --reasoning-parser glm45
)
[ -n "${VLLM_API_KEY:-}" ] && args+=(--api-key "$VLLM_API_KEY")
[ -n "${MAX_NUM_SEQS:-}" ] && args+=(--max-num-seqs "$MAX_NUM_SEQS")
[ -n "${MAX_QUEUED:-}" ] && args+=(--max-num-queued-reqs "$MAX_QUEUED")
exec "$VENV/bin/vllm" "${args[@]}" "$@"
