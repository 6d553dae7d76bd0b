"""Which tokens of an encoded sample carry loss, checked against the messages of its row.

MS-SWIFT's GLM templates render a row as segments, each opened by a role token:

    [gMASK]<sop><|system|>\n{tools}<|system|>\n{system}<|user|>\n{user}<|assistant|>\n{text}
    \n<tool_call>..</tool_call>\n<tool_call>..</tool_call><|observation|>\n<tool_response>\n{result}
    \n</tool_response>..<|assistant|>\n..{answer}<|user|>

The row's messages are grouped as the template merges them (the system prompt after the
tool descriptions; consecutive user messages; an assistant message with the `tool_call`
messages after it; consecutive tool responses), and group i is matched to segment i. GLM
ends an assistant turn with the next role token, so the `<|observation|>` (or `<|user|>`)
that opens the next segment is the turn's last token and must carry loss: a model not
trained on it does not learn to stop after its calls. Inside an assistant segment, each
`<tool_call>`..`</tool_call>` run is one `tool_call` message, in order, and the text before
the first is the assistant message's. Checked (label -100: no loss):
- system segments (tool descriptions included), user and tool response segments carry no
  loss, and `"loss": true` on such a message is refused: MS-SWIFT 4.6 applies per-message
  loss to assistant turns only, so the flag is silently dropped;
- `"loss": false` messages carry no trained token; other assistant text and every token
  of a tool call do; a tool-calling turn ends `</tool_call><|observation|>`, the
  `<|observation|>` trained unless the turn's last message has `"loss": false`;
- `<image>` placeholders equal `len(images)`, and the ids hold one `<|begin_of_image|>`,
  many `<|image|>`, `<|end_of_image|>` run per image, none trained.
A role token written in a message's text shifts the segments; that is reported, and the
row's spans are not checked further.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from train.samples import IMAGE_TAG

IGNORE = -100
ROLE_TOKENS = {"<|system|>": "system", "<|user|>": "user", "<|assistant|>": "assistant", "<|observation|>": "observation"}
KIND = {"system": "system", "user": "user", "assistant": "assistant", "tool_call": "assistant", "tool_response": "observation"}
KIND["tool"] = "observation"  # MS-SWIFT's alias of tool_response
OTHER_TOKENS = ("<tool_call>", "</tool_call>", "<|begin_of_image|>", "<|image|>", "<|end_of_image|>")
EMPTY_THINK = re.compile(r"<think>\s*</think>\s*")


@dataclass
class LabelledTurn:
    kind: str  # system | user | assistant | observation
    messages: list[int] = field(default_factory=list)  # indices into the row's messages


@dataclass(frozen=True)
class TokenSegment:
    kind: str
    start: int  # the role token
    end: int  # exclusive: the next role token, or the end of the ids


def _name(messages: Sequence[dict[str, Any]], indices: Sequence[int]) -> str:
    if not indices:
        return "the end of the sample"
    roles = sorted({messages[i]["role"] for i in indices})
    where = f"message {indices[0]}" if len(indices) == 1 else f"messages {indices[0]}-{indices[-1]}"
    return f"{where} ({', '.join(roles)})"


def expected_turns(row: dict[str, Any]) -> list[LabelledTurn]:
    """The role segments the template renders for the row's messages (unknown roles raise KeyError)."""
    turns: list[LabelledTurn] = []
    for i, message in enumerate(row["messages"]):
        kind = KIND[message["role"]]
        last = turns[-1] if turns else None
        if last is not None and last.kind == kind != "system":
            last.messages.append(i)
            continue
        if kind != "observation" and last is not None and last.kind == "assistant" and _calls(row, last):
            turns.append(LabelledTurn("observation"))  # the <|observation|> that ends a tool-calling turn, no response after it
        turns.append(LabelledTurn(kind, [i]))
    if turns and turns[-1].kind == "assistant" and _calls(row, turns[-1]):
        turns.append(LabelledTurn("observation"))
    if turns and turns[0].kind != "system" and has_tools(row):
        turns.insert(0, LabelledTurn("system"))  # the tool descriptions are a system prompt of their own
    return turns


def has_tools(row: dict[str, Any]) -> bool:
    tools = row.get("tools")
    return bool(json.loads(tools) if isinstance(tools, str) and tools.strip() else tools)


def _calls(row: dict[str, Any], turn: LabelledTurn) -> list[int]:
    return [i for i in turn.messages if row["messages"][i]["role"] == "tool_call"]


def segments(ids: Sequence[int], role_ids: dict[int, str]) -> list[TokenSegment]:
    """Role segments of the ids; the leading `<|system|>` ones (tools, then the system prompt) as one."""
    starts = [p for p, t in enumerate(ids) if t in role_ids]
    out: list[TokenSegment] = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(ids)
        kind = role_ids[ids[start]]
        if kind == "system" and out and out[-1].kind == "system" and len(out) == 1:
            out[-1] = TokenSegment("system", out[-1].start, end)
        else:
            out.append(TokenSegment(kind, start, end))
    return out


class LabelCheck:
    """Checks one encoded row; `problems` name the row's message indices."""

    def __init__(self, encoded: dict[str, Any], row: dict[str, Any], tokenizer: Any):
        self.ids: list[int] = list(encoded["input_ids"])
        self.labels: list[int] = list(encoded.get("labels") or [])
        self.row = row
        self.messages = row["messages"]
        self.tok = {name: tokenizer.convert_tokens_to_ids(name) for name in (*ROLE_TOKENS, *OTHER_TOKENS)}
        self.role_ids = {self.tok[name]: kind for name, kind in ROLE_TOKENS.items()}
        self.problems: list[str] = []

    def trained(self, start: int, end: int) -> int:
        return sum(1 for label in self.labels[start:end] if label != IGNORE)

    def is_trained(self, position: int) -> bool:
        return self.labels[position] != IGNORE

    def problem(self, indices: Sequence[int], what: str) -> None:
        self.problems.append(f"{_name(self.messages, indices)}: {what}")

    def run(self) -> list[str]:
        if len(self.labels) != len(self.ids):
            return ["the encoding has no labels (was the template in train mode?)"]
        if len(set(self.tok.values())) != len(self.tok) or None in self.tok.values():
            return ["the tokenizer lacks GLM's role tokens: the label checks are for the glm4_5 templates"]
        try:
            turns = expected_turns(self.row)
        except KeyError as exc:
            return [f"unknown role {exc}"]
        self.check_declared_loss()
        self.check_images()
        segs = segments(self.ids, self.role_ids)
        if segs and segs[0].start and self.trained(0, segs[0].start):
            self.problems.append(f"{self.trained(0, segs[0].start)} tokens before the first role token carry loss")
        if len(segs) == len(turns) + 1 and segs[-1].kind == "user" and segs[-1].end - segs[-1].start == 1:
            turns.append(LabelledTurn("user"))  # the <|user|> that ends a final answer (the template's suffix)
        for n, (seg, turn) in enumerate(zip(segs, turns)):
            if seg.kind != turn.kind:
                what = f"the ids hold <|{seg.kind}|> where the messages give a {turn.kind} turn"
                self.problem(turn.messages, what + " (a role token in the text of a message before it?)")
                return self.problems  # the spans no longer line up with the messages
            if turn.kind == "assistant":
                self.check_assistant(turn, seg, segs[n + 1] if n + 1 < len(segs) else None)
            else:
                self.check_untrained(turn, seg, ends_a_turn=n > 0 and turns[n - 1].kind == "assistant")
        if len(segs) != len(turns):
            extra = turns[len(segs)] if len(turns) > len(segs) else turns[-1]
            self.problem(extra.messages, f"{len(segs)} role segments in the ids for {len(turns)} turns in the messages")
        return self.problems

    def check_declared_loss(self) -> None:
        for i, message in enumerate(self.messages):
            if message.get("loss") and KIND.get(message["role"]) != "assistant":
                self.problem([i], '"loss": true on a message that must carry no loss (MS-SWIFT ignores it here)')

    def check_images(self) -> None:
        tags = [i for i, m in enumerate(self.messages) if IMAGE_TAG in str(m.get("content") or "")]
        n_tags = sum(str(self.messages[i]["content"]).count(IMAGE_TAG) for i in tags)
        n_images = len(self.row.get("images") or [])
        if n_tags != n_images:
            self.problem(tags, f"{n_tags} {IMAGE_TAG} placeholders for {n_images} images")
        begins = [p for p, t in enumerate(self.ids) if t == self.tok["<|begin_of_image|>"]]
        if len(begins) != n_images:
            self.problem(tags, f"{len(begins)} <|begin_of_image|> runs in the ids for {n_images} images")
        for n, begin in enumerate(begins):
            end = begin + 1
            while end < len(self.ids) and self.ids[end] == self.tok["<|image|>"]:
                end += 1
            if end >= len(self.ids) or self.ids[end] != self.tok["<|end_of_image|>"] or end - begin - 1 < 2:
                self.problem(tags, f"image {n} is not one <|begin_of_image|>, many <|image|>, <|end_of_image|> run")
            if self.trained(begin, end + 1):
                self.problem(tags, f"image {n}: {self.trained(begin, end + 1)} image tokens carry loss")

    def check_untrained(self, turn: LabelledTurn, seg: TokenSegment, ends_a_turn: bool) -> None:
        trained = self.trained(seg.start + ends_a_turn, seg.end)  # a role token that ends an assistant turn is its own
        if trained:
            what = "the tool descriptions" if not turn.messages else _name(self.messages, turn.messages)
            if turn.messages and seg.kind == "system" and has_tools(self.row):
                what += " and the tool descriptions"
            self.problems.append(f"{what}: {trained} trained tokens in a {seg.kind} turn, which must carry no loss")

    def check_assistant(self, turn: LabelledTurn, seg: TokenSegment, nxt: TokenSegment | None) -> None:
        if self.is_trained(seg.start):
            self.problem(turn.messages, "its <|assistant|> role token carries loss")
        opens = [p for p in range(seg.start, seg.end) if self.ids[p] == self.tok["<tool_call>"]]
        closes = [p for p in range(seg.start, seg.end) if self.ids[p] == self.tok["</tool_call>"]]
        calls = _calls(self.row, turn)
        if len(opens) != len(calls) or len(closes) != len(calls):
            self.problem(
                turn.messages,
                f"{len(opens)} <tool_call> in the ids for {len(calls)} tool_call messages (a call written as text?)",
            )
        text = [i for i in turn.messages if self.messages[i]["role"] == "assistant"]
        if text and len(opens) == len(closes) == len(calls):
            self.check_text(text, seg.start + 1, opens[0] if opens else seg.end)
        if len(opens) == len(closes) == len(calls):
            for i, open_, close in zip(calls, opens, closes):
                span = close + 1 - open_
                trained = self.trained(open_, close + 1)
                if self.messages[i].get("loss") is False and trained:
                    self.problem([i], f'"loss": false, yet {trained} of its {span} tokens carry loss')
                elif self.messages[i].get("loss") is not False and trained != span:
                    self.problem([i], f"{span - trained} of its {span} tokens carry no loss")
        wants_loss = self.messages[turn.messages[-1]].get("loss") is not False
        if nxt is None:
            if wants_loss:
                self.problem(turn.messages, "the sample ends inside the turn: no role token ends it")
            return
        if self.is_trained(nxt.start) != wants_loss:
            state = "carries no loss" if wants_loss else 'carries loss though the turn has "loss": false'
            self.problem(turn.messages, f"the <|{nxt.kind}|> that ends the turn {state}")
        if nxt.kind == "observation" and self.ids[nxt.start - 1] != self.tok["</tool_call>"]:
            self.problem(turn.messages, "the turn does not end </tool_call><|observation|>")

    def check_text(self, indices: list[int], start: int, end: int) -> None:
        losses = {self.messages[i].get("loss") is not False for i in indices}
        if len(losses) != 1:
            return  # merged messages with and without loss: their share of the text is not told apart here
        trained = self.trained(start, end)
        if losses == {False} and trained:
            self.problem(indices, f'"loss": false, yet {trained} tokens carry loss')
        content = "".join(str(self.messages[i].get("content") or "") for i in indices)
        if losses == {True} and not trained and EMPTY_THINK.sub("", content).strip():
            self.problem(indices, "its text carries no loss")


def check_labels(encoded: dict[str, Any], row: dict[str, Any], tokenizer: Any) -> list[str]:
    """Problems of one encoded row (MS-SWIFT's `template.encode` in train mode), each naming a message."""
    return LabelCheck(encoded, row, tokenizer).run()
