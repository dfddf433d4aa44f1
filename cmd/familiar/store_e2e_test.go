package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
)

// stopFamiliar shuts f down cleanly (the store backs itself up).
func stopFamiliar(t *testing.T, f *familiarProc) {
	t.Helper()
	f.stop(t)
}

func taskIDs(t *testing.T, c *editor.Client) map[string]bool {
	t.Helper()
	var list protocol.TaskListResult
	c.Result("task/list", map[string]any{"limit": 200}, &list)
	ids := map[string]bool{}
	for _, task := range list.Tasks {
		ids[task.ID] = true
	}
	return ids
}

var allowAll = map[string]any{"permissionPolicy": map[string]any{"default": "allow"}}

// The disk holding familiar's data fills up while it serves: task/create
// is refused with -32603 {store: "full"} (never acknowledged and lost),
// every client is told, and once there is space again familiar says so and
// takes tasks again. After a restart exactly the acknowledged tasks exist.
func TestFullDiskRefusesTasksAndRecovers(t *testing.T) {
	state := t.TempDir()
	stateDir := filepath.Join(state, "state")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	mountTmpfs(t, stateDir, 8<<20)
	env := []string{"XDG_STATE_HOME=" + stateDir, "XDG_DATA_HOME=" + filepath.Join(state, "data")}
	// The first task holds the only slot (its model never answers), so
	// the others stay queued and only familiar writes to the disk.
	api := fakeapi.Start(fakeapi.Sequence(fakeapi.Reply{Text: "done", Delay: 10 * time.Minute}))
	defer api.Close()
	repo := gitRepo(t)
	f := startFamiliar(t, repo, api, env...)
	c := f.client
	var init protocol.InitializeResult
	settings := map[string]any{"maxConcurrent": 1, "permissionPolicy": map[string]any{"default": "allow"}}
	c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": settings}, &init)
	acked := map[string]bool{}
	create := func(title string) editor.Message {
		m := c.Call("task/create", map[string]any{"title": title, "description": strings.Repeat("a long description ", 3000)})
		if m.Error == nil {
			var task protocol.Task
			if err := json.Unmarshal(m.Result, &task); err != nil {
				t.Fatal(err)
			}
			acked[task.ID] = true
		}
		return m
	}
	if m := create("holds the slot"); m.Error != nil {
		t.Fatal(m.Error)
	}

	// Fill the disk, then familiar's own free pages.
	filler := filepath.Join(stateDir, "filler")
	fh, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := fh.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	fh.Close()
	from := len(c.Notifications())
	var refused editor.Message
	var answered time.Duration
	for i := 0; i < 500; i++ {
		start := time.Now()
		if m := create("filling"); m.Error != nil {
			refused, answered = m, time.Since(start)
			break
		}
	}
	if refused.Error == nil || refused.Error.Code != protocol.CodeInternalError || !strings.Contains(string(refused.Error.Data), `"store":"full"`) {
		t.Fatalf("task/create on a full disk: %+v (%d acknowledged)", refused.Error, len(acked))
	}
	t.Logf("task/create refused after %v (%d acknowledged before): %s", answered, len(acked), refused.Error.Message)
	c.WaitNotification(from, "a warning that familiar cannot save", editor.Method("server/message", "cannot save"))
	// A settings change that cannot be saved does not apply (issue 38): it
	// is refused, and what runs is what familiar would restart with.
	big := strings.Repeat("make check ", 30000)
	if m := c.Call("settings/update", map[string]any{"settings": map[string]any{"mergeVerify": big}}); m.Error == nil {
		t.Error("settings/update was acknowledged on a full disk")
	}
	refusedCreates := 1
	// While the disk stays full, small changes may still fit and large
	// ones not: familiar keeps what it acknowledged, and does not say it
	// can save again until it can.
	for i := range 6 {
		if i%2 == 0 {
			if m := c.Call("task/create", map[string]any{"title": "small"}); m.Error == nil {
				var task protocol.Task
				if err := json.Unmarshal(m.Result, &task); err != nil {
					t.Fatal(err)
				}
				acked[task.ID] = true
			} else {
				refusedCreates++
			}
			continue
		}
		if m := create("refused again"); m.Error == nil {
			t.Fatal("a large task was acknowledged on a full disk")
		}
		refusedCreates++
	}

	// Space returns: familiar notices by itself.
	start := time.Now()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c.WaitNotification(from, "word that familiar can save again", editor.Method("server/message", "can save again"))
	var now protocol.Settings
	c.Result("settings/update", map[string]any{"settings": map[string]any{}}, &now)
	if now.MergeVerify != "" {
		t.Errorf("a settings change refused on the full disk applied: mergeVerify is %d bytes", len(now.MergeVerify))
	}
	t.Logf("recovered %v after space returned", time.Since(start))
	// One warning, then one all-clear that counts the refused changes.
	var said []string
	for _, n := range c.Notifications()[from:] {
		if n.Method != "server/message" {
			continue
		}
		var msg protocol.ServerMessageNotification
		if err := json.Unmarshal(n.Params, &msg); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(msg.Text, "save") {
			said = append(said, string(msg.Level)+": "+msg.Text)
		}
	}
	if len(said) != 2 || !strings.HasPrefix(said[0], "error: familiar cannot save") || !strings.HasPrefix(said[1], "info: familiar can save again") {
		t.Fatalf("the store's warnings, want one error then one all-clear:\n%s", strings.Join(said, "\n"))
	}
	var counted int
	if _, err := fmt.Sscanf(said[1][strings.Index(said[1], ";")+2:], "%d", &counted); err != nil || counted < refusedCreates {
		t.Errorf("all-clear %q: want at least the %d refused task/create calls counted", said[1], refusedCreates)
	}
	t.Logf("%d task/create calls refused; %s", refusedCreates, said[1])
	if m := create("after"); m.Error != nil {
		t.Fatalf("task/create after space returned: %+v", m.Error)
	}
	stopFamiliar(t, f)

	f = startFamiliar(t, repo, api, env...)
	f.client.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	ids := taskIDs(t, f.client)
	for id := range acked {
		if !ids[id] {
			t.Errorf("acknowledged task %s is lost after a restart", id)
		}
	}
	if len(ids) != len(acked) {
		t.Errorf("%d tasks after a restart, %d acknowledged", len(ids), len(acked))
	}
	stopFamiliar(t, f)
}

// familiar.db emptied or with a damaged page: the next start moves it
// aside, restores the backup the last clean shutdown made, says so to the
// client, and serves; it does not start empty in silence or crash-loop.
func TestDamagedStoreIsRepairedAtStart(t *testing.T) {
	for _, damage := range []string{"truncate", "page"} {
		t.Run(damage, func(t *testing.T) {
			env := stateEnv(t)
			api := fakeapi.Start(fakeapi.PromptScript())
			defer api.Close()
			repo := gitRepo(t)
			f := startFamiliar(t, repo, api, env...)
			var init protocol.InitializeResult
			f.client.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": allowAll}, &init)
			var task protocol.Task
			f.client.Result("task/create", map[string]any{"title": "keep me", "description": "say done"}, &task)
			f.client.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
			stopFamiliar(t, f)

			db := filepath.Join(init.Workspace.DataDir, "familiar.db")
			switch damage {
			case "truncate":
				if err := os.Truncate(db, 0); err != nil {
					t.Fatal(err)
				}
			case "page":
				fh, err := os.OpenFile(db, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				junk := []byte(strings.Repeat("\xa5\x17\xff\x03", os.Getpagesize()/4))
				for p := 3; p < 8; p++ {
					fh.WriteAt(junk, int64(p*os.Getpagesize()))
				}
				fh.Close()
			}

			start := time.Now()
			f = startFamiliar(t, repo, api, env...)
			f.client.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
			msg, _ := f.client.WaitNotification(0, "a message about the repair", editor.Method("server/message", "store was damaged"))
			t.Logf("told after %v: %s", time.Since(start), msg.Params)
			var n protocol.ServerMessageNotification
			_ = json.Unmarshal(msg.Params, &n)
			if n.Level != protocol.LevelError || !strings.Contains(n.Text, "Restored the backup") {
				t.Errorf("message: %+v", n)
			}
			if ids := taskIDs(t, f.client); !ids[task.ID] {
				t.Errorf("the task is gone after the repair: %v", ids)
			}
			matches, _ := filepath.Glob(db + ".damaged-*")
			if len(matches) != 1 {
				t.Errorf("damaged file kept aside: %v", matches)
			}
			stopFamiliar(t, f)
		})
	}
}
