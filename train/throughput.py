"""The paper's training run, and the training throughput the dataset card's estimate assumes.

The paper fine-tunes GLM-4.6V-Flash on 802 accepted trajectories for 5 epochs in about
80 GPU-hours on 8 A800s. At the ~60K tokens per rollout that `python -m benchmarks.packing`
finds on its synthetic export, that is about 830 tokens/s per GPU. No GPU has measured
this project's setting yet: `scripts/gpu_benchmark.sh` (docs/training.md, "Throughput on
a GPU") does; put its tokens/s/GPU here, with where it came from, once it has run.
"""

PAPER_ROLLOUTS = 802
PAPER_EPOCHS = 5
PAPER_GPUS = 8
PAPER_GPU_HOURS = 80  # on A800s

TOKENS_PER_S_PER_GPU = 830.0
TOKENS_PER_S_SOURCE = "implied by the paper's 80 A800 GPU-hours (no GPU measurement yet: docs/training.md)"
