package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

const generatedPath = "../../editors/vscode/src/protocol.ts"

// TestGenerated fails when protocol.ts is not what the Go types give: a
// field, type or enum value added to package protocol without regenerating.
func TestGenerated(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(generatedPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		line := 0
		for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
			line++
		}
		t.Fatalf("editors/vscode/src/protocol.ts is stale (first difference at line %d); run: go generate ./protocol/...", line+1)
	}
}

// TestGeneratedCarriesTheContract checks names the extension relies on and
// that drifted before: fields from their json tags, optional where omitted,
// enums from protocol's lists.
func TestGeneratedCarriesTheContract(t *testing.T) {
	src, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, want := range []string{
		"export interface Task {",
		"  undoableUntil?: string;",
		"  queuePosition?: number;",
		"  activityDetail?: string;",
		"  steps?: ToolCall[];",
		"export type Status = 'queued' | 'starting' | 'running' | 'waiting' | 'paused' | 'merging' | 'merged' | 'blocked' | 'cancelled';",
		"export type GrantScope = 'task' | 'repository' | 'user';",
		"  grantScope?: GrantScope;",
		"  rule?: string;",
		"  closing?: string;",
		"  'task/transcript': TaskTranscriptNotification;",
		"  'task/markDone': { params: TaskMarkDoneParams; result: Task };",
		"  'shutdown': { params: void; result: null };",
		"  byStatus: Partial<Record<Status, number>>;",
		"  NotFound: -32001,",
		"  AllowAlwaysExact: 'allow_always_exact',",
		"  paused: { live: false, finished: false, resumable: true, undoable: false, holdsWorktree: false, words: \"paused\" },",
		"export function statusLive(s: string): boolean {",
		"export function statusFinished(s: string): boolean {",
		"export function statusResumable(s: string): boolean {",
		"export function statusUndoable(s: string): boolean {",
		"export function statusHoldsWorktree(s: string): boolean {",
		"  return StatusTraits[s as Status]?.holdsWorktree ?? false;",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("protocol.ts lacks %q", want)
		}
	}
}
