package release_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite docs/THIRD-PARTY.md and the notices files from go.mod and the extension's lock file")

// The generated files: the list people read, the notices the binary embeds
// and the copy the VS Code extension ships (with familiar's LICENSE, which
// vsce wants beside package.json).
const (
	listFile      = "docs/THIRD-PARTY.md"
	noticesFile   = "release/THIRD-PARTY-NOTICES.txt"
	vsixNotices   = "editors/vscode/ThirdPartyNotices.txt"
	vsixLicense   = "editors/vscode/LICENSE"
	extensionLock = "editors/vscode/package-lock.json"
)

// compatible are the licences whose terms let Apache-2.0 software link and
// redistribute them (with their notices).
var compatible = []string{"MIT", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "Unlicense", "ISC"}

// platforms are the ones make dist builds for: what each links may differ.
var platforms = []string{"linux", "darwin"}

type dep struct {
	Path, Version, Licence string
	Platforms              []string
	Files                  []licenceFile // nil when its source is not on this machine
}

type licenceFile struct{ Name, Text string }

// TestThirdParty regenerates the list and the notices and fails when the
// committed ones differ: go.mod or the lock file gained, lost or changed a
// dependency, or a module's licence text changed. -update rewrites them.
func TestThirdParty(t *testing.T) {
	root := testenv.RepoRoot()
	goDeps, unlinked := goModules(t, root)
	npmDeps := npmPackages(t, root)
	for _, d := range append(slices.Clone(goDeps), npmDeps...) {
		ok := d.Licence != ""
		for _, l := range strings.Split(d.Licence, " AND ") {
			ok = ok && slices.Contains(compatible, l)
		}
		if !ok {
			t.Errorf("%s %s: licence %q is not one known to be compatible with Apache-2.0 (%v): check it by hand before adding it", d.Path, d.Version, d.Licence, compatible)
		}
	}
	list := renderList(goDeps, unlinked, npmDeps)
	notices := renderNotices(t, root, goDeps, npmDeps)
	license := read(t, root, "LICENSE")
	npmTexts := true
	for _, d := range npmDeps {
		npmTexts = npmTexts && d.Files != nil
	}
	if *update {
		if !npmTexts {
			t.Fatalf("-update needs the extension's node_modules for their licence texts: run npm ci in editors/vscode")
		}
		write(t, root, listFile, list)
		write(t, root, noticesFile, notices)
		write(t, root, vsixNotices, notices)
		write(t, root, vsixLicense, license)
		return
	}
	const regen = "regenerate with: go test ./release -run TestThirdParty -update (after npm ci in editors/vscode)"
	if got := read(t, root, listFile); got != list {
		t.Errorf("%s is stale: %s\n%s", listFile, regen, diffLines(got, list))
	}
	for _, f := range []string{noticesFile, vsixNotices} {
		got := read(t, root, f)
		if !npmTexts {
			// Without node_modules the npm packages' texts cannot be read
			// here: the Go part must match, and each package be named.
			t.Logf("editors/vscode/node_modules is absent: checking %s's npm packages by name only", f)
			cut := func(s string) string { s, _, _ = strings.Cut(s, npmHeading); return s }
			if cut(got) != cut(notices) {
				t.Errorf("%s is stale: %s\n%s", f, regen, diffLines(cut(got), cut(notices)))
			}
			for _, d := range npmDeps {
				if !strings.Contains(got, depHeading(d)) {
					t.Errorf("%s lacks %s: %s", f, depHeading(d), regen)
				}
			}
			continue
		}
		if got != notices {
			t.Errorf("%s is stale: %s\n%s", f, regen, diffLines(got, notices))
		}
	}
	if read(t, root, vsixLicense) != license {
		t.Errorf("%s differs from LICENSE: %s", vsixLicense, regen)
	}
}

// goModules returns the modules linked into cmd/familiar on each platform
// make dist builds for, and the ones go.mod requires that none links (test
// helpers, other platforms' code).
func goModules(t *testing.T, root string) (linked []dep, unlinked []dep) {
	byPath := map[string]*dep{}
	dirs := map[string]string{}
	for _, goos := range platforms {
		out := goTool(t, root, []string{"GOOS=" + goos, "GOARCH=amd64", "CGO_ENABLED=0"}, "list", "-deps",
			"-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{with .Replace}}\t{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}{{end}}", "./cmd/familiar")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			f := strings.Split(line, "\t")
			if len(f) > 3 {
				t.Fatalf("%s is replaced in go.mod: list its replacement's licence by hand", f[0])
			}
			d := byPath[f[0]]
			if d == nil {
				d = &dep{Path: f[0], Version: f[1]}
				byPath[f[0]] = d
				dirs[f[0]] = f[2]
			}
			if !slices.Contains(d.Platforms, goos) {
				d.Platforms = append(d.Platforms, goos)
			}
		}
	}
	for path, d := range byPath {
		d.Files = moduleFiles(t, dirs[path])
		d.Licence = classify(d.Files)
		linked = append(linked, *d)
	}
	var mod struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal([]byte(goTool(t, root, nil, "mod", "edit", "-json")), &mod); err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	for _, r := range mod.Require {
		if byPath[r.Path] == nil {
			unlinked = append(unlinked, dep{Path: r.Path, Version: r.Version})
		}
	}
	sortDeps(linked)
	sortDeps(unlinked)
	return linked, unlinked
}

var licenceName = regexp.MustCompile(`(?i)^(licen[cs]e|unlicen[cs]e|copying|notice|patents|thirdpartynotices)([._-].*)?$`)

// moduleFiles reads the licence, notice and patent files at a module's root.
func moduleFiles(t *testing.T, dir string) []licenceFile {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading a dependency's source: %v", err)
	}
	var files []licenceFile
	for _, e := range entries {
		if e.IsDir() || !licenceName.MatchString(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, licenceFile{Name: e.Name(), Text: strings.ReplaceAll(string(b), "\r\n", "\n")})
	}
	if len(files) == 0 {
		t.Errorf("%s has no licence file", dir)
	}
	return files
}

// classify names a licence by the words of its text, which is how each of
// these states its terms (SPDX identifiers).
func classify(files []licenceFile) string {
	var all string
	for _, f := range files {
		all += f.Text + "\n"
	}
	var ids []string
	if strings.Contains(all, "Permission is hereby granted, free of charge") {
		ids = append(ids, "MIT")
	}
	if strings.Contains(all, "Redistribution and use in source and binary forms") {
		if strings.Contains(all, "Neither the name") || strings.Contains(all, "names of its contributors") {
			ids = append(ids, "BSD-3-Clause")
		} else {
			ids = append(ids, "BSD-2-Clause")
		}
	}
	if strings.Contains(all, "Apache License") && strings.Contains(all, "Version 2.0") {
		ids = append(ids, "Apache-2.0")
	}
	if strings.Contains(all, "This is free and unencumbered software released into the public domain") {
		ids = append(ids, "Unlicense")
	}
	if strings.Contains(all, "Permission to use, copy, modify, and/or distribute this software for any") {
		ids = append(ids, "ISC")
	}
	return strings.Join(ids, " AND ")
}

// npmPackages returns the extension's production dependencies from its lock
// file (what esbuild bundles into dist/extension.js), with their licence
// texts when node_modules is there.
func npmPackages(t *testing.T, root string) []dep {
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
			License string `json:"license"`
			Dev     bool   `json:"dev"`
		} `json:"packages"`
	}
	if err := json.Unmarshal([]byte(read(t, root, extensionLock)), &lock); err != nil {
		t.Fatalf("%s: %v", extensionLock, err)
	}
	var deps []dep
	for key, p := range lock.Packages {
		if key == "" || p.Dev {
			continue
		}
		d := dep{Path: key[strings.LastIndex(key, "node_modules/")+len("node_modules/"):], Version: p.Version, Licence: p.License}
		dir := filepath.Join(root, "editors", "vscode", key)
		if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
			var pj struct{ Version string }
			if json.Unmarshal(b, &pj) == nil && pj.Version == p.Version {
				d.Files = moduleFiles(t, dir)
				if got := classify(d.Files); got != d.Licence {
					t.Errorf("%s: the lock file says %s, its licence text reads as %q", d.Path, d.Licence, got)
				}
			}
		}
		deps = append(deps, d)
	}
	sortDeps(deps)
	return deps
}

func sortDeps(d []dep) { sort.Slice(d, func(i, j int) bool { return d[i].Path < d[j].Path }) }

func renderList(goDeps, unlinked, npmDeps []dep) string {
	var b strings.Builder
	b.WriteString("# Third-party software\n\n")
	b.WriteString("familiar is licensed under the Apache License 2.0 (LICENSE, NOTICE). It links and bundles the\n")
	b.WriteString("software below, under the licences named; every one lets Apache-2.0 software redistribute it with\n")
	b.WriteString("its notices. Every familiar binary carries their full texts (`familiar version --notices`), and so\n")
	b.WriteString("does every VSIX (`ThirdPartyNotices.txt`).\n\n")
	b.WriteString("Generated from go.mod and `editors/vscode/package-lock.json` by\n")
	b.WriteString("`go test ./release -run TestThirdParty -update`; do not edit. The test fails when either gains a\n")
	b.WriteString("dependency this list lacks, or one whose licence is not known to be compatible.\n\n")
	b.WriteString("## Go modules linked into `familiar`\n\n")
	b.WriteString("`go list -deps ./cmd/familiar` for each platform `make dist` builds.\n\n")
	b.WriteString("| Module | Version | Licence | Linked on |\n|---|---|---|---|\n")
	for _, d := range goDeps {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", d.Path, d.Version, d.Licence, strings.Join(d.Platforms, ", "))
	}
	b.WriteString("\n## Required by go.mod, linked by no release binary\n\n")
	b.WriteString("Tests' helpers and other platforms' code: not distributed.\n\n")
	b.WriteString("| Module | Version |\n|---|---|\n")
	for _, d := range unlinked {
		fmt.Fprintf(&b, "| %s | %s |\n", d.Path, d.Version)
	}
	b.WriteString("\n## Bundled into the VS Code extension\n\n")
	b.WriteString("The production dependencies of `editors/vscode/package-lock.json`, which esbuild bundles into\n")
	b.WriteString("`dist/extension.js` (development dependencies build it and are not shipped).\n\n")
	b.WriteString("| Package | Version | Licence |\n|---|---|---|\n")
	for _, d := range npmDeps {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", d.Path, d.Version, d.Licence)
	}
	return b.String()
}

const rule = "================================================================================\n"

// npmHeading starts the notices of the extension's bundled packages.
const npmHeading = rule + "Bundled into the VS Code extension\n"

func depHeading(d dep) string { return fmt.Sprintf("%s %s (%s)\n", d.Path, d.Version, d.Licence) }

func renderNotices(t *testing.T, root string, goDeps, npmDeps []dep) string {
	var b strings.Builder
	b.WriteString("familiar: third-party notices\n\n")
	b.WriteString(read(t, root, "NOTICE"))
	b.WriteString("\nfamiliar is licensed under the Apache License, Version 2.0, whose text follows the\n")
	b.WriteString("notices of the software it links (Go modules) and bundles (the VS Code extension).\n\n")
	section := func(d dep) {
		b.WriteString(rule)
		b.WriteString(depHeading(d))
		for _, f := range d.Files {
			fmt.Fprintf(&b, "\n--- %s\n\n%s", f.Name, strings.TrimRight(f.Text, "\n")+"\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(rule + "Linked into familiar\n\n")
	for _, d := range goDeps {
		section(d)
	}
	b.WriteString(npmHeading + "\n")
	for _, d := range npmDeps {
		section(d)
	}
	b.WriteString(rule + "familiar's licence\n\n")
	b.WriteString(read(t, root, "LICENSE"))
	return b.String()
}

func goTool(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go tool is not in PATH")
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

func read(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, root, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// diffLines shows the first lines that differ.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  committed: %q\n  generated: %q", i+1, gl, wl)
		}
	}
	return ""
}
