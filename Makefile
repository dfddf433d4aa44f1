# The two commands of the README. Both work on a fresh machine with Go, git
# and npm: the pinned claude CLI is installed into ./.tools first.

.PHONY: demo test tools

tools:
	bash .ci/run-tools

demo: tools
	go run ./cmd/familiar demo

test:
	bash .ci/test
