#!/usr/bin/env bash
# Packages the extension for one VS Code platform with the familiar built for
# it as bin/familiar: platform-vsix.sh <vscode-target> <familiar binary> <out.vsix>.
# make dist runs it for each of its four platforms; the UI tests run it for
# linux-x64 and install what it made into a clean code-server (scenario vsix).
# bin/ is the extension's only while it is packaged.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 <vscode-target> <familiar binary> <out.vsix>" >&2; exit 2; }
target=$1 binary=$(realpath "$2") out=$(realpath -m "$3")
cd "$(dirname "$0")/.."
cleanup() { rm -rf bin; }
trap cleanup EXIT
rm -rf bin
mkdir -p bin
cp "$binary" bin/familiar
chmod 755 bin/familiar
mkdir -p "$(dirname "$out")"
bash scripts/package.sh --target "$target" -o "$out" >&2
