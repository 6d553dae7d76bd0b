"""Check an exported JSONL with the real consumer: MS-SWIFT's loader (strict), then its template.

1. every line is a JSON object whose `<image>` placeholders match its `images`, and
   every image file exists (relative paths resolve against the file's folder);
2. `swift.load_dataset(..., strict=True)` loads every row (it raises on a malformed one);
3. with local processor files (`model_dir`), every row is encoded by the GLM-4.6V-Flash
   template as `swift sft` will: token lengths, image tokens (each image must expand to
   many tokens) and the share of tokens that carry loss. Without them the encode step
   is skipped, and the report says so;
4. with the glm4_5 agent template, each encoded row's labels against its messages
   (train/labels.py): tool-calling turns end with a trained `<|observation|>`, system,
   user and tool turns and images carry no loss, `"loss": false` messages none either.
A DPO or KTO file (rows with `rejected_messages`, or a `label`) is encoded as `swift rlhf` reads it instead
(train/validate_preference.py).
"""

from __future__ import annotations

import importlib.util
import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from core.seams.tokens import TokenCount
from train.config import SWIFT_TEMPLATE, Method
from train.labels import check_labels
from train.samples import IMAGE_TAG
from train.tokens import TemplateCounter, has_processor, image_root
from train.validate_preference import check_preference_row, encode_preference_rows, row_method


class ValidationError(RuntimeError):
    """MS-SWIFT could not load the file."""


@dataclass
class ValidationReport:
    path: Path
    rows: int = 0
    images: int = 0
    loaded: int = 0
    loader: str = ""  # what MS-SWIFT's loader said, or why it did not run
    encode: str = ""  # how rows were encoded, or why they were not
    counts: list[TokenCount] = field(default_factory=list)
    images_per_row: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    labels: Counter[bool] = field(default_factory=Counter)  # KTO rows by label
    pairs: int = 0  # DPO rows

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        lines = [f"{self.path}: {self.rows} rows, {self.images} images; MS-SWIFT loader (strict): {self.loader}"]
        if self.counts:
            totals = [c.total for c in self.counts]
            trained = sum(c.trained for c in self.counts)
            lines += [
                f"encoded with {self.encode}",
                (
                    f"tokens per sample: min {min(totals):,}, median {round(statistics.median(totals)):,}, max {max(totals):,}; "
                    f"total {sum(totals):,}"
                ),
                (
                    f"trained-token share: {trained / sum(totals):.1%}; image tokens: {sum(c.image_tokens for c in self.counts):,} "
                    f"for {self.images} images"
                ),
                f"images per sample: min {min(self.images_per_row)}, max {max(self.images_per_row)}",
            ]
        else:
            lines.append(f"encode step skipped: {self.encode}")
        if self.pairs:
            lines.append(f"DPO pairs: {self.pairs}")
        if self.labels:
            lines.append(f"KTO labels: {self.labels[True]} desirable, {self.labels[False]} undesirable")
        lines += [f"PROBLEM: {p}" for p in self.problems]
        lines.append("OK" if self.ok else "FAILED")
        return "\n".join(lines)


def check_rows(path: Path, report: ValidationReport) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            report.problems.append(f"line {number}: not JSON ({exc})")
            continue
        rows.append(row)
        images = row.get("images") or []
        tags = sum(str(m.get("content", "")).count(IMAGE_TAG) for m in row.get("messages", []))
        if tags != len(images):
            report.problems.append(f"line {number}: {tags} {IMAGE_TAG} placeholders for {len(images)} images")
        method = row_method(row)
        if method is not Method.sft:
            report.problems += check_preference_row(number, row, method)
            report.pairs += method is Method.dpo
            if method is Method.kto:
                report.labels[row.get("label") is True] += 1
            images = images + (row.get("rejected_images") or [])
        missing = [p for p in images if not (path.parent / p).is_file()]
        if missing:
            report.problems.append(f"line {number}: missing image file(s) {missing[:3]}")
        report.images += len(images)
    report.rows = len(rows)
    return rows


def load_with_swift(path: Path) -> list[dict[str, Any]]:
    from swift import load_dataset

    try:
        train, _ = load_dataset([str(path)], strict=True, load_from_cache_file=False)
    except Exception as exc:  # noqa: BLE001 - MS-SWIFT raises whatever its preprocessors raise; re-raised with the file
        raise ValidationError(f"MS-SWIFT's loader rejected {path}: {type(exc).__name__}: {exc}") from exc
    return list(train)


def encode_rows(rows: list[dict[str, Any]], counter: TemplateCounter, report: ValidationReport, labels: bool = True) -> None:
    """Encode each row; with `labels`, check which tokens carry loss against its messages (train/labels.py)."""
    for number, row in enumerate(rows, 1):
        n_images = len(row.get("images") or [])
        try:
            encoded = counter.encode(row)
            count = counter.count_encoded(encoded)
        except Exception as exc:  # noqa: BLE001 - the template raises anything; the row is named
            report.problems.append(f"row {number}: the template could not encode it: {type(exc).__name__}: {exc}")
            continue
        if n_images and count.image_tokens <= n_images:
            report.problems.append(
                f"row {number}: {n_images} images gave {count.image_tokens} image tokens: not expanded "
                "(does the tokenizer's <|image|> id match the template's?)"
            )
        if labels:
            report.problems += [f"row {number}: {p}" for p in check_labels(encoded, row, counter.template.tokenizer)]
        report.counts.append(count)
        report.images_per_row.append(n_images)


def validate_file(
    path: Path,
    model_dir: Optional[str] = None,
    template: str = SWIFT_TEMPLATE,
    agent_template: str = "glm4_5",
    expect: Optional[Method] = None,
) -> ValidationReport:
    """Check the file (its rows' kind, SFT, DPO or KTO, read from its first row; `expect` names the one it must be)."""
    path = Path(path).resolve()
    report = ValidationReport(path)
    if not path.is_file():
        report.problems.append("no such file")
        return report
    rows = check_rows(path, report)
    found = row_method(rows[0]) if rows else None
    if expect is not None and found not in (None, expect):
        report.problems.append(f"its rows are {found.value} data, not {expect.value} (train.method={expect.value})")
    if report.rows == 0:
        report.loader = report.encode = "skipped: the file is empty"
        return report
    if importlib.util.find_spec("swift") is None:
        report.loader = report.encode = "skipped: MS-SWIFT (the train extra) is not installed"
        return report
    with image_root(path.parent):
        try:
            loaded = load_with_swift(path)
        except ValidationError as exc:
            report.loader = "failed"
            report.problems.append(str(exc))
            return report
        report.loaded = len(loaded)
        report.loader = f"{report.loaded} of {report.rows} rows loaded"
        if report.loaded != report.rows:
            report.problems.append(f"the loader kept {report.loaded} of {report.rows} rows")
        if not has_processor(model_dir):
            report.encode = f"no processor files {'in ' + str(model_dir) if model_dir else '(pass --model-dir DIR)'}"
            return report
        counter = TemplateCounter(model_dir, template, agent_template)
        method = row_method(loaded[0])
        if method is not Method.sft:
            report.encode = (
                f"{counter.method}; in `swift rlhf --rlhf_type {method.value}`'s mode, each side against the SFT encoding"
            )
            encode_preference_rows(loaded, counter, method, report)
            return report
        labels = agent_template == "glm4_5"  # the role-token layout train/labels.py reads
        report.encode = f"{counter.method}; labels {'checked against the messages' if labels else 'not checked (glm4_5 only)'}"
        encode_rows(loaded, counter, report, labels)
    return report
