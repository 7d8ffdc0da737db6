#!/usr/bin/env bash
# The Redis backend tests start a real redis-server on 127.0.0.1 (tests/limits/conftest.py).
# Make sure the binary exists: install Debian's package when we can, else say how.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then
    exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "Installing redis-server (needed by the Redis rate-limit backend tests)..."
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    command -v redis-server >/dev/null 2>&1 && exit 0
fi
echo "error: redis-server is not installed; the Redis backend tests need it." >&2
echo "Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis)." >&2
exit 1
