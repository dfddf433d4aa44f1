package policy

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The Bash tool's command is read with mvdan.cc/sh's parser (bash dialect),
// the parser shfmt uses, not with a lexer of our own: a hand lexer that
// disagrees with bash about one quote ("${x:-"'"}") turns a whole script into
// one harmless-looking command. Every simple command at any depth becomes a
// command below, and whatever the tree cannot tell before the script runs
// makes the script uncertain: prefix and pattern allow rules then stop
// matching, and every Bash deny rule applies.

// command is one simple command of a script.
type command struct {
	// text is the command as written: its assignments, words and
	// redirections, quotes kept, joined by single spaces, with git's
	// harmless global options left out. Allow rules match it.
	text string
	// words are the program and its arguments with quotes removed (a
	// dynamic word holds its text as written).
	words []string
	// dynamic[i]: word i is only known when the command runs ($x, $(…),
	// a glob or a brace expansion).
	dynamic []bool
	// risky says why only a rule spelling out this exact command may allow
	// it ("" when a prefix rule may): it writes a file, runs a
	// substitution, or has a flag that writes, reads outside the worktree
	// or runs a program.
	risky string
	// protected: it names a path under .claude/, .git/, .vscode/ or
	// .idea/ (where claude and editors read hooks, settings and tasks that
	// run outside familiar's policy) with a program that may write there.
	// Asked even when elevated, unless a rule spells out the command.
	protected string
}

// script is what the parser made of a whole Bash command.
type script struct {
	commands []command // including those in substitutions and re-read strings
	// uncertain says why what the script runs is only known when it runs
	// ("" when it is known): the parser refused it, or it has an expansion
	// that can run code (${x@P}, $((…)), eval of a variable), a shell fed
	// from stdin, a program named by an expansion, a re-bound builtin, ….
	uncertain string
	// unsure: too long, too nested or too costly to read at all.
	unsure bool
	spent  int // bytes parsed, against maxReadings
}

const (
	// Deeper nesting of substitutions is not real work.
	maxDepth = 64
	// Longer commands are not analysed: they are never allowed by a prefix
	// or pattern, and every Bash deny rule matches them.
	maxScript = 64 << 10
	// sh -c "sh -c '…'" deeper than this matches every Bash deny rule.
	maxShellDepth = 4
	// The bytes parsed, all re-read strings together: more (eval eval eval
	// … would grow as a power of its length) matches every Bash deny rule.
	maxReadings = 16 * maxScript
	// maxStarts bounds the words tried as the program after a wrapper.
	maxStarts = 256
)

// analyze parses src and collects its commands.
func analyze(src string) *script {
	s := &script{}
	s.read(src, 0)
	return s
}

func (s *script) setUncertain(why string) {
	if s.uncertain == "" {
		s.uncertain = why
	}
}

// read parses one script (the whole command, or a string a command runs as
// a script) and adds its commands.
func (s *script) read(src string, shellDepth int) {
	s.spent += len(src)
	if shellDepth > maxShellDepth || len(src) > maxScript || s.spent > maxReadings {
		s.unsure = true
		return
	}
	if strings.IndexByte(src, 0) >= 0 {
		// bash stops reading a -c string at a NUL; the parser does not.
		s.setUncertain("it holds a NUL byte")
	}
	f, err := parse(src)
	if err != nil {
		s.setUncertain("bash may read it differently than familiar: " + err.Error())
		return
	}
	w := walker{s: s, src: src, shellDepth: shellDepth}
	w.checkComments(f)
	w.stmts(f.Stmts, 0)
}

// checkComments makes the script uncertain where the parser took for a
// comment a "#" bash reads as part of a word: bash starts a comment only
// at the start of a word, and the parser, inside $(…), also after a quote
// (echo $(ls”#"…), which hid what followed from it).
func (w *walker) checkComments(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.Comment)
		if !ok {
			return true
		}
		at := int(c.Hash.Offset())
		if at > 0 && at <= len(w.src) && !strings.ContainsRune(" \t\n;&|()<>", rune(w.src[at-1])) {
			w.s.setUncertain("bash may read a \"#\" as part of a word where the parser read a comment")
		}
		return true
	})
}

func parse(src string) (f *syntax.File, err error) {
	defer func() {
		if r := recover(); r != nil { // a parser bug is a doubt, not a crash
			f, err = nil, errParserPanic
		}
	}()
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
}

type parserPanic struct{}

func (parserPanic) Error() string { return "the parser failed" }

var errParserPanic error = parserPanic{}

type walker struct {
	s          *script
	src        string
	shellDepth int
}

func (w *walker) raw(n syntax.Node) string {
	a, b := int(n.Pos().Offset()), int(n.End().Offset())
	if a < 0 || b > len(w.src) || a > b {
		return ""
	}
	return w.src[a:b]
}

func (w *walker) stmts(list []*syntax.Stmt, depth int) {
	for _, st := range list {
		w.stmt(st, depth)
	}
}

func (w *walker) stmt(st *syntax.Stmt, depth int) {
	if st == nil {
		return
	}
	if depth > maxDepth {
		w.s.unsure = true
		return
	}
	start := len(w.s.commands)
	if call, ok := st.Cmd.(*syntax.CallExpr); ok {
		w.call(call, st.Redirs, depth)
		return
	}
	w.command(st.Cmd, depth)
	// A redirection of a compound command applies to every command in it.
	var r redirs
	for _, rd := range st.Redirs {
		w.redirect(rd, &r, depth)
	}
	for i := start; i < len(w.s.commands); i++ {
		w.s.commands[i].markRedirs(r)
	}
}

func (w *walker) command(c syntax.Command, depth int) {
	d := depth + 1
	switch c := c.(type) {
	case nil:
	case *syntax.Block:
		w.stmts(c.Stmts, d)
	case *syntax.Subshell:
		w.stmts(c.Stmts, d)
	case *syntax.BinaryCmd:
		w.stmt(c.X, d)
		w.stmt(c.Y, d)
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			w.stmts(c.Cond, d)
			w.stmts(c.Then, d)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond, d)
		w.stmts(c.Do, d)
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, it := range l.Items {
				w.word(it, d)
			}
		default:
			w.s.setUncertain("it has an arithmetic for loop")
		}
		w.stmts(c.Do, d)
	case *syntax.CaseClause:
		w.word(c.Word, d)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				w.word(p, d)
			}
			w.stmts(it.Stmts, d)
		}
	case *syntax.FuncDecl:
		// The body is read here, where it is defined: whatever later calls
		// the function runs these commands, and each needs its rule.
		w.stmt(c.Body, d)
	case *syntax.TimeClause:
		w.stmt(c.Stmt, d)
	case *syntax.CoprocClause:
		if c.Name != nil {
			w.word(c.Name, d)
		}
		w.stmt(c.Stmt, d)
	case *syntax.TestClause:
		w.test(c.X, d)
	case *syntax.DeclClause:
		w.decl(c, d)
	case *syntax.ArithmCmd, *syntax.LetClause:
		// Arithmetic evaluates names recursively: x='a[$(cmd)]'; ((x))
		// runs cmd.
		w.s.setUncertain("it evaluates arithmetic")
	default:
		w.s.setUncertain("it has a construct familiar does not read")
	}
}

func (w *walker) test(x syntax.TestExpr, depth int) {
	switch x := x.(type) {
	case *syntax.Word:
		w.word(x, depth)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			w.s.setUncertain("[[ -v ]] evaluates a subscript") // [[ -v a[$(cmd)] ]]
		}
		w.test(x.X, depth)
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			w.s.setUncertain("[[ … -eq … ]] evaluates arithmetic")
		}
		w.test(x.X, depth)
		w.test(x.Y, depth)
	case *syntax.ParenTest:
		w.test(x.X, depth)
	}
}

// decl is declare, local, export, readonly, typeset: a command whose
// arguments are assignments.
func (w *walker) decl(c *syntax.DeclClause, depth int) {
	cmd := command{words: []string{c.Variant.Value}, dynamic: []bool{false}}
	parts := []string{c.Variant.Value}
	for _, a := range c.Args {
		parts = append(parts, w.raw(a))
		if a.Naked && a.Name == nil && a.Value != nil {
			v := w.word(a.Value, depth)
			if v.dynamic {
				// declare "$x" may declare anything, a=$(cmd) included.
				w.s.setUncertain("declare of a value known only when it runs")
			}
			cmd.words = append(cmd.words, v.value)
			cmd.dynamic = append(cmd.dynamic, v.dynamic)
			if strings.HasPrefix(v.value, "-") && strings.ContainsAny(v.value, "fn") {
				w.s.setUncertain("declare -f/-n re-binds a name")
			}
			continue
		}
		w.assign(a, depth)
		cmd.words = append(cmd.words, w.raw(a))
		cmd.dynamic = append(cmd.dynamic, false)
	}
	cmd.text = strings.Join(parts, " ")
	w.s.commands = append(w.s.commands, cmd)
}

func (w *walker) assign(a *syntax.Assign, depth int) {
	if a.Index != nil {
		w.s.setUncertain("an array subscript is evaluated as arithmetic")
	}
	if a.Name != nil && specialVar(a.Name.Value) {
		w.s.setUncertain("it sets " + a.Name.Value + ", which changes what later commands run")
	}
	if a.Value != nil {
		w.word(a.Value, depth)
	}
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			if e.Index != nil {
				w.s.setUncertain("an array subscript is evaluated as arithmetic")
			}
			if e.Value != nil {
				w.word(e.Value, depth)
			}
		}
	}
}

// specialVar is a variable whose value bash, git, a pager or the dynamic
// loader runs or reads programs from.
func specialVar(name string) bool {
	switch name {
	case "PATH", "BASH_ENV", "ENV", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "IFS",
		"SHELLOPTS", "BASHOPTS", "BASH_XTRACEFD", "GLOBIGNORE", "LD_PRELOAD", "LD_LIBRARY_PATH",
		"LD_AUDIT", "PAGER", "EDITOR", "VISUAL", "NODE_OPTIONS", "PYTHONSTARTUP", "PERL5OPT",
		"BASH_FUNC", "HISTFILE", "SHELL", "CDPATH", "MANPAGER", "LESSOPEN", "LESSCLOSE":
		return true
	}
	return strings.HasPrefix(name, "GIT_") || strings.HasPrefix(name, "npm_config_") ||
		strings.HasPrefix(name, "NPM_CONFIG_") || strings.HasPrefix(name, "BASH_FUNC_")
}

// redirs is what a command's redirections do.
type redirs struct {
	risky, protected string
}

func (c *command) markRedirs(r redirs) {
	if c.risky == "" {
		c.risky = r.risky
	}
	if c.protected == "" {
		c.protected = r.protected
	}
}

func (w *walker) redirect(rd *syntax.Redirect, r *redirs, depth int) {
	if rd.Hdoc != nil {
		w.word(rd.Hdoc, depth) // an unquoted body runs its substitutions
	}
	if rd.Word == nil {
		return
	}
	v := w.word(rd.Word, depth)
	target := v.value
	switch rd.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		if v.dynamic && r.risky == "" {
			r.risky = "a here-string runs a substitution"
		}
		return
	case syntax.DplIn, syntax.DplOut:
		if !v.dynamic && (isDigits(target) || target == "-" || isDigits(strings.TrimSuffix(target, "-"))) {
			return
		}
	}
	if strings.HasPrefix(target, "/dev/tcp/") || strings.HasPrefix(target, "/dev/udp/") {
		r.risky = "it opens a network connection (" + target + ")"
		return
	}
	if v.dynamic {
		if r.risky == "" {
			r.risky = "a redirection's target is only known when it runs"
		}
		return
	}
	switch rd.Op {
	case syntax.RdrIn:
		return
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.DplOut:
		switch target {
		case "/dev/null", "/dev/stdout", "/dev/stderr":
			return
		}
	}
	if r.risky == "" {
		r.risky = "it writes to " + target
	}
	if p := protectedPath(target); p != "" && r.protected == "" {
		r.protected = "it writes under " + p
	}
}

// call is a simple command.
func (w *walker) call(c *syntax.CallExpr, stRedirs []*syntax.Redirect, depth int) {
	type item struct {
		pos  uint
		text string
	}
	var items []item
	for _, a := range c.Assigns {
		w.assign(a, depth)
		items = append(items, item{a.Pos().Offset(), w.raw(a)})
	}
	cmd := command{}
	var r redirs
	for _, rd := range stRedirs {
		w.redirect(rd, &r, depth)
		items = append(items, item{rd.Pos().Offset(), w.raw(rd)})
	}
	argRaw := make([]string, len(c.Args))
	for i, a := range c.Args {
		v := w.word(a, depth)
		if v.subst && r.risky == "" {
			r.risky = "it runs a substitution"
		}
		cmd.words = append(cmd.words, v.value)
		cmd.dynamic = append(cmd.dynamic, v.dynamic)
		argRaw[i] = w.raw(a)
		if i == 0 && v.dynamic {
			w.s.setUncertain("the program " + quote(argRaw[0]) + " is only known when it runs")
		}
	}
	cmd.markRedirs(r)
	// git's harmless global options are left out of the text rules match.
	var skip map[int]bool
	if len(cmd.words) > 0 && !cmd.dynamic[0] {
		skip, _, _ = gitGlobals(cmd.words)
	}
	for i, a := range c.Args {
		if !skip[i] {
			items = append(items, item{a.Pos().Offset(), argRaw[i]})
		}
	}
	// Source order: a redirection may come before the program.
	for i := 1; i < len(items); i++ {
		for j := i; j > 0 && items[j].pos < items[j-1].pos; j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
	parts := make([]string, 0, len(items))
	for _, it := range items {
		parts = append(parts, it.text)
	}
	cmd.text = strings.Join(parts, " ")
	if len(cmd.words) > 0 {
		w.programs(&cmd)
	}
	w.s.commands = append(w.s.commands, cmd)
}

// programs looks at what the command runs: its own program and, after a
// wrapper (sudo, env, xargs, find -exec, …), every word that may be the
// wrapped program. Command strings are read as scripts.
func (w *walker) programs(cmd *command) {
	words := cmd.words
	end := 1
	if wrappers[path.Base(words[0])] {
		end = len(words)
		if end > maxStarts {
			w.s.unsure = true
			return
		}
	}
	for j := 0; j < end; j++ {
		if cmd.dynamic[j] {
			continue
		}
		prog := path.Base(words[j])
		args, dyn := words[j+1:], cmd.dynamic[j+1:]
		// Builtins (eval, source, trap, …) only run as the program itself
		// or after command/builtin: find . -name x has no "." to source.
		isBuiltin := j == 0 || j == 1 && (path.Base(words[0]) == "command" || path.Base(words[0]) == "builtin")
		rf := riskyFlags(prog, args, dyn)
		if rf.why != "" && cmd.risky == "" {
			cmd.risky = rf.why
		}
		if rf.uncertain != "" {
			w.s.setUncertain(rf.uncertain)
		}
		for _, str := range rf.runs {
			w.s.read(str, w.shellDepth+1)
		}
		if why := rebinds(prog, args); why != "" {
			w.s.setUncertain(why)
		}
		if j == 0 && cmd.protected == "" && !readOnly[prog] {
			for i, a := range args {
				if p := protectedPath(a); p != "" && !dyn[i] {
					cmd.protected = "it names " + p
					break
				}
			}
		}
		for _, str := range w.commandStrings(prog, args, dyn, isBuiltin) {
			if cmd.risky == "" {
				cmd.risky = "it runs a command string"
			}
			w.s.read(str, w.shellDepth+1)
		}
	}
}

// commandStrings returns the arguments prog runs as shell scripts, and
// makes the script uncertain where such a script is only known when it
// runs (a shell reading stdin, a variable, a process substitution).
func (w *walker) commandStrings(prog string, args []string, dyn []bool, isBuiltin bool) []string {
	str := func(i int) []string {
		if i >= len(args) {
			return nil
		}
		if dyn[i] {
			w.s.setUncertain(prog + " runs a command string only known when it runs")
			return nil
		}
		return []string{args[i]}
	}
	if !isBuiltin {
		switch prog {
		case "eval", "source", ".", "trap", "mapfile", "readarray":
			return nil
		}
	}
	switch {
	case shells[prog]:
		return w.shellArgs(prog, args, dyn)
	}
	switch prog {
	case "su", "runuser":
		for i, a := range args {
			if a == "-c" || a == "--command" || a == "--session-command" {
				return str(i + 1)
			}
			if v, ok := strings.CutPrefix(a, "--command="); ok {
				return []string{v}
			}
		}
	case "eval":
		for _, d := range dyn {
			if d {
				w.s.setUncertain("eval of a string only known when it runs")
				return nil
			}
		}
		return []string{strings.Join(args, " ")}
	case "source", ".":
		w.s.setUncertain(prog + " runs a file familiar cannot read")
	case "env":
		for i, a := range args {
			switch {
			case a == "-S" || a == "--split-string":
				return str(i + 1)
			case strings.HasPrefix(a, "--split-string="):
				return []string{strings.TrimPrefix(a, "--split-string=")}
			case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "S"):
				// -vS'…' or -S'…'
				if k := strings.IndexByte(a, 'S'); k+1 < len(a) {
					return []string{a[k+1:]}
				}
				return str(i + 1)
			}
		}
	case "flock", "script":
		for i, a := range args {
			switch {
			case a == "-c" || a == "--command":
				return str(i + 1)
			case strings.HasPrefix(a, "--command="):
				return []string{strings.TrimPrefix(a, "--command=")}
			case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, "c"):
				return str(i + 1) // script -qc '…'
			}
		}
	case "watch":
		i := 0
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			if args[i] == "-n" || args[i] == "--interval" {
				i++ // its value
			}
			i++
		}
		if i < len(args) {
			for _, d := range dyn[i:] {
				if d {
					w.s.setUncertain("watch runs a command only known when it runs")
					return nil
				}
			}
			return []string{strings.Join(args[i:], " ")}
		}
	case "trap":
		i := 0
		for i < len(args) && (args[i] == "--" || args[i] == "-p" || args[i] == "-l") {
			i++
		}
		return str(i)
	case "mapfile", "readarray":
		for i, a := range args {
			if a == "-C" {
				return str(i + 1)
			}
		}
	case "git":
		var out []string
		for i := 0; i+1 < len(args); i++ {
			if args[i] != "-c" {
				continue
			}
			if dyn[i+1] {
				w.s.setUncertain("git -c sets a value only known when it runs")
				continue
			}
			k, v, _ := strings.Cut(args[i+1], "=")
			if strings.HasPrefix(strings.ToLower(k), "alias.") && strings.HasPrefix(v, "!") {
				out = append(out, v[1:])
			}
		}
		return out
	case "parallel":
		// parallel runs its command (or each input after :::) through a shell.
		w.s.setUncertain("parallel runs its inputs as commands")
	}
	return nil
}

// shellArgs finds the script a shell runs: the -c string, a file, or stdin.
func (w *walker) shellArgs(prog string, args []string, dyn []bool) []string {
	dashC := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if dyn[i] {
			w.s.setUncertain(prog + " gets an argument only known when it runs")
			return nil
		}
		switch {
		case a == "--":
			i++
			if i >= len(args) {
				break
			}
			fallthrough
		case !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			if dyn[i] {
				w.s.setUncertain(prog + " runs a script only known when it runs")
				return nil
			}
			if dashC {
				return []string{args[i]}
			}
			if strings.HasPrefix(args[i], "/dev/") || strings.HasPrefix(args[i], "/proc/") {
				w.s.setUncertain(prog + " reads its script from " + args[i])
			}
			return nil // a script file: a program like any other
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
		case strings.HasPrefix(a, "--"):
		default:
			if strings.ContainsRune(a[1:], 'c') {
				dashC = true
			}
			if strings.ContainsRune(a[1:], 's') {
				w.s.setUncertain(prog + " -s reads its script from stdin")
				return nil
			}
		}
	}
	if dashC {
		w.s.setUncertain(prog + " -c without a command string")
		return nil
	}
	w.s.setUncertain(prog + " reads its script from stdin")
	return nil
}

// rebinds reports a command that changes what a name runs later.
func rebinds(prog string, args []string) string {
	switch prog {
	case "alias", "enable", "hash":
		if prog == "hash" && (len(args) == 0 || args[0] == "-r") {
			return ""
		}
		return prog + " re-binds what a command name runs"
	case "shopt":
		for _, a := range args {
			if a == "expand_aliases" {
				return "shopt expand_aliases makes aliases run"
			}
		}
	case "complete", "bind", "fc":
		return prog + " can run stored commands"
	case "export", "declare", "typeset":
		for _, a := range args {
			if strings.HasPrefix(a, "-") && strings.ContainsAny(a, "fn") {
				return prog + " " + a + " re-binds a name"
			}
		}
	}
	return ""
}

var (
	// Programs that run another program named by one of their arguments.
	wrappers = map[string]bool{"sudo": true, "doas": true, "su": true, "env": true, "command": true,
		"builtin": true, "exec": true, "nohup": true, "nice": true, "ionice": true, "timeout": true,
		"time": true, "stdbuf": true, "setsid": true, "xargs": true, "find": true, "parallel": true,
		"watch": true, "strace": true, "ltrace": true, "chroot": true, "flock": true, "unbuffer": true,
		"busybox": true, "script": true, "runuser": true, "sg": true, "taskset": true, "chrt": true,
		"prlimit": true, "unshare": true, "nsenter": true, "firejail": true, "catchsegv": true,
		"caffeinate": true}
	// Shells: they run a -c string, a script file or stdin.
	shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "ash": true,
		"mksh": true, "yash": true, "posh": true, "rbash": true, "fish": true}
	// Programs that only read, so naming a protected path is harmless.
	readOnly = map[string]bool{"cat": true, "ls": true, "head": true, "tail": true, "grep": true,
		"rg": true, "wc": true, "stat": true, "file": true, "less": true, "more": true, "diff": true,
		"echo": true, "printf": true, "test": true, "[": true, "realpath": true, "readlink": true,
		"basename": true, "dirname": true, "du": true, "tree": true, "git": true, "jq": true}
)

// protectedPath returns the protected directory p is under, or "".
func protectedPath(p string) string {
	for _, seg := range strings.Split(strings.ReplaceAll(p, "\\", "/"), "/") {
		switch seg {
		case ".claude", ".git", ".vscode", ".idea":
			return seg + "/"
		}
	}
	return ""
}

// value is what the parser tells about one word.
type value struct {
	value   string // quotes removed; the text as written where it is dynamic
	dynamic bool   // only known when it runs: an expansion, a glob, braces
	subst   bool   // runs a command or process substitution
}

// word reads a word: its value, and the commands of its substitutions.
func (w *walker) word(wd *syntax.Word, depth int) value {
	if wd == nil {
		return value{}
	}
	var b strings.Builder
	v := value{}
	for _, p := range wd.Parts {
		w.part(p, &b, &v, false, depth)
	}
	if !v.dynamic {
		v.value = b.String()
	} else {
		v.value = w.raw(wd)
	}
	// Braces and globs in the unquoted parts: {rm,-rf,x} is three words,
	// /bin/r? any file that matches.
	for _, p := range wd.Parts {
		if l, ok := p.(*syntax.Lit); ok && hasUnescaped(l.Value, "*?[") {
			v.dynamic = true
			v.value = w.raw(wd)
		}
	}
	if cp := (&syntax.Word{Parts: append([]syntax.WordPart(nil), wd.Parts...)}); syntax.SplitBraces(cp) {
		v.dynamic = true
		v.value = w.raw(wd)
	}
	return v
}

func (w *walker) part(p syntax.WordPart, b *strings.Builder, v *value, quoted bool, depth int) {
	switch p := p.(type) {
	case *syntax.Lit:
		if quoted {
			b.WriteString(unescapeDouble(p.Value))
		} else {
			b.WriteString(unescape(p.Value))
		}
	case *syntax.SglQuoted:
		if p.Dollar {
			var out strings.Builder
			for i := 0; i < len(p.Value); i++ {
				if p.Value[i] == '\\' {
					i = ansiEscape(p.Value, i+1, &out) - 1
					continue
				}
				out.WriteByte(p.Value[i])
			}
			b.WriteString(out.String())
		} else {
			b.WriteString(p.Value)
		}
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			w.part(q, b, v, true, depth)
		}
	case *syntax.ParamExp:
		v.dynamic = true
		if !simpleParam(p) {
			// ${x@P}, ${!x}, ${x:=…}, ${a[$(cmd)]}: can run code stored
			// in a variable, or expand to anything.
			w.s.setUncertain("it has the expansion " + quote(w.raw(p)))
		}
	case *syntax.CmdSubst:
		v.dynamic, v.subst = true, true
		w.stmts(p.Stmts, depth+1)
	case *syntax.ProcSubst:
		v.dynamic, v.subst = true, true
		w.stmts(p.Stmts, depth+1)
	case *syntax.ArithmExp:
		v.dynamic = true
		w.s.setUncertain("it evaluates arithmetic")
	case *syntax.ExtGlob:
		// bash reads !(…) as a glob only with extglob on, and as a syntax
		// error otherwise.
		v.dynamic = true
		w.s.setUncertain("it has the extended glob " + quote(w.raw(p)))
	default:
		v.dynamic = true
		w.s.setUncertain("it has a word familiar does not read")
	}
}

// simpleParam is $name or ${name}: its value is data, never code.
func simpleParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Flags == nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 && p.Slice == nil &&
		p.Repl == nil && p.Names == 0 && p.Exp == nil
}

// unescape removes the backslashes of an unquoted literal.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that escape in double quotes.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hasUnescaped(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte(chars, s[i]) >= 0 {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
