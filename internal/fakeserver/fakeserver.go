package fakeserver

import (
	"context"

	"github.com/familiar-dev/familiar/protocol"
)

// Unimplemented answers every protocol.Server method with -32601 naming the
// Go method, so a test's fake can implement only what its test needs (embed
// it). Production code implements protocol.Server whole; this is in
// internal/ so it cannot lean on it.
type Unimplemented struct{}

var _ protocol.Server = Unimplemented{}

// NotImplemented is the error every method of Unimplemented returns.
func NotImplemented(goMethod string) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeMethodNotFound, Message: "The fake familiar does not implement " + goMethod + "."}
}

func (Unimplemented) Initialize(context.Context, *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	return nil, NotImplemented("Initialize")
}

func (Unimplemented) Shutdown(context.Context) error { return NotImplemented("Shutdown") }

func (Unimplemented) SettingsUpdate(context.Context, *protocol.SettingsUpdateParams) (*protocol.Settings, error) {
	return nil, NotImplemented("SettingsUpdate")
}

func (Unimplemented) TaskCreate(context.Context, *protocol.TaskCreateParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskCreate")
}

func (Unimplemented) TaskGet(context.Context, *protocol.TaskGetParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskGet")
}

func (Unimplemented) TaskList(context.Context, *protocol.TaskListParams) (*protocol.TaskListResult, error) {
	return nil, NotImplemented("TaskList")
}

func (Unimplemented) TaskCancel(context.Context, *protocol.TaskCancelParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskCancel")
}

func (Unimplemented) TaskRespond(context.Context, *protocol.TaskRespondParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskRespond")
}

func (Unimplemented) TaskSend(context.Context, *protocol.TaskSendParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskSend")
}

func (Unimplemented) TaskInput(context.Context, *protocol.TaskInputParams) error {
	return NotImplemented("TaskInput")
}

func (Unimplemented) TaskResize(context.Context, *protocol.TaskResizeParams) error {
	return NotImplemented("TaskResize")
}

func (Unimplemented) TaskScreen(context.Context, *protocol.TaskScreenParams) (*protocol.TaskScreenResult, error) {
	return nil, NotImplemented("TaskScreen")
}

func (Unimplemented) TaskOutput(context.Context, *protocol.TaskOutputParams) (*protocol.TaskOutputResult, error) {
	return nil, NotImplemented("TaskOutput")
}

func (Unimplemented) TaskPause(context.Context, *protocol.TaskPauseParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskPause")
}

func (Unimplemented) TaskResume(context.Context, *protocol.TaskResumeParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskResume")
}

func (Unimplemented) TaskInterrupt(context.Context, *protocol.TaskInterruptParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskInterrupt")
}

func (Unimplemented) TaskReorder(context.Context, *protocol.TaskReorderParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskReorder")
}

func (Unimplemented) TaskRetry(context.Context, *protocol.TaskRetryParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskRetry")
}

func (Unimplemented) TaskSetMode(context.Context, *protocol.TaskSetModeParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskSetMode")
}

func (Unimplemented) TaskDiff(context.Context, *protocol.TaskDiffParams) (*protocol.TaskDiffResult, error) {
	return nil, NotImplemented("TaskDiff")
}

func (Unimplemented) TaskMerge(context.Context, *protocol.TaskMergeParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskMerge")
}

func (Unimplemented) TaskUndo(context.Context, *protocol.TaskUndoParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskUndo")
}

func (Unimplemented) TaskArchive(context.Context, *protocol.TaskArchiveParams) (*protocol.TaskArchiveResult, error) {
	return nil, NotImplemented("TaskArchive")
}

func (Unimplemented) TaskRemove(context.Context, *protocol.TaskRemoveParams) error {
	return NotImplemented("TaskRemove")
}

func (Unimplemented) TaskEvents(context.Context, *protocol.TaskEventsParams) (*protocol.TaskEventsResult, error) {
	return nil, NotImplemented("TaskEvents")
}

func (Unimplemented) ProfilesList(context.Context, *protocol.ProfilesListParams) ([]protocol.Profile, error) {
	return nil, NotImplemented("ProfilesList")
}

func (Unimplemented) SkillsList(context.Context, *protocol.SkillsListParams) ([]protocol.Skill, error) {
	return nil, NotImplemented("SkillsList")
}

func (Unimplemented) SkillsGet(context.Context, *protocol.SkillsGetParams) (*protocol.SkillDetail, error) {
	return nil, NotImplemented("SkillsGet")
}

func (Unimplemented) McpPresets(context.Context, *protocol.McpPresetsParams) ([]protocol.McpPreset, error) {
	return nil, NotImplemented("McpPresets")
}

func (Unimplemented) McpCheck(context.Context, *protocol.McpCheckParams) (*protocol.McpCheckResult, error) {
	return nil, NotImplemented("McpCheck")
}

func (Unimplemented) AuditList(context.Context, *protocol.AuditListParams) (*protocol.AuditListResult, error) {
	return nil, NotImplemented("AuditList")
}

func (Unimplemented) ServerStats(context.Context, *protocol.ServerStatsParams) (*protocol.ServerStats, error) {
	return nil, NotImplemented("ServerStats")
}

func (Unimplemented) ServerStop(context.Context, *protocol.ServerStopParams) (*protocol.ServerStopResult, error) {
	return nil, NotImplemented("ServerStop")
}

func (Unimplemented) TaskMarkDone(context.Context, *protocol.TaskMarkDoneParams) (*protocol.Task, error) {
	return nil, NotImplemented("TaskMarkDone")
}

func (Unimplemented) TaskText(context.Context, *protocol.TaskTextParams) (*protocol.TaskTextResult, error) {
	return nil, NotImplemented("TaskText")
}

func (Unimplemented) PolicyList(context.Context, *protocol.PolicyListParams) (*protocol.PolicyListResult, error) {
	return nil, NotImplemented("PolicyList")
}

func (Unimplemented) PolicyRevoke(context.Context, *protocol.PolicyRevokeParams) (*protocol.PolicyRevokeResult, error) {
	return nil, NotImplemented("PolicyRevoke")
}

func (Unimplemented) QueueMerge(context.Context, *protocol.QueueMergeParams) (*protocol.Queue, error) {
	return nil, NotImplemented("QueueMerge")
}

func (Unimplemented) QueueStatus(context.Context, *protocol.QueueStatusParams) (*protocol.QueueStatusResult, error) {
	return nil, NotImplemented("QueueStatus")
}

func (Unimplemented) QueueCancel(context.Context, *protocol.QueueCancelParams) (*protocol.Queue, error) {
	return nil, NotImplemented("QueueCancel")
}

func (Unimplemented) QueueUndo(context.Context, *protocol.QueueUndoParams) (*protocol.Queue, error) {
	return nil, NotImplemented("QueueUndo")
}
