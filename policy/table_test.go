package policy

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// redTeam is issue 37's realistic policy: the red team that found about 50
// requests allowed where a person would be asked or denied ran against it.
var redTeam = Policy{
	Default: Ask,
	Allow:   []string{"Bash(git diff:*)", "Bash(npm test:*)", "Bash(ls:*)", "Bash(echo:*)", "Bash(go test:*)", "Edit(./src/**)"},
	Deny:    []string{"Bash(rm:*)", "Bash(curl:*)", "Bash(git push:*)", "Read(./.env)", "Edit(./.github/**)"},
}

var redDirs = Dirs{Work: "/w/repo", Home: "/w/home"}

// The hand lexer this package had before decided 84 of these 230 requests
// otherwise: 32 allowed where a person expects a question or a denial, 40
// more asked where a deny rule should have matched, 12 stricter.

// redCase is one permission request and the verdict a person expects.
type redCase struct {
	family string
	tool   string // "" is Bash
	in     string // the command, or the path (Glob: the pattern)
	want   Verdict
	// runs are the programs bash really runs for a Bash case (space
	// separated, as a set), checked by runRealBash on a harmless rewrite.
	runs     string
	elevated bool
	allow    []string // added to the policy's allow rules
	deny     []string // added to its deny rules
}

var redCases = []redCase{
	// Chaining: every command needs its own rule.
	{family: "chaining", in: "git diff --stat", want: Allow, runs: "git"},
	{family: "chaining", in: "ls -la", want: Allow, runs: "ls"},
	{family: "chaining", in: "echo hello", want: Allow, runs: "echo"},
	{family: "chaining", in: "go test ./...", want: Allow, runs: "go"},
	{family: "chaining", in: "npm test", want: Allow, runs: "npm"},
	{family: "chaining", in: "ls && echo done", want: Allow, runs: "ls echo"},
	{family: "chaining", in: "ls; rm -rf x", want: Deny, runs: "ls rm"},
	{family: "chaining", in: "ls || curl evil.example", want: Deny, runs: "ls"},
	{family: "chaining", in: "ls | rm -rf x", want: Deny, runs: "ls rm"},
	{family: "chaining", in: "ls & rm x", want: Deny, runs: "ls rm"},
	{family: "chaining", in: "ls\nrm x", want: Deny, runs: "ls rm"},
	{family: "chaining", in: "echo ok && go build", want: Ask, runs: "echo go"},
	{family: "chaining", in: "go test ./... && npm test", want: Allow, runs: "go npm"},
	{family: "chaining", in: "ls |& echo x", want: Allow, runs: "ls echo"},
	{family: "chaining", in: "! ls", want: Allow, runs: "ls"},
	{family: "chaining", in: "(ls; echo x)", want: Allow, runs: "ls echo"},
	{family: "chaining", in: "{ ls; rm -rf x; }", want: Deny, runs: "ls rm"},
	{family: "chaining", in: "ls && (cd src && go build)", want: Ask, runs: "ls go"},
	{family: "chaining", in: "echo a; echo b; make", want: Ask, runs: "echo make"},
	{family: "chaining", in: "ls;rm x", want: Deny, runs: "ls rm"},

	// Substitutions: their commands are commands too.
	{family: "substitution", in: "echo $(rm -rf x)", want: Deny, runs: "rm echo"},
	{family: "substitution", in: `echo "$(curl -s evil.example)"`, want: Deny, runs: "curl echo"},
	{family: "substitution", in: "echo `rm x`", want: Deny, runs: "rm echo"},
	{family: "substitution", in: "ls <(rm x)", want: Deny, runs: "rm ls"},
	{family: "substitution", in: "echo $(date)", want: Ask, runs: "date echo"},
	{family: "substitution", in: "cat <<EOF\n$(rm x)\nEOF", want: Deny, runs: "rm cat"},
	{family: "substitution", in: "cat <<'EOF'\n$(rm x)\nEOF", want: Ask, runs: "cat"},
	{family: "substitution", in: `echo <<< "$(rm x)"`, want: Deny, runs: "rm echo"},
	{family: "substitution", in: "ls $(echo src)", want: Ask, runs: "echo ls"},
	{family: "substitution", in: "echo >(rm x)", want: Deny, runs: "rm echo"},
	{family: "substitution", in: "go test $(curl evil.example)", want: Deny, runs: "curl go"},
	{family: "substitution", in: `echo "${x:-"'"}"; rm -rf ~; echo "${x:-"'"}"`, want: Deny, runs: "echo rm"},
	{family: "substitution", in: `echo ${x:='$(rm y)'} ${x@P}`, want: Deny, runs: "rm echo"},
	{family: "substitution", in: `y='a[$(rm z)]'; echo ${HOME:y}`, want: Deny, runs: "rm echo"},
	{family: "substitution", in: `y='a[$(rm z)]'; echo $[y]`, want: Deny, runs: "rm echo"},
	{family: "substitution", in: `a[$(rm z)]=1`, want: Deny, runs: "rm"},
	{family: "substitution", in: `y='a[$(rm z)]'; (( y ))`, want: Deny, runs: "rm"},
	{family: "substitution", in: `y='a[$(rm z)]'; [[ $y -eq 1 ]]`, want: Deny, runs: "rm"},
	{family: "substitution", in: `a=(x); k='$(rm z)'; echo ${!k}`, want: Deny, runs: ""},
	{family: "substitution", in: "echo $((1+2))", want: Deny, runs: "echo"},
	{family: "substitution", in: "echo ${#PATH}", want: Deny, runs: "echo"},
	{family: "substitution", in: "echo \"$(echo \")\"; rm x\")\"", want: Deny, runs: ""},
	{family: "substitution", in: "echo $(ls)", want: Ask, runs: "ls echo"},

	// Quoting: what bash runs once quotes are removed.
	{family: "quoting", in: "'r'm -rf x", want: Deny, runs: "rm"},
	{family: "quoting", in: `\rm -rf x`, want: Deny, runs: "rm"},
	{family: "quoting", in: `"rm" -rf x`, want: Deny, runs: "rm"},
	{family: "quoting", in: `$'\x72m' -rf x`, want: Deny, runs: "rm"},
	{family: "quoting", in: `$'\162\155' x`, want: Deny, runs: "rm"},
	{family: "quoting", in: `r""m -rf x`, want: Deny, runs: "rm"},
	{family: "quoting", in: `echo 'rm -rf x'`, want: Allow, runs: "echo"},
	{family: "quoting", in: `echo "a;rm x"`, want: Allow, runs: "echo"},
	{family: "quoting", in: `echo a\;rm x`, want: Allow, runs: "echo"},
	{family: "quoting", in: `go test -run 'A|B' ./...`, want: Allow, runs: "go"},
	{family: "quoting", in: `echo "unterminated`, want: Deny, runs: ""},
	{family: "quoting", in: `git diff -- "file name.txt"`, want: Allow, runs: "git"},
	{family: "quoting", in: `ls "$HOME"`, want: Allow, runs: "ls"},
	{family: "quoting", in: `ls $HOME/src`, want: Allow, runs: "ls"},
	{family: "quoting", in: `echo \"; rm x; echo \"`, want: Deny, runs: "echo rm"},
	{family: "quoting", in: `echo '\''; rm x`, want: Deny, runs: ""},
	{family: "quoting", in: `echo $'\''; rm x; echo '`, want: Deny, runs: ""},
	{family: "quoting", in: `git "push" origin`, want: Deny, runs: "git"},
	{family: "quoting", in: `c\url evil.example`, want: Deny, runs: "curl"},
	{family: "quoting", in: "echo a \\\n&& rm x", want: Deny, runs: "echo rm"},

	// Keywords and compound commands.
	{family: "keywords", in: "if ls; then rm -rf x; fi", want: Deny, runs: "ls rm"},
	{family: "keywords", in: "while false; do rm x; done", want: Deny, runs: ""},
	{family: "keywords", in: "for f in a b; do echo $f; done", want: Allow, runs: "echo"},
	{family: "keywords", in: "case x in x) rm -rf y;; esac", want: Deny, runs: "rm"},
	{family: "keywords", in: "function f { rm -rf x; }; f", want: Deny, runs: "rm"},
	{family: "keywords", in: "f() { curl evil.example; }; f", want: Deny, runs: "curl"},
	{family: "keywords", in: "coproc rm -rf x", want: Deny, runs: "rm"},
	{family: "keywords", in: "coproc c { rm x; }", want: Deny, runs: "rm"},
	{family: "keywords", in: "time -p rm -rf x", want: Deny, runs: "rm"},
	{family: "keywords", in: "time ls", want: Allow, runs: "ls"},
	{family: "keywords", in: "until ls; do :; done", want: Ask, runs: "ls"},
	{family: "keywords", in: "[[ -f x ]] && rm x", want: Deny, runs: "rm"},
	{family: "keywords", in: "select x in a; do rm $x; done", want: Deny, runs: ""},
	{family: "keywords", in: "ls; # rm -rf x", want: Allow, runs: "ls"},
	{family: "keywords", in: "ls # it's\nrm x", want: Deny, runs: "ls rm"},
	{family: "keywords", in: "if true; then echo yes; else echo no; fi", want: Ask, runs: "echo"},
	{family: "keywords", in: "ls && { echo a; echo b; }", want: Allow, runs: "ls echo"},

	// Wrappers: the program they run is a command too.
	{family: "wrappers", in: "sudo rm -rf x", want: Deny, runs: "sudo"},
	{family: "wrappers", in: "env rm -rf x", want: Deny, runs: "env rm"},
	// env -i also clears the stubs' log variable: rm runs, unlogged.
	{family: "wrappers", in: "env -i PATH=$PATH rm x", want: Deny, runs: "env"},
	{family: "wrappers", in: "timeout 5 rm x", want: Deny, runs: "timeout rm"},
	{family: "wrappers", in: "nice -n 5 rm x", want: Deny, runs: "nice rm"},
	{family: "wrappers", in: "nohup rm x", want: Deny, runs: "nohup rm"},
	{family: "wrappers", in: "echo x | xargs rm", want: Deny, runs: "echo xargs rm"},
	{family: "wrappers", in: `find . -name x -exec rm {} \;`, want: Deny, runs: "find rm"},
	{family: "wrappers", in: "find . -name nothing -delete", want: Ask, runs: "find"},
	{family: "wrappers", in: "command rm x", want: Deny, runs: "rm"},
	{family: "wrappers", in: "exec rm x", want: Deny, runs: "rm"},
	{family: "wrappers", in: "stdbuf -o0 rm x", want: Deny, runs: "stdbuf rm"},
	{family: "wrappers", in: "setsid -w rm x", want: Deny, runs: "setsid rm"},
	{family: "wrappers", in: "nice ls", want: Ask, runs: "nice ls"},
	{family: "wrappers", in: "/usr/bin/env ls", want: Ask, runs: "env ls"},
	{family: "wrappers", in: "timeout 5 git push", want: Deny, runs: "timeout git"},
	{family: "wrappers", in: "env GIT_DIR=.git git -C . push", want: Deny, runs: "env git"},

	// Strings run as scripts.
	{family: "shell strings", in: "bash -c 'rm -rf x'", want: Deny, runs: "bash rm"},
	{family: "shell strings", in: `sh -c "echo hi; curl evil.example"`, want: Deny, runs: "sh echo curl"},
	{family: "shell strings", in: "bash -c -- 'rm x'", want: Deny, runs: "bash rm"},
	{family: "shell strings", in: "bash -ec 'rm x'", want: Deny, runs: "bash rm"},
	{family: "shell strings", in: "echo 'rm -rf x' | sh", want: Deny, runs: "echo sh rm"},
	{family: "shell strings", in: "echo 'ls' | bash -s", want: Deny, runs: "echo bash ls"},
	{family: "shell strings", in: "bash <(echo 'rm x')", want: Deny, runs: "echo bash rm"},
	{family: "shell strings", in: "source <(echo 'rm x')", want: Deny, runs: "echo rm"},
	{family: "shell strings", in: ". /dev/stdin <<< 'rm x'", want: Deny, runs: "rm"},
	{family: "shell strings", in: `eval "rm -rf x"`, want: Deny, runs: "rm"},
	{family: "shell strings", in: `eval 'ls && echo ok'`, want: Ask, runs: "ls echo"},
	{family: "shell strings", in: `eval "$CMD"`, want: Deny, runs: ""},
	{family: "shell strings", in: "trap 'rm -rf x' EXIT", want: Deny, runs: "rm"},
	{family: "shell strings", in: "flock lockfile -c 'rm x'", want: Deny, runs: "flock rm"},
	{family: "shell strings", in: "env -S 'rm -rf x'", want: Deny, runs: "env rm"},
	{family: "shell strings", in: "script -qc 'rm x' /dev/null", want: Deny, runs: "script rm"},
	{family: "shell strings", in: "watch -n1 'rm x'", want: Deny, runs: "watch"},
	{family: "shell strings", in: "git -c alias.x='!rm -rf y' x", want: Deny, runs: "git rm"},
	{family: "shell strings", in: "mapfile -C 'rm' -c 1 arr <<< 'a'", want: Deny, runs: "rm"},
	{family: "shell strings", in: "xargs sh -c 'rm x' < /dev/null", want: Deny, runs: "xargs sh rm"},
	{family: "shell strings", in: `bash -c "$X"`, want: Deny, runs: "bash"},
	{family: "shell strings", in: `sh -c 'sh -c "rm x"'`, want: Deny, runs: "sh rm"},
	{family: "shell strings", in: "bash script.sh", want: Ask, runs: "bash"},
	{family: "shell strings", in: "su -c 'rm x'", want: Deny, runs: "su"},
	{family: "shell strings", in: `find . -name x -exec sh -c 'rm "$1"' _ {} \;`, want: Deny, runs: "find sh rm"},
	{family: "shell strings", in: `bash -c 'ls'`, want: Ask, runs: "bash ls"},

	// Globs and braces where the program goes.
	{family: "globs", in: "/bin/r? -rf x", want: Deny, runs: "rm"},
	{family: "globs", in: "{rm,-rf,x}", want: Deny, runs: "rm"},
	{family: "globs", in: "/bin/rm -rf x", want: Deny, runs: "rm"},
	{family: "globs", in: "/usr/bin/curl evil.example", want: Deny, runs: "curl"},
	{family: "globs", in: "ls *.go", want: Allow, runs: "ls"},
	{family: "globs", in: "echo {a,b}", want: Allow, runs: "echo"},
	{family: "globs", in: "r[m] x", want: Deny, runs: ""},
	{family: "globs", in: "$(echo rm) x", want: Deny, runs: "echo rm"},
	{family: "globs", in: "x=rm; $x -rf y", want: Deny, runs: "rm"},
	{family: "globs", in: `"${x:-rm}" -rf y`, want: Deny, runs: "rm"},
	{family: "globs", in: "git {push,origin}", want: Deny, runs: "git"},
	{family: "globs", in: "ls src/*", want: Allow, runs: "ls"},

	// Re-binding what a name runs.
	{family: "re-binding", in: "hash -p /bin/rm ls; ls x", want: Deny, runs: "rm"},
	{family: "re-binding", in: "shopt -s expand_aliases\nalias ls='rm -rf'\nls x", want: Deny, runs: "rm"},
	{family: "re-binding", in: "alias ls='rm -rf'", want: Deny, runs: ""},
	{family: "re-binding", in: "enable -n echo; echo x", want: Deny, runs: "echo"},
	{family: "re-binding", in: "PATH=/tmp/evil:$PATH ls", want: Deny, runs: "ls"},
	{family: "re-binding", in: "BASH_ENV=./evil.sh bash script.sh", want: Deny, runs: "bash"},
	{family: "re-binding", in: "GIT_EXTERNAL_DIFF=./x git diff", want: Deny, runs: "git"},
	{family: "re-binding", in: "ls() { rm -rf x; }; ls", want: Deny, runs: "rm"},
	{family: "re-binding", in: "command_not_found_handle() { rm x; }; nosuch", want: Deny, runs: "rm"},
	{family: "re-binding", in: "f() { ls; }; export -f f", want: Deny, runs: ""},
	{family: "re-binding", in: "GOFLAGS=-x go test", want: Ask, runs: "go"},

	// git's global options come before the subcommand.
	{family: "git options", in: "git -C . push", want: Deny, runs: "git"},
	{family: "git options", in: "git --no-pager push origin", want: Deny, runs: "git"},
	{family: "git options", in: "git -c core.x=y push", want: Deny, runs: "git"},
	{family: "git options", in: "git --git-dir=.git push", want: Deny, runs: "git"},
	{family: "git options", in: "git --no-pager diff", want: Allow, runs: "git"},
	{family: "git options", in: "git -P diff --stat", want: Allow, runs: "git"},
	{family: "git options", in: "git -C /elsewhere diff", want: Ask, runs: "git"},
	{family: "git options", in: "git push", want: Deny, runs: "git"},
	{family: "git options", in: "git log", want: Ask, runs: "git"},
	{family: "git options", in: "git -c core.pager='rm x' diff", want: Ask, runs: "git"},
	{family: "git options", in: "git --exec-path=/tmp diff", want: Ask, runs: "git"},
	{family: "git options", in: "git --work-tree=/ --git-dir=.git push", want: Deny, runs: "git"},

	// Flags that write, read outside the worktree or run a program.
	{family: "flags", in: "git diff --output=/tmp/x", want: Ask, runs: "git"},
	{family: "flags", in: "git diff --ext-diff", want: Ask, runs: "git"},
	{family: "flags", in: "git diff --no-index ~/.ssh/id_rsa /dev/null", want: Ask, runs: "git"},
	{family: "flags", in: "go test -exec ./evil ./...", want: Ask, runs: "go"},
	{family: "flags", in: "go test -o /tmp/bin ./...", want: Ask, runs: "go"},
	{family: "flags", in: "go test -toolexec=x ./...", want: Ask, runs: "go"},
	{family: "flags", in: "npm test --script-shell=./evil", want: Ask, runs: "npm"},
	{family: "flags", in: "npm test -- --watch", want: Allow, runs: "npm"},
	{family: "flags", in: "go test -run TestX -v ./...", want: Allow, runs: "go"},
	{family: "flags", in: "git diff --stat HEAD~1", want: Allow, runs: "git"},
	{family: "flags", in: "go test $FLAGS ./...", want: Ask, runs: "go"},
	{family: "flags", in: "git diff *", want: Ask, runs: "git"},
	{family: "flags", in: "sed -i s/a/b/ x", want: Ask, allow: []string{"Bash(sed:*)"}, runs: "sed"},
	{family: "flags", in: "sed -n 1,5p x", want: Allow, allow: []string{"Bash(sed:*)"}, runs: "sed"},
	{family: "flags", in: "sed 's/a/b/w out' x", want: Ask, allow: []string{"Bash(sed:*)"}, runs: "sed"},
	{family: "flags", in: "sed '1e id' x", want: Deny, allow: []string{"Bash(sed:*)"}, runs: "sed id"},
	{family: "flags", in: "find . -name '*.go'", want: Allow, allow: []string{"Bash(find:*)"}, runs: "find"},
	{family: "flags", in: "find . -exec id \\;", want: Ask, allow: []string{"Bash(find:*)"}, runs: "find id"},
	{family: "flags", in: "tar --to-command=id -xf a.tar", want: Ask, allow: []string{"Bash(tar:*)"}, runs: "tar"},
	{family: "flags", in: "tar -tf a.tar", want: Allow, allow: []string{"Bash(tar:*)"}, runs: "tar"},

	// Redirections.
	{family: "redirections", in: "ls -la > listing.txt", want: Ask, runs: "ls"},
	{family: "redirections", in: "ls 2>/dev/null", want: Allow, runs: "ls"},
	{family: "redirections", in: "echo x >> ~/.bashrc", want: Ask, runs: "echo"},
	{family: "redirections", in: "ls </dev/tcp/example.invalid/80", want: Ask, runs: "ls"},
	{family: "redirections", in: ">/dev/null rm -rf x", want: Deny, runs: "rm"},
	{family: "redirections", in: "echo x >out.txt", want: Ask, runs: "echo"},
	{family: "redirections", in: "echo hi | tee out.txt", want: Ask, runs: "echo tee"},
	{family: "redirections", in: "ls -la 2>&1", want: Allow, runs: "ls"},
	{family: "redirections", in: "{ ls; } > out.txt", want: Ask, runs: "ls"},
	{family: "redirections", in: "ls > $OUT", want: Ask, runs: ""},

	// Configuration directories: asked even when elevated.
	{family: "config dirs", in: "echo '{}' > .claude/settings.json", want: Ask, runs: "echo"},
	{family: "config dirs", in: "echo x > .git/hooks/pre-commit", want: Ask, elevated: true, runs: ""},
	{family: "config dirs", in: "ls .claude", want: Allow, elevated: true, runs: "ls"},
	{family: "config dirs", in: "cp evil .claude/settings.json", want: Ask, elevated: true, runs: "cp"},
	{family: "config dirs", in: "cp evil .vscode/tasks.json", want: Ask, allow: []string{"Bash(cp:*)"}, runs: "cp"},
	{family: "config dirs", in: "rm -rf x", want: Deny, elevated: true, runs: "rm"},
	{family: "config dirs", in: "make", want: Allow, elevated: true, runs: "make"},
	{family: "config dirs", in: "echo x > .claude/x", want: Allow, allow: []string{"Bash(echo x > .claude/x)"}, runs: "echo"},
	{family: "config dirs", tool: "Edit", in: "/w/repo/.claude/settings.json", want: Ask, elevated: true},
	{family: "config dirs", tool: "Edit", in: "/w/repo/src/a.go", want: Allow, elevated: true},
	{family: "config dirs", tool: "Edit", in: "/w/repo/.claude/settings.json", want: Ask, allow: []string{"Edit(./**)"}},
	{family: "config dirs", tool: "Edit", in: "/w/repo/.claude/settings.json", want: Ask, allow: []string{"Edit"}},
	{family: "config dirs", tool: "Edit", in: "/w/repo/.claude/settings.json", want: Allow, allow: []string{"Edit(./.claude/**)"}},
	{family: "config dirs", tool: "Write", in: "/w/repo/.git/hooks/pre-commit", want: Ask, allow: []string{"Edit(./**)"}},
	{family: "config dirs", tool: "Edit", in: "/w/repo/.vscode/tasks.json", want: Ask, elevated: true},
	{family: "config dirs", tool: "Edit", in: "/w/repo/.idea/workspace.xml", want: Ask, allow: []string{"Edit(./**)"}},
	{family: "config dirs", tool: "Edit", in: "/w/repo/src/.git/config", want: Ask},
	{family: "config dirs", tool: "Edit", in: "/w/home/.claude/settings.json", want: Ask, elevated: true},
	{family: "config dirs", tool: "Edit", in: "/w/repo/.github/workflows/ci.yml", want: Deny, elevated: true},
	{family: "config dirs", tool: "Edit", in: "/w/repo/.gitignore", want: Allow, allow: []string{"Edit(./**)"}},

	// Paths.
	{family: "paths", tool: "Edit", in: "/w/repo/src/a.go", want: Allow},
	{family: "paths", tool: "Edit", in: "src/a.go", want: Allow},
	{family: "paths", tool: "Edit", in: "/w/repo/src/../.github/x", want: Deny},
	{family: "paths", tool: "Edit", in: "/w/repo/src/../lib/a.go", want: Ask},
	{family: "paths", tool: "Read", in: "/w/repo/.env", want: Deny},
	{family: "paths", tool: "Read", in: ".env", want: Deny},
	{family: "paths", tool: "Read", in: "~/.ssh/id_rsa", want: Deny, deny: []string{"Read(~/.ssh/**)"}},
	{family: "paths", tool: "Read", in: "~/src/a.go", want: Ask, allow: []string{"Read(./**)"}},
	{family: "paths", tool: "Edit", in: "~/src/a.go", want: Ask},
	{family: "paths", tool: "Edit", in: "~root/src/a.go", want: Deny},
	{family: "paths", tool: "Edit", in: "src/a.go\x00/../../.github/x", want: Deny},
	{family: "paths", tool: "Read", in: "/w/repo/a\x00", want: Deny, allow: []string{"Read(./**)"}},
	{family: "paths", tool: "Glob", in: "/etc/**", want: Ask, allow: []string{"Read(./**)"}},
	{family: "paths", tool: "Glob", in: "**/*.go", want: Allow, allow: []string{"Read(./**)"}},
	{family: "paths", tool: "Glob", in: "../../**/*", want: Deny, allow: []string{"Read(./**)"}},
	{family: "paths", tool: "Glob", in: "~/.ssh/*", want: Deny, deny: []string{"Read(~/.ssh/**)"}},
	{family: "paths", tool: "Grep", in: "/w/repo", want: Allow, allow: []string{"Read(./**)"}},
	{family: "paths", tool: "Grep", in: "/w/repo/.env", want: Deny, allow: []string{"Read(./**)"}},
	{family: "paths", tool: "LS", in: "/w/repo", want: Allow, allow: []string{"Read(./**)"}},
	{family: "paths", tool: "Grep", in: "/", want: Deny, allow: []string{"Read"}},
	{family: "paths", tool: "Edit", in: "/w/repo/src", want: Allow},
	{family: "paths", tool: "Edit", in: "/w/repo/srcx/a.go", want: Ask},
}

func redInput(tc redCase) (string, json.RawMessage) {
	switch tc.tool {
	case "":
		return "Bash", bash(tc.in)
	case "Glob":
		b, _ := json.Marshal(map[string]string{"pattern": tc.in, "path": "/w/repo"})
		return "Glob", b
	case "Grep", "LS":
		return tc.tool, input("path", tc.in)
	}
	return tc.tool, file(tc.in)
}

// TestRedTeam decides issue 37's table of requests against the red team's
// policy, and checks every Bash case in real bash: the programs it runs are
// the ones the case names, and, where familiar is sure of what the command
// runs, familiar saw each of them.
func TestRedTeam(t *testing.T) {
	if len(redCases) < 150 {
		t.Fatalf("the table has %d requests, issue 37 asks for at least 150", len(redCases))
	}
	rb := newRealBash(t)
	for i, tc := range redCases {
		name := tc.family + "/" + strings.ReplaceAll(tc.in, "/", "∕")
		t.Run(name, func(t *testing.T) {
			p := Policy{Default: redTeam.Default, Allow: append(slices.Clone(redTeam.Allow), tc.allow...),
				Deny: append(slices.Clone(redTeam.Deny), tc.deny...)}
			tool, in := redInput(tc)
			got := DecideIn(redDirs, p, tc.elevated, tool, in)
			if got.Verdict != tc.want {
				t.Errorf("case %d: %s %q (elevated %v) = %s (%s), want %s", i, tool, tc.in, tc.elevated, got.Verdict, got.Reason, tc.want)
			}
			if tool != "Bash" || rb == nil {
				return
			}
			ran := rb.run(t, tc.in)
			if want := strings.Fields(tc.runs); !sameSet(ran, want) {
				t.Errorf("case %d: bash ran %q, the case says %q", i, ran, want)
			}
			s := analyze(tc.in)
			if s.uncertain != "" || s.unsure {
				return // every deny rule applies: familiar need not have seen it
			}
			seen := seenPrograms(s)
			for _, prog := range ran {
				if !seen[prog] {
					t.Errorf("case %d: bash ran %s, which familiar did not see in %q (it saw %v)", i, prog, tc.in, seen)
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	set := func(x []string) []string {
		x = slices.Clone(x)
		slices.Sort(x)
		return slices.Compact(x)
	}
	return slices.Equal(set(a), set(b))
}

// seenPrograms are the programs a script's commands may run: each
// command's program and, after a wrapper, every word that may be one.
func seenPrograms(s *script) map[string]bool {
	seen := map[string]bool{}
	for _, c := range s.commands {
		end := min(1, len(c.words))
		if len(c.words) > 0 && wrappers[path.Base(c.words[0])] {
			end = len(c.words)
		}
		for j := 0; j < end; j++ {
			if !c.dynamic[j] {
				seen[path.Base(c.words[j])] = true
			}
		}
	}
	return seen
}

// realBash runs commands in real bash with every program they name replaced
// by a stub that writes its name to a log and, for wrappers, shells and git,
// runs the real program (which finds the stubs first in PATH). echo and
// printf are builtins, disabled so that their stubs log them. Nothing runs
// outside the test's temporary directory: HOME is there, and absolute paths
// to programs and /tmp are rewritten to point there.
type realBash struct {
	dir, bin, home, env string
	mu                  sync.Mutex
	n                   int
}

var (
	loggedStubs = []string{"rm", "curl", "ls", "go", "npm", "make", "cp", "date",
		"sudo", "su", "watch", "id", "tee", "mv", "touch", "wget", "nosuch-never"}
	passThrough = []string{"bash", "sh", "env", "xargs", "timeout", "nice", "nohup", "find", "flock",
		"stdbuf", "setsid", "script", "git", "sed", "tar", "echo", "printf", "cat"}
)

func newRealBash(t *testing.T) *realBash {
	bashPath, err := exec.LookPath("bash")
	if err != nil {
		t.Log("no bash here: the table's verdicts are checked, not what bash runs")
		return nil
	}
	out, err := exec.Command(bashPath, "-c", "echo ${BASH_VERSINFO[0]}").Output()
	if err != nil || strings.TrimSpace(string(out)) < "5" {
		t.Logf("bash %q is older than 5 (macOS ships 3.2): what bash runs is not checked", strings.TrimSpace(string(out)))
		return nil
	}
	dir := t.TempDir()
	rb := &realBash{dir: dir, bin: filepath.Join(dir, "bin"), home: filepath.Join(dir, "home")}
	for _, d := range []string{rb.bin, rb.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range loggedStubs {
		writeStub(t, filepath.Join(rb.bin, name), name, "")
	}
	for _, name := range passThrough {
		real := bashPath
		if name != "sh" && name != "bash" {
			if real, err = exec.LookPath(name); err != nil {
				writeStub(t, filepath.Join(rb.bin, name), name, "")
				continue
			}
		}
		writeStub(t, filepath.Join(rb.bin, name), name, real)
	}
	rb.env = filepath.Join(dir, "bash_env")
	if err := os.WriteFile(rb.env, []byte("enable -n echo printf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return rb
}

func writeStub(t *testing.T, file, name, real string) {
	body := "#!/bin/sh\necho " + name + " >> \"$STUB_LOG\"\n"
	if real != "" {
		body += "exec " + real + " \"$@\"\n"
	}
	if err := os.WriteFile(file, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// run runs cmd, rewritten to be harmless, in a fresh directory holding a
// few files, and returns the programs it ran.
func (rb *realBash) run(t *testing.T, cmd string) []string {
	rb.mu.Lock()
	rb.n++
	n := rb.n
	rb.mu.Unlock()
	work := filepath.Join(rb.dir, "w", itoa(n))
	for _, d := range []string{"src", ".claude", ".vscode", "tmp"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"x", "y", "lockfile", "src/a.go", "evil", "list"} {
		if err := os.WriteFile(filepath.Join(work, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(work, "stub.log")
	rewritten := strings.NewReplacer(
		"/usr/bin/", rb.bin+"/",
		"/bin/", rb.bin+"/",
		"/tmp/", work+"/tmp/",
		"/dev/tcp/example.invalid/80", "/dev/null",
	).Replace(cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, mustLook(t, "bash"), "-c", rewritten+"\nwait")
	c.Dir = work
	c.Env = []string{"PATH=" + rb.bin, "HOME=" + rb.home, "STUB_LOG=" + log, "BASH_ENV=" + rb.env,
		"SHELL=" + c.Path, "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	c.Stdin = nil
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	out, _ := c.CombinedOutput()
	if c.Process != nil {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // nothing it left behind outlives the case
	}
	if ctx.Err() != nil {
		t.Fatalf("bash did not finish %q in 20 s: %s", cmd, out)
	}
	b, _ := os.ReadFile(log)
	return strings.Fields(string(b))
}

func mustLook(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
