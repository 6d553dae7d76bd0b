"""The deck room's settings: the PPTX mode and its fidelity check."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class PptxMode(str, Enum):
    editable = "editable"  # native shapes, pictures, tables and text from Chromium's layout
    picture = "picture"  # one full-slide picture per slide (for CSS without a PowerPoint equivalent)


@dataclass
class DeckConfig:
    """The deck export's PPTX and its fidelity check (`python -m agents.deck check`)."""

    pptx_mode: PptxMode = PptxMode.editable
    # Render the PPTX with LibreOffice after each export and record the figures in deck_defects.json.
    # Off by default: LibreOffice takes seconds per deck to start and convert.
    check: bool = False
    soffice: str = "soffice"
    check_timeout_s: float = 120.0
