"""Build the offline image library: the largest figures of each PDF, with the captions printed near them.

    python scripts/build_image_library.py [SOURCE] [FOLDER]   # defaults: ../shared/data -> ~/.cache/deckforge/image-library

Then point the tools at it with `tools.image_library=FOLDER`. Without that
setting the research runtime builds the same kind of library from
`tools.documents` (default: data/samples) on first use; nothing extracted is
ever committed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from agents.research.documents import DocumentError  # noqa: E402
from agents.research.imagelib import build_library  # noqa: E402
from core.config import PROJECT_ROOT  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, nargs="?", default=PROJECT_ROOT.parent / "shared" / "data")
    parser.add_argument("folder", type=Path, nargs="?", default=Path("~/.cache/deckforge/image-library").expanduser())
    args = parser.parse_args()
    try:
        images = build_library(args.source, args.folder)
    except DocumentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    documents = len({i.source.split(" ")[0] for i in images})
    print(f"extracted {len(images)} images from {documents} documents into {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
