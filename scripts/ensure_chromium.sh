#!/usr/bin/env bash
# The HTML report's browser tests drive Debian's Chromium (/usr/bin/chromium) through
# Playwright's Python API; no browser is downloaded by Playwright itself.
# Make sure the binary exists: install Debian's package when we can, else say how.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "Installing chromium (needed by the HTML report's browser tests)..."
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    [ -x /usr/bin/chromium ] && exit 0
fi
echo "error: /usr/bin/chromium is not installed; the HTML report's browser tests need it." >&2
echo "Install it (Debian/Ubuntu: sudo apt-get install chromium)." >&2
exit 1
