#!/usr/bin/env bash
# The browser the end-to-end tier opens the HTML report in (Debian's chromium, headless, as
# root through apt-get). Without root or apt-get it says what is missing, and the browser
# tests skip saying why.
set -euo pipefail
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  echo "installed chromium"
else
  echo "note: chromium is not installed; the HTML report's browser tests need, as root: apt-get install chromium" >&2
fi
