"""Take the README's screenshot of an HTML report: ``python scripts/screenshot_html_report.py
REPORT.html OUT.png [#result-N]`` (Debian's Chromium through Playwright, as the tests use it).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    report, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    fragment = sys.argv[3] if len(sys.argv) == 4 else ""
    subprocess.run(["bash", str(ROOT / "scripts" / "ensure_chromium.sh")], check=True)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path="/usr/bin/chromium",
            args=ARGS,
            headless=True,
            viewport={"width": 1280, "height": 1400},
        )
        page = context.new_page()
        page.goto(report.as_uri() + fragment)
        page.wait_for_selector("html[data-ready=true]")
        page.screenshot(path=str(out))
        context.close()
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
