#!/usr/bin/env bash
# Install headless Chromium from Debian's packages, for the browser tests of the HTML reports
# (tests/integration/browser.rs opens the generated pages with `chromium --headless`).
# Idempotent: does nothing when a chromium is already on PATH (or CAMPAIGN_CHROMIUM names one).
# Needs root (as on CI and the developers' machines); uses sudo when run as another user.
set -euo pipefail

if [ -n "${CAMPAIGN_CHROMIUM:-}" ] && [ -x "${CAMPAIGN_CHROMIUM}" ]; then
    echo "install-chromium: using CAMPAIGN_CHROMIUM=${CAMPAIGN_CHROMIUM}"
    exit 0
fi
if command -v chromium >/dev/null 2>&1; then
    echo "install-chromium: Chromium already present ($(command -v chromium))"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-chromium: not root and no sudo; install Debian's chromium by hand" >&2
        exit 4
    fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-chromium: apt-get update"
$SUDO apt-get update -qq
echo "install-chromium: apt-get install chromium"
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null

if ! command -v chromium >/dev/null 2>&1; then
    echo "install-chromium: apt-get finished but chromium is still not on PATH" >&2
    exit 4
fi
echo "install-chromium: installed $(chromium --version 2>/dev/null | head -n 1)"
