#!/usr/bin/env bash
# Debian packages the pipeline needs: Chromium (rendering, driven by Playwright: the headless
# shell renders, the full browser is there to look at slides and reports) and
# fonts: Noto Sans/Serif for Latin text (the built-in slide designs name them; without them
# Latin text falls back to the CJK fonts, whose PDF pages cost 8x more to print), Noto CJK
# for Chinese/Japanese/Korean text, and emoji; LibreOffice Impress renders the editable PPTX for its
# fidelity check (python -m agents.deck check). Quiet when they are already there.
set -euo pipefail

missing=()
for package in chromium chromium-headless-shell fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji fontconfig libreoffice-impress; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing Debian packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
