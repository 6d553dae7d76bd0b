"""PresentBench's released cases as Tasks with checklists, their scoring and their summary table.

The layout (PresentBench/PresentBench at e70ff01, data from `python scripts/download_data.py`):
`<root>/<domain>/<source>/<case>/` holds the source material (`material.md|pdf`, or `material_1`,
`material_2`, ...; `.md` preferred) and `generation_task/{instructions.md,judge_prompt.json}`; each
domain holds `common_judge_prompt.json` and `judge_weights.yaml`. A case's judge prompt is merged
with its domain's key by key (the case's value wins, lists are never joined), as their
`load_judge_prompt` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any, Iterable

import yaml

from core.config import ConfigError
from core.language import detect_language
from core.records import Check, CheckClass, Constraints, Task
from eval.checklist.score import ClassScore, rule_constraints, score_checklist

SLIDE_COUNT = "utils.count_pages.check_slide_count"  # the one code-judged check the cases use
DOMAINS = ("academia", "advertising", "education", "economics", "talk")  # their table's column order
LAYOUT = (
    "<domain>/<source>/<case>/generation_task/instructions.md and judge_prompt.json, "
    "with <domain>/common_judge_prompt.json and <domain>/judge_weights.yaml"
)


@dataclass(frozen=True)
class _Class:
    """One of PresentBench's five checklists, named as judge_prompt.json and judge_weights.yaml name it."""

    section: str  # material_independent | material_dependent: the prefix and the weights' section
    number: str  # the class's number in its section
    cls: CheckClass

    @property
    def key(self) -> str:
        return f"{self.section}_checklist_{self.number}"

    @property
    def prefix_key(self) -> str:
        return f"{self.section}_prefix"

    @property
    def tag(self) -> str:
        """The stem of its check ids: MI1 for MI1.1, MI1.2, ..."""
        return ("MI" if self.section == "material_independent" else "MD") + self.number


CLASSES = (
    _Class("material_independent", "1", CheckClass.fundamentals),
    _Class("material_independent", "2", CheckClass.visual_design),
    _Class("material_dependent", "1", CheckClass.completeness),
    _Class("material_dependent", "2", CheckClass.correctness),
    _Class("material_dependent", "3", CheckClass.fidelity),
)


@dataclass(frozen=True)
class BenchCase:
    case_id: str  # <domain>/<source>/<case>
    domain: str
    task: Task
    weights: dict[str, float]  # CheckClass value -> the class's weight
    total: float | None  # judge_weights.yaml's `total`, where it gives one


@dataclass(frozen=True)
class CaseScore:
    case_id: str
    domain: str
    classes: dict[str, ClassScore]  # CheckClass value -> its counts and score
    percent: float | None  # None when no class has a score


# ---------------------------------------------------------------- reading


def read_cases(root: Path) -> list[BenchCase]:
    """Every case under `root`, in path order; ConfigError when there is none or one is malformed."""
    if not root.is_dir():
        raise ConfigError(f"{root}: not a folder; a PresentBench data root holds {LAYOUT}")
    cases = [case for domain in _folders(root, root.iterdir()) for case in _domain_cases(root, domain)]
    if not cases:
        raise ConfigError(f"{root}: no PresentBench case found; expected {LAYOUT}")
    return cases


def _domain_cases(root: Path, domain: Path) -> list[BenchCase]:
    folders = _folders(domain, [case.parent.parent for case in domain.glob("*/*/generation_task/instructions.md")])
    if not folders:
        return []
    common = _read_json(domain / "common_judge_prompt.json")
    weights, total = _read_weights(domain / "judge_weights.yaml")
    return [_case(root, folder, common, weights, total) for folder in folders]


def _folders(base: Path, paths: Iterable[Path]) -> list[Path]:
    """The folders among `paths`, sorted, but hidden or dunder ones below `base` (.git, __pycache__), as their walker skips them."""
    return sorted(p for p in paths if p.is_dir() and not any(part.startswith((".", "__")) for part in p.relative_to(base).parts))


def _case(root: Path, folder: Path, common: dict[str, Any], weights: dict[str, float], total: float | None) -> BenchCase:
    case_id = folder.relative_to(root).as_posix()
    common_path = folder.parent.parent / "common_judge_prompt.json"
    checklist = _checklist(folder / "generation_task" / "judge_prompt.json", common_path, common)
    instruction = (folder / "generation_task" / "instructions.md").read_text(encoding="utf-8").strip()
    task = Task(
        task_id=case_id.replace("/", "__"),
        source="presentbench",
        instruction=instruction,
        language=_language(instruction),
        attachments=tuple(str(p.resolve()) for p in _materials(folder)),
        constraints=_constraints(checklist),
        provenance={"benchmark": "PresentBench", "case": case_id},
        checklist=checklist,
        checklist_by=f"PresentBench judge_prompt.json ({case_id})",
    )
    return BenchCase(case_id, folder.parent.parent.name, task, weights, total)


def _read_object(path: Path, missing: str, shape: str) -> dict[str, Any]:
    """The JSON or YAML object at `path`; ConfigError saying what is `missing` or what `shape` it must have."""
    if not path.is_file():
        raise ConfigError(f"{path}: missing; {missing}")
    text = path.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid {'YAML' if path.suffix == '.yaml' else 'JSON'} ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be {shape}")
    return data


def _read_json(path: Path) -> dict[str, Any]:
    return _read_object(path, f"a PresentBench data root holds {LAYOUT}", "a JSON object of prefixes and checklists")


def _read_weights(path: Path) -> tuple[dict[str, float], float | None]:
    """Class weights by CheckClass value, and the optional `total`."""
    data = _read_object(
        path,
        "each PresentBench domain has the class weights in judge_weights.yaml",
        "a mapping of material_independent and material_dependent to class weights",
    )
    weights = {}
    for c in CLASSES:
        section = data.get(c.section)
        found = {str(k): v for k, v in section.items()} if isinstance(section, dict) else {}
        if not isinstance(found.get(c.number), (int, float)):
            raise ConfigError(f"{path}: {c.section} has no numeric weight for class '{c.number}'")
        weights[c.cls.value] = float(found[c.number])
    total = data.get("total")
    if total is not None and not isinstance(total, (int, float)):
        raise ConfigError(f"{path}: total must be a number, got {total!r}")
    return weights, None if total is None else float(total)


def _materials(folder: Path) -> list[Path]:
    """material.md|pdf, then material_1, material_2, ... up to the first gap (.md before .pdf), as their loader finds them."""
    found = [p for p in (_first(folder, "material"),) if p is not None]
    index = 1
    while (path := _first(folder, f"material_{index}")) is not None:
        found.append(path)
        index += 1
    if not found:
        raise ConfigError(f"{folder}: no source material (material.md, material.pdf or material_1.md|pdf ...)")
    return found


def _first(folder: Path, stem: str) -> Path | None:
    return next((p for p in (folder / f"{stem}.md", folder / f"{stem}.pdf") if p.is_file()), None)


def _language(text: str) -> str:
    lang = detect_language(text).lang
    return "en" if lang == "unknown" else lang


# ---------------------------------------------------------------- the checklist


def _checklist(case_path: Path, common_path: Path, common: dict[str, Any]) -> tuple[Check, ...]:
    """The merged checklist: each key from the case's file if it has it, else from the domain's."""
    case = _read_json(case_path)

    def merged(key: str, kind: type) -> tuple[Any, Path]:
        value, path = (case[key], case_path) if key in case else (common.get(key), common_path)
        if not isinstance(value, kind):
            raise ConfigError(f"{path}: {key} must be a {kind.__name__} (in {case_path} or {common_path})")
        return value, path

    checks = []
    for c in CLASSES:
        prefix, _ = merged(c.prefix_key, str)
        items, path = merged(c.key, list)
        checks += [_check(f"{c.tag}.{i}", c.cls, prefix, item, path, c.key) for i, item in enumerate(items, start=1)]
    return tuple(checks)


def _check(check_id: str, cls: CheckClass, prefix: str, item: Any, path: Path, key: str) -> Check:
    if isinstance(item, str):
        return Check(check_id, cls.value, prefix + item)
    if not isinstance(item, dict):
        raise ConfigError(f"{path}: {key} item {check_id} must be a question or a code-judged check, got {item!r}")
    func = item.get("func", item.get("callable"))
    if item.get("__type__") != "partial" or func != SLIDE_COUNT:
        raise ConfigError(f"{path}: {key} item {check_id}: unknown code-judged check {func!r} (known: {SLIDE_COUNT} partial)")
    low, high = _slide_range(item, path, check_id)
    return Check(check_id, cls.value, f"The deck has between {low} and {high} slides.", f"slides:{low}-{high}")


def _slide_range(item: dict[str, Any], path: Path, check_id: str) -> tuple[int, int]:
    bound = dict(zip(("min_count", "max_count"), item.get("args") or [])) | (item.get("keywords") or {})
    low, high = bound.get("min_count"), bound.get("max_count")
    if not (isinstance(low, int) and isinstance(high, int) and 0 < low <= high):
        raise ConfigError(f"{path}: {check_id}: {SLIDE_COUNT} needs 0 < min_count <= max_count, got {item!r}")
    return low, high


def _constraints(checklist: tuple[Check, ...]) -> Constraints:
    """The slide range of the case's slide-count check, its one constraint."""
    rule = next((c.rule for c in checklist if c.rule.startswith("slides:")), "")
    return rule_constraints(rule) or Constraints()


# ---------------------------------------------------------------- scoring


def score_case(case: BenchCase, answers: dict[str, str], slides: int) -> CaseScore:
    """A deck's score on `case` (eval.checklist.score: weight x yes / (yes + no) per class, "not applicable" left out)."""
    scored = score_checklist(case.case_id, case.task.checklist, answers, slides, case.weights, case.total)
    return CaseScore(case.case_id, case.domain, scored.classes, scored.percent)


# ---------------------------------------------------------------- the summary


def summary_table(scores: list[CaseScore]) -> str:
    """Their scorer's printed table: each case's percent averaged over all cases and per domain, `N/A` where none."""
    header = "Type".ljust(10) + "".join(f"{name:>12}" for name in ("Total", *DOMAINS))
    cells = [_mean(scores)] + [_mean([s for s in scores if s.domain == domain]) for domain in DOMAINS]
    row = "Arithmetic".ljust(10) + "".join("{:>12}".format("N/A" if v is None else f"{v:.4f}") for v in cells)
    return "\n".join([header, "-" * len(header), row]) + "\n"


def _mean(scores: list[CaseScore]) -> float | None:
    values = [s.percent for s in scores if s.percent is not None]
    return mean(values) if values else None
