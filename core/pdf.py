"""PyMuPDF, imported here without `pymupdf.layout`: PyMuPDF 2 depends on pymupdf-layout, which loads its ONNX
layout model when it is imported (0.6 s and 55 MB in every process that reads a PDF: each entry point, each
rollout worker). Nothing here uses it: agents/research/convert.py runs pymupdf4llm's plain mode, which is
what pymupdf4llm falls back to without the layout package. Import PyMuPDF as `from core.pdf import pymupdf`."""

import sys

sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]  # `import pymupdf.layout` raises ImportError

import pymupdf  # noqa: E402

__all__ = ["pymupdf"]
