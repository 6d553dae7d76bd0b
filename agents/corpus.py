"""The offline search corpus: build a SQLite FTS5 index of documents, and query it.

python -m agents.corpus build DIR_OR_PARQUET INDEX.db   # PDFs, .md/.txt/.html files, or Parquet (text/title/url)
python -m agents.corpus search INDEX.db "query" [-n 5]  # ranked results: title, corpus:// id, snippet
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.research.documents import DocumentError, load_documents
from agents.research.index import CorpusError, CorpusIndex, build_index
from agents.research.render import hits_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agents.corpus", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="index a folder of documents or a Parquet file")
    build.add_argument("source", type=Path)
    build.add_argument("index", type=Path)
    search = commands.add_parser("search", help="search an index")
    search.add_argument("index", type=Path)
    search.add_argument("query")
    search.add_argument("-n", "--max-results", type=int, default=5)
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            stats = build_index(load_documents(args.source), args.index)
            print(
                f"indexed {stats.documents} documents ({stats.passages} passages, {stats.papers} papers) into {args.index} in {stats.seconds:.1f} s"
            )
        else:
            print(hits_text(args.query, CorpusIndex(args.index).search(args.query, args.max_results)))
    except (DocumentError, CorpusError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
