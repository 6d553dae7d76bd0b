"""`python -m train.sft`: full-parameter SFT of GLM-4.6V-Flash with MS-SWIFT on a run's export.

    python -m train.sft run.name=my-run                    # one node, 8 GPUs, DeepSpeed ZeRO-3
    python -m train.sft run.name=my-run --dry-run          # print the command, check the dataset
    NNODES=2 NODE_RANK=0 MASTER_ADDR=node0 python -m train.sft run.name=my-run   # on each node
    python -m train.sft model=tiny run.dir=/tmp/run        # a tiny random GLM-4V, a few steps on CPU
    python -m train.sft run.name=my-run --method dpo       # `swift rlhf` on <run>/dpo (or kto on <run>/kto)

See docs/training.md and scripts/launch_sft_{slurm,ssh}.sh.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import hydra
from omegaconf import DictConfig

from core.cli import InputError, main_prog, run_command
from core.config import PROJECT_ROOT, ConfigError, run_dir, to_typed
from core.llm.players import check_backends
from core.logs import setup_logging
from train.config import Method, ModelSpec, SFTConfig, store_schema, validate_sft
from train.launch import LaunchPlan, build_plan
from train.tokens import has_processor
from train.validate import validate_file

log = logging.getLogger(__name__)

DRY_RUN_FLAG = "--dry-run"
METHOD_FLAG = "--method"  # sft | dpo | kto: train.method


def ensure_model(model: ModelSpec, dry_run: bool) -> None:
    """A local model must exist; one with a build script is built on first use (not in a dry run)."""
    if model.hub != "local" or os.path.isdir(model.id):
        return
    if model.build_script is None:
        raise ConfigError(f"model.id={model.id!r} (model.hub=local) does not exist")
    command = [sys.executable, str(PROJECT_ROOT / model.build_script), model.id]
    if dry_run:
        print(f"# the model is missing; a real run first builds it: {' '.join(command)}")
        return
    subprocess.run(command, check=True)


def check_dataset(plan: LaunchPlan, model: ModelSpec, method: Method) -> bool:
    """Validate train.jsonl (and val.jsonl) with MS-SWIFT, as `method` reads it; False when it is missing or broken."""
    train = plan.dataset_dir / "train.jsonl"
    if not train.is_file():
        how = "" if method is Method.sft else f" --format {method.value}"
        print(f"# dataset missing: {train} (export it first: python -m train.export RUN_DIR{how})")
        return False
    model_dir = model.id if model.hub == "local" and has_processor(model.id) else None
    files = [train] + [f for f in [plan.dataset_dir / "val.jsonl"] if f.is_file() and f.stat().st_size]
    reports = [validate_file(f, model_dir, model.template, model.agent_template, method) for f in files]
    for report in reports:
        print("# dataset: " + report.summary().replace("\n", "\n# dataset: "))
    return all(r.ok for r in reports)


def main(cfg: DictConfig) -> int:
    validate_sft(cfg)
    check_backends(cfg)
    sft = to_typed(SFTConfig, cfg)
    root = run_dir(cfg)
    setup_logging(None if sft.train.dry_run else root / "logs" / "sft.log")
    plan = build_plan(sft, root)
    print(plan.render(), flush=True)
    ensure_model(sft.model, sft.train.dry_run)
    dataset_ok = check_dataset(plan, sft.model, Method(sft.train.method))
    if sft.train.dry_run:
        print("# dry run: nothing trained")
        return 0
    if not dataset_ok:
        raise InputError(f"the dataset in {plan.dataset_dir} is missing or invalid: not training")
    return subprocess.run(plan.argv, env={**os.environ, **plan.env}).returncode


@hydra.main(config_path="../configs", config_name="sft", version_base=None)
def _hydra_main(cfg: DictConfig) -> None:
    sys.exit(run_command(main_prog("python -m train.sft"), lambda: main(cfg)))


def hydra_argv(argv: list[str]) -> list[str]:
    """`--dry-run` and `--method X` (or `--method=X`) as the key=value overrides Hydra takes."""
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == DRY_RUN_FLAG:
            out.append("train.dry_run=true")
        elif arg == METHOD_FLAG:
            out.append(f"train.method={next(args, '')}")
        elif arg.startswith(METHOD_FLAG + "="):
            out.append(f"train.method={arg.partition('=')[2]}")
        else:
            out.append(arg)
    return out


if __name__ == "__main__":
    sys.argv = sys.argv[:1] + hydra_argv(sys.argv[1:])
    store_schema()  # configs/sft.yaml names it; Hydra composes when _hydra_main is called
    _hydra_main()
