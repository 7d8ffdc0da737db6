"""Write (or, with ``--check``, verify) the committed ``rampart.trace`` JSON Schema.

The schema is generated from the attrs models by ``ResultRecord.json_schema()``; the
file name follows ``TRACE_SCHEMA_VERSION`` (``rampart.trace.v2`` ->
``schemas/trace.v2.schema.json``). Earlier majors' files are never touched.

    python scripts/generate_trace_schema.py           # regenerate
    python scripts/generate_trace_schema.py --check   # exit 1 when the file has drifted
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rampart.codec._record import TRACE_SCHEMA_VERSION, ResultRecord

REPO_ROOT = Path(__file__).resolve().parent.parent
OUTDATED = "Trace schema is outdated; run scripts/generate_trace_schema.py"


def schema_path(root: Path) -> Path:
    """``schemas/trace.vN.schema.json`` for the current ``TRACE_SCHEMA_VERSION``."""
    name = TRACE_SCHEMA_VERSION.removeprefix("rampart.")
    return root / "schemas" / f"{name}.schema.json"


def render_schema() -> str:
    """The canonical text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(ResultRecord.json_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the committed schema differs"
    )
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT, help="repository root (default: this checkout)"
    )
    args = parser.parse_args(argv)
    path = schema_path(args.root)
    text = render_schema()
    if args.check:
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            print(OUTDATED, file=sys.stderr)
            return 1
        print(f"{path.relative_to(args.root)} is up to date")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {path.relative_to(args.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
