"""Check a DPO or KTO export with MS-SWIFT as `swift rlhf` reads it (train/validate.py calls this for such files).

Beyond the SFT checks (placeholders against images, files present, the strict loader), each row is encoded by the
template in the mode `swift rlhf` sets (`rlhf` for DPO, `kto` for KTO, with train.sft's loss scale and
preserve_thinking: train.config.RLHF_ARGS), and each side's token ids must equal the SFT encoding of the same
messages, the sequence train.parity checked against the teacher's request. MS-SWIFT accepts some wrong rows without
a word, so they are refused here: a DPO row without `rejected_images`/`rejected_tools` (MS-SWIFT does not take the
chosen side's), sides whose prompts differ before the first trained token or whose trained tokens are equal, a side
with nothing trained, a KTO `label` that is not a bool.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from core.seams.tokens import TokenCount
from train.config import RLHF_ARGS, RLHF_MODE, Method
from train.samples import IMAGE_TAG
from train.tokens import LOSS_SCALE, TemplateCounter


class Report(Protocol):
    problems: list[str]
    counts: list[TokenCount]
    images_per_row: list[int]


def row_method(row: dict[str, Any]) -> Method:
    """What a row is for: DPO (a rejected side), KTO (a label), else SFT."""
    if "rejected_messages" in row:
        return Method.dpo
    return Method.kto if "label" in row else Method.sft


def check_preference_row(number: int, row: dict[str, Any], method: Method) -> list[str]:
    """What MS-SWIFT would load without complaint and train wrong."""
    if method is Method.kto:
        return [] if isinstance(row.get("label"), bool) else [f"line {number}: label {row.get('label')!r} is not a bool"]
    rejected = row.get("rejected_messages") or []
    tags = sum(str(m.get("content", "")).count(IMAGE_TAG) for m in rejected)
    problems = []
    if "rejected_images" not in row or tags != len(row["rejected_images"]):
        problems.append(
            f"line {number}: {tags} {IMAGE_TAG} placeholders in rejected_messages, rejected_images {row.get('rejected_images')!r}"
        )
    if row.get("tools") and not row.get("rejected_tools"):
        problems.append(f"line {number}: tools without rejected_tools: the rejected side would be shown no tools")
    return problems


def rlhf_template(counter: TemplateCounter, method: Method) -> Any:
    """The template as `swift rlhf` sets it up for `method` (a copy of the counter's, in its mode and loss scale)."""
    from swift import get_template

    args = RLHF_ARGS[method]
    suffix = LOSS_SCALE.partition("+")[2]  # the hybrid-thinking suffix MS-SWIFT appends for GLM, as for SFT
    template = get_template(
        counter.processor,
        template_type=counter.template_type,
        agent_template=counter.agent_template,
        loss_scale=f"{args['loss_scale']}+{suffix}",
        preserve_thinking=args["preserve_thinking"],
    )
    template.set_mode(RLHF_MODE[method])
    template.max_length = None
    return template


def _side(row: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {"tools": row.get(f"{prefix}tools"), "messages": row[f"{prefix}messages"], "images": row.get(f"{prefix}images") or []}


def encode_preference_rows(rows: list[dict[str, Any]], counter: TemplateCounter, method: Method, report: Report) -> None:
    template = rlhf_template(counter, method)
    image_id = counter.image_token_id
    for number, row in enumerate(rows, 1):
        try:
            encoded = template.encode(copy.deepcopy(row))
        except Exception as exc:  # noqa: BLE001 - the template raises anything; the row is named
            report.problems.append(f"row {number}: the template could not encode it: {type(exc).__name__}: {exc}")
            continue
        sides = [("chosen", "")] + ([("rejected", "rejected_")] if method is Method.dpo else [])
        trained: dict[str, list[int]] = {}
        prompts: dict[str, list[int]] = {}
        for side, prefix in sides:
            ids, labels = list(encoded[f"{side}_input_ids"]), list(encoded[f"{side}_labels"])
            trained[side] = [i for i, label in zip(ids, labels) if label != -100]
            prompts[side] = ids[: next((k for k, label in enumerate(labels) if label != -100), len(ids))]
            plain = _side(row, prefix)
            report.counts.append(TokenCount(len(ids), len(trained[side]), ids.count(image_id)))
            report.images_per_row.append(len(plain["images"]))
            if not trained[side]:
                report.problems.append(f"row {number}: nothing trained on the {side} side")
            if list(counter.encode(plain)["input_ids"]) != ids:
                report.problems.append(f"row {number}: the {side} side encodes otherwise than the SFT template encodes it")
        if method is Method.dpo and prompts["chosen"] != prompts["rejected"]:
            report.problems.append(f"row {number}: chosen and rejected differ before the first trained token")
        if method is Method.dpo and trained["chosen"] == trained["rejected"]:
            report.problems.append(f"row {number}: chosen and rejected train the same tokens")
