#!/usr/bin/env bash
# Builds familiar-<version>.vsix with a pinned @vscode/vsce installed into
# .vsce/ (gitignored). The extension is bundled by esbuild, so the package
# carries no node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
VSCE_VERSION=3.9.2
vsce=.vsce/node_modules/.bin/vsce
if ! "$vsce" --version 2>/dev/null | grep -q "^$VSCE_VERSION$"; then
	mkdir -p .vsce
	npm install --prefix .vsce --no-audit --no-fund --loglevel=error "@vscode/vsce@$VSCE_VERSION" >&2
fi
[ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error >&2
# vsce runs the vscode:prepublish script (the build) itself.
"$vsce" package --no-dependencies "$@"
