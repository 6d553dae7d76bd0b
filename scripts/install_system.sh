#!/usr/bin/env bash
# Debian packages the pipeline and its tests need: Chromium (rendering, driven by Playwright: the
# headless shell renders, the full browser is there to look at slides and reports); fonts:
# Noto Sans/Serif for Latin text (the built-in slide designs name them; without them Latin text
# falls back to the CJK fonts, whose PDF pages cost 8x more to print), Noto CJK for
# Chinese/Japanese/Korean text, emoji, DejaVu Sans Mono (the report's code); every family the
# project names must resolve to itself (tests/test_fonts.py); bubblewrap, the jail of the
# agents' commands, with prlimit and setpriv (util-linux); ps and pkill (procps) for the tests;
# LibreOffice Impress renders the editable PPTX for its fidelity check (python -m agents.deck check);
# g++ and cmake compile llama.cpp for the `local` extra (llm=local). Quiet when they are already there.
set -euo pipefail

missing=()
for package in chromium chromium-headless-shell fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji fonts-dejavu-core \
               fontconfig bubblewrap util-linux procps libreoffice-impress g++ cmake; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing Debian packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
