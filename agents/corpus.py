"""The offline search corpus: build a SQLite FTS5 index of documents, and query it.

python -m agents.corpus build DIR_OR_PARQUET INDEX.db   # PDFs, .md/.txt/.html files, or Parquet (text/title/url)
python -m agents.corpus search INDEX.db "query" [-n 5]  # ranked results: title, corpus:// id, snippet
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.research.documents import load_documents
from agents.research.index import CorpusIndex, build_index
from agents.research.render import hits_text
from core.cli import OneLineParser, run_command


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m agents.corpus", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    to_build = commands.add_parser("build", help="index a folder of documents or a Parquet file")
    to_build.add_argument("source", type=Path)
    to_build.add_argument("index", type=Path)
    to_search = commands.add_parser("search", help="search an index")
    to_search.add_argument("index", type=Path)
    to_search.add_argument("query")
    to_search.add_argument("-n", "--max-results", type=int, default=5)
    args = parser.parse_args(argv)
    return run_command(parser.prog, lambda: build(args) if args.command == "build" else search(args))


def build(args: argparse.Namespace) -> int:
    stats = build_index(load_documents(args.source), args.index)
    print(
        f"indexed {stats.documents} documents ({stats.passages} passages, {stats.papers} papers) into {args.index} in {stats.seconds:.1f} s"
    )
    return 0


def search(args: argparse.Namespace) -> int:
    print(hits_text(args.query, CorpusIndex(args.index).search(args.query, args.max_results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
