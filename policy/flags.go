package policy

import (
	"path"
	"strings"
)

// A prefix rule says which program a person trusts, not which of its flags:
// Bash(git diff:*) was granted for reading diffs, and git diff --output=f
// writes f, --ext-diff runs a program, --no-index ~/.ssh/id_rsa reads outside
// the worktree. The table below names, per program, the flags that write,
// read outside the worktree or run another program; a command with one is
// risky, so only a rule spelling out the exact command allows it.

// gitGlobals finds git's global options (those before the subcommand). drop
// are the harmless ones, left out of the text allow rules match; all are
// every one of them with their values, left out of the readings deny rules
// match, so git -C . push is still git push. risky says why one is not
// harmless (-C, -c, --git-dir, …).
func gitGlobals(words []string) (drop, all map[int]bool, risky string) {
	if len(words) == 0 || path.Base(words[0]) != "git" {
		return nil, nil, ""
	}
	drop, all = map[int]bool{}, map[int]bool{}
	for i := 1; i < len(words); i++ {
		a := words[i]
		switch a {
		case "-p", "-P", "--paginate", "--no-pager", "--no-replace-objects", "--literal-pathspecs",
			"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks",
			"--no-lazy-fetch", "--no-advice":
			drop[i], all[i] = true, true
			continue
		case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path",
			"--super-prefix", "--attr-source", "--list-cmds":
			all[i] = true
			if i+1 < len(words) && (a != "--exec-path") {
				i++
				all[i] = true
			}
			if risky == "" {
				risky = "git " + a + " changes what git reads or runs"
			}
			continue
		case "--bare":
			all[i] = true
			if risky == "" {
				risky = "git --bare changes the repository git works on"
			}
			continue
		}
		if k, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
			switch k {
			case "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path",
				"--super-prefix", "--attr-source", "--list-cmds":
				all[i] = true
				if risky == "" {
					risky = "git " + k + " changes what git reads or runs"
				}
				continue
			}
		}
		break
	}
	return drop, all, risky
}

// withoutGit returns words without git's global options.
func withoutGit(words []string, dyn []bool) ([]string, []bool, bool) {
	_, all, _ := gitGlobals(words)
	if len(all) == 0 {
		return words, dyn, false
	}
	var w []string
	var d []bool
	for i := range words {
		if !all[i] {
			w = append(w, words[i])
			d = append(d, dyn[i])
		}
	}
	return w, d, true
}

// flagIs reports whether arg is one of the flags, alone or as flag=value.
func flagIs(arg string, flags ...string) bool {
	for _, f := range flags {
		if arg == f || strings.HasPrefix(arg, f+"=") {
			return true
		}
	}
	return false
}

// shortFlag reports whether arg is a bundle of single-letter options
// (-xvf) holding one of the letters.
func shortFlag(arg, letters string) bool {
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return false
	}
	return strings.ContainsAny(arg[1:], letters)
}

// tabled are the programs the table knows: any argument of theirs only
// known when the command runs may be one of their risky flags.
var tabled = map[string]bool{"git": true, "go": true, "npm": true, "npx": true, "pnpm": true,
	"yarn": true, "find": true, "sed": true, "gsed": true, "tar": true, "gtar": true, "bsdtar": true,
	"rsync": true, "sort": true, "awk": true, "gawk": true, "mawk": true, "nawk": true, "curl": true,
	"wget": true, "ssh": true, "scp": true, "sftp": true, "make": true, "gmake": true}

// flagRisk is what the table says about one command.
type flagRisk struct {
	why       string   // why it is risky, or ""
	runs      []string // command lines its flags run (go test -exec X), read as scripts
	uncertain string   // it runs code familiar cannot read (sed's e command, awk's system)
}

// riskyFlags says what prog's flags do.
func riskyFlags(prog string, args []string, dyn []bool) flagRisk {
	if !tabled[prog] {
		return flagRisk{}
	}
	r := flagRisk{why: riskyFlagsWhy(prog, args, dyn)}
	if r.why == "" {
		return r
	}
	value := func(i int, a, flag string) (string, bool) {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
		return "", false
	}
	for i, a := range args {
		var flags []string
		switch prog {
		case "go":
			flags = []string{"-exec", "--exec", "-toolexec", "--toolexec"}
		case "npm", "npx", "pnpm", "yarn":
			flags = []string{"--script-shell", "--shell", "--call", "-c"}
		case "tar", "gtar", "bsdtar":
			flags = []string{"--to-command", "--use-compress-program", "-I", "--info-script", "-F", "--new-volume-script", "--rsh-command", "--rmt-command"}
		case "rsync":
			flags = []string{"-e", "--rsh", "--rsync-path"}
		case "sort":
			flags = []string{"--compress-program"}
		case "sed", "gsed":
			if strings.Contains(r.why, "may run a command") {
				r.uncertain = prog + " script may run a command"
			}
		case "awk", "gawk", "mawk", "nawk":
			if strings.Contains(r.why, "program") {
				r.uncertain = prog + " program may run a command"
			}
		case "ssh", "scp", "sftp":
			if strings.Contains(r.why, "runs a program") {
				r.uncertain = prog + " runs a command from its options"
			}
		case "git":
			if strings.HasPrefix(r.why, "git submodule foreach") || strings.HasPrefix(r.why, "git bisect run") {
				r.uncertain = r.why
			}
		case "make", "gmake":
			r.uncertain = prog + " runs a makefile or text from its options"
		}
		for _, f := range flags {
			if v, ok := value(i, a, f); ok {
				r.runs = append(r.runs, v)
			}
		}
	}
	return r
}

func riskyFlagsWhy(prog string, args []string, dyn []bool) string {
	for i, d := range dyn {
		if d {
			return "its argument " + quote(args[i]) + " is only known when it runs, and may be a flag of " + prog + " that writes or runs programs"
		}
	}
	has := func(flags ...string) string {
		for _, a := range args {
			if a == "--" {
				break
			}
			if flagIs(a, flags...) {
				return prog + " " + a + " writes files, reads outside the worktree or runs a program"
			}
		}
		return ""
	}
	short := func(letters string) string {
		for _, a := range args {
			if a == "--" {
				break
			}
			if shortFlag(a, letters) {
				return prog + " " + a + " writes files, reads outside the worktree or runs a program"
			}
		}
		return ""
	}
	either := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	switch prog {
	case "git":
		words := append([]string{"git"}, args...)
		_, all, risky := gitGlobals(words)
		if risky != "" {
			return risky
		}
		sub, rest := "", []string(nil)
		for i := 1; i < len(words); i++ {
			if !all[i] {
				sub, rest = words[i], words[i+1:]
				break
			}
		}
		switch sub {
		case "config":
			for _, a := range rest {
				if flagIs(a, "--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--show-scope") || a == "get" || a == "list" {
					return ""
				}
			}
			return "git config changes settings that run programs (aliases, hooks, pagers)"
		case "filter-branch", "daemon", "instaweb", "hook", "credential", "credential-store", "credential-cache":
			return "git " + sub + " runs programs or reveals credentials"
		case "submodule":
			for _, a := range rest {
				if a == "foreach" {
					return "git submodule foreach runs a command string"
				}
			}
		case "bisect":
			for _, a := range rest {
				if a == "run" {
					return "git bisect run runs a program"
				}
			}
		}
		sh := map[string]string{"grep": "O", "rebase": "x", "format-patch": "o", "archive": "o",
			"clone": "uc", "fetch": "u", "pull": "u", "ls-remote": "u", "difftool": "xt", "mergetool": "t"}[sub]
		for _, a := range rest {
			if a == "--" {
				break
			}
			if flagIs(a, "--output", "--output-directory", "--ext-diff", "--no-index", "--upload-pack",
				"--receive-pack", "--exec", "--open-files-in-pager", "--extcmd", "--config", "--template",
				"--separate-git-dir", "--git-dir", "--work-tree", "--tool", "--remote", "--textconv") ||
				sh != "" && shortFlag(a, sh) {
				return "git " + sub + " " + a + " writes files, reads outside the worktree or runs a program"
			}
		}
	case "go":
		for _, a := range args {
			if a == "--" {
				break
			}
			f := a
			if strings.HasPrefix(a, "--") {
				f = a[1:] // go reads --flag as -flag
			}
			if flagIs(f, "-exec", "-toolexec", "-o", "-overlay", "-modfile", "-coverprofile", "-cpuprofile",
				"-memprofile", "-blockprofile", "-mutexprofile", "-trace", "-outputdir", "-pkgdir", "-w", "-u") {
				return "go " + a + " writes files or runs a program"
			}
		}
	case "npm", "npx", "pnpm", "yarn":
		return has("--script-shell", "--userconfig", "--globalconfig", "--prefix", "--node-options",
			"--call", "-c", "--shell", "--global", "-g", "--location", "--registry", "--cache")
	case "find":
		return has("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls")
	case "sed", "gsed":
		return sedRisky(prog, args)
	case "tar", "gtar", "bsdtar":
		return either(has("--to-command", "--use-compress-program", "--checkpoint-action", "--info-script",
			"--new-volume-script", "--rmt-command", "--rsh-command", "--directory", "--absolute-names",
			"--files-from"), short("IFPCT"))
	case "rsync":
		return either(has("--rsh", "--rsync-path"), short("e"))
	case "sort":
		return either(has("--output", "--compress-program"), short("o"))
	case "awk", "gawk", "mawk", "nawk":
		if r := either(has("--file", "--include", "--load", "--exec"), short("fiIlE")); r != "" {
			return r
		}
		for _, a := range args {
			if strings.Contains(a, "system") || strings.Contains(a, "|") || strings.Contains(a, "getline") ||
				strings.Contains(a, "print") && strings.Contains(a, ">") {
				return prog + " program runs commands or writes files"
			}
		}
	case "curl":
		return either(has("--output", "--remote-name", "--remote-name-all", "--config", "--upload-file",
			"--create-dirs", "--output-dir", "--dump-header", "--cookie-jar", "--trace", "--trace-ascii", "--stderr"), short("oOKTDc"))
	case "wget":
		return either(has("--output-document", "--output-file", "--directory-prefix", "--input-file",
			"--post-file", "--execute", "--config", "--append-output"), short("OoPiea"))
	case "ssh", "scp", "sftp":
		for i, a := range args {
			v := ""
			if a == "-o" && i+1 < len(args) {
				v = args[i+1]
			} else if strings.HasPrefix(a, "-o") {
				v = a[2:]
			}
			lv := strings.ToLower(v)
			if strings.Contains(lv, "proxycommand") || strings.Contains(lv, "localcommand") ||
				strings.Contains(lv, "knownhostscommand") || strings.Contains(lv, "proxyjump") {
				return prog + " -o " + v + " runs a program"
			}
		}
		return short("FS")
	case "make", "gmake":
		return has("--eval", "--makefile", "--file", "-f", "-E")
	}
	return ""
}

// sedRisky says why a sed command is risky: -i edits files in place, and a
// script's w, W, r, R and e commands (and the s command's w and e flags)
// write, read any file or run a program.
func sedRisky(prog string, args []string) string {
	var scripts []string
	sandbox := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--sandbox":
			sandbox = true
		case flagIs(a, "--in-place") || shortFlag(a, "i"):
			return prog + " " + a + " edits files in place"
		case flagIs(a, "--file") || shortFlag(a, "f"):
			return prog + " " + a + " runs a script from a file"
		case a == "-e" || a == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "--expression="):
			scripts = append(scripts, strings.TrimPrefix(a, "--expression="))
		case strings.HasPrefix(a, "-e") && !strings.HasPrefix(a, "--"):
			scripts = append(scripts, a[2:])
		case a == "-l" || a == "--line-length":
			i++
		}
	}
	if len(scripts) == 0 {
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				scripts = append(scripts, a)
				break
			}
		}
	}
	if sandbox {
		return ""
	}
	for _, s := range scripts {
		switch sedScript(s) {
		case sedWrites:
			return prog + " script " + quote(s) + " writes or reads other files"
		case sedRuns:
			return prog + " script " + quote(s) + " may run a command"
		}
	}
	return ""
}

type sedEffect int

const (
	sedSafe   sedEffect = iota
	sedWrites           // w, W, r, R, s///w
	sedRuns             // e, s///e, or a command familiar does not know
)

// sedScript says what a sed script does beyond printing or editing the
// stream (addresses, s///, y///, p, d, q, …). Anything it does not
// recognise may run a command.
func sedScript(s string) sedEffect {
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	// delimited reads up to the next unescaped d.
	delimited := func(d byte) bool {
		for i < len(s) {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case '\n':
				if d != '\n' {
					return false
				}
			case d:
				i++
				return true
			}
			i++
		}
		return false
	}
	address := func() bool { // true when the address reads
		switch {
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < len(s) && s[i] == '$':
			i++
		case i < len(s) && s[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < len(s) && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !delimited(d) {
				return false
			}
		}
		return true
	}
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == ';') {
			i++
		}
		if i >= len(s) {
			return sedSafe
		}
		if !address() {
			return sedRuns
		}
		skipSpace()
		if i < len(s) && s[i] == ',' {
			i++
			skipSpace()
			if i < len(s) && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				return sedRuns
			}
		}
		skipSpace()
		for i < len(s) && s[i] == '!' {
			i++
			skipSpace()
		}
		if i >= len(s) {
			return sedRuns
		}
		c := s[i]
		i++
		switch c {
		case 's', 'y':
			if i >= len(s) || s[i] == '\n' || s[i] == '\\' {
				return sedRuns
			}
			d := s[i]
			i++
			if !delimited(d) || !delimited(d) {
				return sedRuns
			}
			for c == 's' && i < len(s) && strings.IndexByte("gpiImM0123456789", s[i]) >= 0 {
				i++
			}
			if c == 's' && i < len(s) {
				switch s[i] {
				case 'e':
					return sedRuns
				case 'w':
					return sedWrites // the rest of the line is the file
				}
			}
		case 'p', 'P', 'd', 'D', 'n', 'N', 'q', 'Q', 'h', 'H', 'g', 'G', 'x', 'l', '=', 'z', 'F', '{', '}':
			for i < len(s) && s[i] >= '0' && s[i] <= '9' { // q5, l 70
				i++
			}
		case 'b', 't', 'T', ':', 'a', 'i', 'c':
			for i < len(s) && s[i] != '\n' && (s[i] != ';' || c == 'a' || c == 'i' || c == 'c') {
				if s[i] == '\\' {
					i++
				}
				i++
			}
		case '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case 'r', 'R', 'w', 'W':
			return sedWrites
		default: // e, v and anything unknown
			return sedRuns
		}
		skipSpace()
		if i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
			return sedRuns
		}
	}
}
