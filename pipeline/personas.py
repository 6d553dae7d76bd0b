"""A persona as the scripted task writer can say it, in English or in Chinese, without a model.

PersonaHub personas are English sentences ("A career consultant from Cape Town who ...").
A Chinese task must not paste one, so the scripted writer says who the persona is in
Chinese from its parts: the role (its head noun phrase, from a bundled glossary), the
place it is from (kept as written: names stay in their own script), and a name that
opens the persona ("Tanja Mehlstäubler, a German physicist"). What the glossary cannot
say is left out rather than pasted; a persona already in Chinese is used as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

GLOSSARY = Path(__file__).parent / "prompts" / "scripted" / "persona_roles.zh.tsv"
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_OPENING = re.compile(r"^(?:I am|I'm|I’m|As)\s+", re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:a|an|the|another)\s+", re.IGNORECASE)
_NAMED = re.compile(r"^((?:[A-Z][\w’'.-]+\s){1,3}?[A-Z][\w’'.-]+),\s+(?=(?:a|an|the)\s)")  # "Tanja Mehlstäubler, a ..."
_BOUNDARY = re.compile(
    r"\s(?:who|whom|whose|that|from|in|at|with|known|specializ\w*|seeking|interested|living|looking|responsible|passionate|"
    r"working|focused|focusing|dedicated|trying|wanting|eager|and|of|for|on|to|currently|based|studying|researching|aiming|"
    r"struggling|committed|fascinated|inspired|running|using|recently|concerned|deeply|always|obsessed|curious|keen|having|"
    r"hailing|reporting|competing|tasked|preparing|relying|calculating|now)\b|[,.;:(]"
)
_NOT_PARTICIPLES = frozenset(
    "racing teaching gaming streaming washing clothing marketing engineering banking nursing training accounting programming "
    "building aspiring ageing aging loving willing rising leading".split()
)
_PLACE = re.compile(r"^,?\s*(?:from|in|living in|based in|hailing from)\s+((?:[A-Z][\w’'-]+)(?:\s(?:[A-Z][\w’'-]+|de|of|la))*)")


@dataclass(frozen=True)
class Persona:
    text: str  # as given (the prompt's English phrase starts from it)
    name: str = ""  # a person's name that opens it
    role: str = ""  # the head noun phrase, English, as written
    place: str = ""  # where the persona is from or lives, as written

    @property
    def chinese(self) -> bool:
        return bool(CJK.match(self.text.strip()))

    def english_phrase(self) -> str:
        """What follows "I'm": "a nurse who ..." (the persona up to any text in another script)."""
        phrase = _OPENING.sub("", self.text.strip())
        phrase = CJK.split(phrase, maxsplit=1)[0].rstrip(" ,.;:，。") if not CJK.match(phrase) else phrase
        first, _, rest = phrase.partition(" ")
        return f"{first.lower()} {rest}" if first in ("A", "An", "The") else phrase

    def chinese_phrase(self) -> str:
        """Who the persona is, in Chinese ("一位来自 Cape Town 的职业顾问"); "" when nothing of it can be said."""
        if self.chinese:
            return re.sub(r"^(?:我是|我)", "", self.text.strip()).rstrip("。.")
        role = role_in_chinese(self.role)
        if not role:
            return ""
        who = f"一位来自 {self.place} 的{role}" if self.place else f"一位{role}"
        return _spaced(f"{self.name}，{who}" if self.name else who)


def parse_persona(text: str) -> Persona:
    """The persona's name, role and place, read from its opening words."""
    if CJK.match(text.strip()):
        return Persona(text)
    rest = _OPENING.sub("", text.strip())
    named = _NAMED.match(rest)
    name = named.group(1) if named else ""
    rest = _ARTICLE.sub("", rest[named.end() :] if named else rest)
    cut = _BOUNDARY.search(f" {rest}")
    words = (f" {rest}"[: cut.start()] if cut else rest).split()
    participle = next(
        (i for i, w in enumerate(words) if i and w.endswith("ing") and w.lower() not in _NOT_PARTICIPLES), len(words)
    )
    role = " ".join(words[:participle])  # "an engineer developing ...": the role ends before the participle
    place = _PLACE.match(rest[rest.find(role) + len(role) :]) if role else None  # right after the role: "... from Cape Town"
    return Persona(text, name, role, place.group(1) if place else "")


def _spaced(text: str) -> str:
    """A space between Latin-script names and the Chinese around them, and nowhere else."""
    text = re.sub(r"(?<=[\u4e00-\u9fff])(?=[A-Za-z\u00c0-\u024f])|(?<=[A-Za-z\u00c0-\u024f.])(?=[\u4e00-\u9fff])", " ", text)
    return re.sub(r"\s+", " ", text).replace(" ，", "，").replace("， ", "，")


@lru_cache(maxsize=1)
def glossary() -> tuple[dict[str, str], dict[str, str]]:
    """(heads, words before a head): English role words -> Chinese, from persona_roles.zh.tsv."""
    heads: dict[str, str] = {}
    before: dict[str, str] = {}
    current = heads
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if line.strip() == "[before a head]":
            current = before
        elif line.strip() and not line.startswith("#"):
            english, chinese = line.split("\t")
            current[english.strip().lower()] = chinese.strip()
    return heads, before


def role_in_chinese(role: str) -> str:
    """The role's longest known ending (its head noun phrase) in Chinese, after the words before it that the
    glossary knows or that are names (capitalised: kept as written); "" when no ending is known."""
    words = role.split()
    heads, modifiers = glossary()
    for size in range(min(4, len(words)), 0, -1):
        head = " ".join(words[len(words) - size :]).lower()
        if head in heads:
            before = [modifiers.get(w.lower()) or (f" {w} " if w[:1].isupper() else "") for w in words[: len(words) - size]]
            return "".join(before) + heads[head]
    return ""
