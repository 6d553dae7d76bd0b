#!/usr/bin/env bash
# Debian packages the pipeline needs: Chromium (rendering, driven by Playwright) and
# fonts for Chinese/Japanese/Korean text and emoji. Quiet when they are already there.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || missing+=(fonts-noto-cjk)
fc-list 2>/dev/null | grep -qi "Noto Color Emoji" || missing+=(fonts-noto-color-emoji)
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing Debian packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" fontconfig >/dev/null
