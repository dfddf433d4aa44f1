package protocol

import (
	"context"
	"fmt"
)

// Unimplemented implements every Server method by answering -32601, so that
// a type embedding it compiles while it implements only some methods.
type Unimplemented struct{}

var _ Server = Unimplemented{}

func notImplemented(method string) error {
	return &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("familiar does not implement %s yet.", method)}
}

func (Unimplemented) Initialize(context.Context, *InitializeParams) (*InitializeResult, error) {
	return nil, notImplemented(MethodInitialize)
}
func (Unimplemented) Shutdown(context.Context) error { return notImplemented(MethodShutdown) }
func (Unimplemented) SettingsUpdate(context.Context, *SettingsUpdateParams) (*Settings, error) {
	return nil, notImplemented(MethodSettingsUpdate)
}
func (Unimplemented) TaskCreate(context.Context, *TaskCreateParams) (*Task, error) {
	return nil, notImplemented(MethodTaskCreate)
}
func (Unimplemented) TaskGet(context.Context, *TaskGetParams) (*Task, error) {
	return nil, notImplemented(MethodTaskGet)
}
func (Unimplemented) TaskList(context.Context, *TaskListParams) (*TaskListResult, error) {
	return nil, notImplemented(MethodTaskList)
}
func (Unimplemented) TaskCancel(context.Context, *TaskCancelParams) (*Task, error) {
	return nil, notImplemented(MethodTaskCancel)
}
func (Unimplemented) TaskRespond(context.Context, *TaskRespondParams) (*Task, error) {
	return nil, notImplemented(MethodTaskRespond)
}
func (Unimplemented) TaskSend(context.Context, *TaskSendParams) (*Task, error) {
	return nil, notImplemented(MethodTaskSend)
}
func (Unimplemented) TaskInput(context.Context, *TaskInputParams) error {
	return notImplemented(MethodTaskInput)
}
func (Unimplemented) TaskResize(context.Context, *TaskResizeParams) error {
	return notImplemented(MethodTaskResize)
}
func (Unimplemented) TaskScreen(context.Context, *TaskScreenParams) (*TaskScreenResult, error) {
	return nil, notImplemented(MethodTaskScreen)
}
func (Unimplemented) TaskOutput(context.Context, *TaskOutputParams) (*TaskOutputResult, error) {
	return nil, notImplemented(MethodTaskOutput)
}
func (Unimplemented) TaskPause(context.Context, *TaskPauseParams) (*Task, error) {
	return nil, notImplemented(MethodTaskPause)
}
func (Unimplemented) TaskInterrupt(context.Context, *TaskInterruptParams) (*Task, error) {
	return nil, notImplemented(MethodTaskInterrupt)
}
func (Unimplemented) TaskResume(context.Context, *TaskResumeParams) (*Task, error) {
	return nil, notImplemented(MethodTaskResume)
}
func (Unimplemented) TaskReorder(context.Context, *TaskReorderParams) (*Task, error) {
	return nil, notImplemented(MethodTaskReorder)
}
func (Unimplemented) TaskRetry(context.Context, *TaskRetryParams) (*Task, error) {
	return nil, notImplemented(MethodTaskRetry)
}
func (Unimplemented) TaskSetMode(context.Context, *TaskSetModeParams) (*Task, error) {
	return nil, notImplemented(MethodTaskSetMode)
}
func (Unimplemented) TaskDiff(context.Context, *TaskDiffParams) (*TaskDiffResult, error) {
	return nil, notImplemented(MethodTaskDiff)
}
func (Unimplemented) TaskMerge(context.Context, *TaskMergeParams) (*Task, error) {
	return nil, notImplemented(MethodTaskMerge)
}
func (Unimplemented) TaskUndo(context.Context, *TaskUndoParams) (*Task, error) {
	return nil, notImplemented(MethodTaskUndo)
}
func (Unimplemented) TaskRemove(context.Context, *TaskRemoveParams) error {
	return notImplemented(MethodTaskRemove)
}
func (Unimplemented) TaskEvents(context.Context, *TaskEventsParams) (*TaskEventsResult, error) {
	return nil, notImplemented(MethodTaskEvents)
}
func (Unimplemented) ProfilesList(context.Context, *ProfilesListParams) ([]Profile, error) {
	return nil, notImplemented(MethodProfilesList)
}
func (Unimplemented) SkillsList(context.Context, *SkillsListParams) ([]Skill, error) {
	return nil, notImplemented(MethodSkillsList)
}
func (Unimplemented) SkillsGet(context.Context, *SkillsGetParams) (*SkillDetail, error) {
	return nil, notImplemented(MethodSkillsGet)
}
func (Unimplemented) McpPresets(context.Context, *McpPresetsParams) ([]McpPreset, error) {
	return nil, notImplemented(MethodMcpPresets)
}
func (Unimplemented) McpCheck(context.Context, *McpCheckParams) (*McpCheckResult, error) {
	return nil, notImplemented(MethodMcpCheck)
}
func (Unimplemented) AuditList(context.Context, *AuditListParams) (*AuditListResult, error) {
	return nil, notImplemented(MethodAuditList)
}
func (Unimplemented) ServerStats(context.Context, *ServerStatsParams) (*ServerStats, error) {
	return nil, notImplemented(MethodServerStats)
}
func (Unimplemented) ServerStop(context.Context, *ServerStopParams) (*ServerStopResult, error) {
	return nil, notImplemented(MethodServerStop)
}
