# The two commands of the README. Both work on a fresh machine with Go, git
# and npm: the pinned claude CLI is installed into ./.tools first.

.PHONY: demo test tools vscode-test vsix dist canary

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

# The newest published claude (npm's latest, into .tools/canary) against the
# end-to-end subset, reporting which behaviours still hold. Not part of
# `make test`: a release familiar did not see must not block its CI.
canary:
	bash .ci/canary
