# The two commands of the README. Both work on a fresh machine with Go, git
# and npm: the pinned claude CLI is installed into ./.tools first.

.PHONY: demo test tools vscode-test vsix dist

tools:
	bash .ci/run-tools

demo: tools
	go run ./cmd/familiar demo

test:
	bash .ci/test

# The VS Code extension: installs code-server, chromium and playwright-core
# (pinned, into .tools/vscode) and runs its client and UI tests.
vscode-test:
	bash .ci/run-vscode

# The extension's .vsix (editors/vscode/familiar-<version>.vsix).
vsix:
	bash editors/vscode/scripts/package.sh

# Release artifacts in dist/: familiar for linux and macOS (amd64, arm64),
# version stamped, and one VS Code extension per platform with its binary.
dist:
	bash .ci/dist
