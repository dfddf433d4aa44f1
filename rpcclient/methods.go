package rpcclient

import (
	"context"

	"github.com/familiar-dev/familiar/protocol"
)

// The typed calls, one per method of protocol.Server, in its order.
// TestEveryMethodSendsItsName checks each sends its own method's name.

func (c *Client) Initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	return call[protocol.InitializeResult](ctx, c, protocol.MethodInitialize, p)
}

func (c *Client) Shutdown(ctx context.Context) error {
	return c.Call(ctx, protocol.MethodShutdown, nil, nil)
}

func (c *Client) SettingsUpdate(ctx context.Context, p *protocol.SettingsUpdateParams) (*protocol.Settings, error) {
	return call[protocol.Settings](ctx, c, protocol.MethodSettingsUpdate, p)
}

func (c *Client) TaskCreate(ctx context.Context, p *protocol.TaskCreateParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskCreate, p)
}

func (c *Client) TaskGet(ctx context.Context, p *protocol.TaskGetParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskGet, p)
}

func (c *Client) TaskList(ctx context.Context, p *protocol.TaskListParams) (*protocol.TaskListResult, error) {
	return call[protocol.TaskListResult](ctx, c, protocol.MethodTaskList, p)
}

func (c *Client) TaskCancel(ctx context.Context, p *protocol.TaskCancelParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskCancel, p)
}

func (c *Client) TaskRespond(ctx context.Context, p *protocol.TaskRespondParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskRespond, p)
}

func (c *Client) TaskSend(ctx context.Context, p *protocol.TaskSendParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskSend, p)
}

func (c *Client) TaskInput(ctx context.Context, p *protocol.TaskInputParams) error {
	return c.Call(ctx, protocol.MethodTaskInput, p, nil)
}

func (c *Client) TaskResize(ctx context.Context, p *protocol.TaskResizeParams) error {
	return c.Call(ctx, protocol.MethodTaskResize, p, nil)
}

func (c *Client) TaskScreen(ctx context.Context, p *protocol.TaskScreenParams) (*protocol.TaskScreenResult, error) {
	return call[protocol.TaskScreenResult](ctx, c, protocol.MethodTaskScreen, p)
}

func (c *Client) TaskOutput(ctx context.Context, p *protocol.TaskOutputParams) (*protocol.TaskOutputResult, error) {
	return call[protocol.TaskOutputResult](ctx, c, protocol.MethodTaskOutput, p)
}

func (c *Client) TaskPause(ctx context.Context, p *protocol.TaskPauseParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskPause, p)
}

func (c *Client) TaskResume(ctx context.Context, p *protocol.TaskResumeParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskResume, p)
}

func (c *Client) TaskInterrupt(ctx context.Context, p *protocol.TaskInterruptParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskInterrupt, p)
}

func (c *Client) TaskReorder(ctx context.Context, p *protocol.TaskReorderParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskReorder, p)
}

func (c *Client) TaskRetry(ctx context.Context, p *protocol.TaskRetryParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskRetry, p)
}

func (c *Client) TaskSetMode(ctx context.Context, p *protocol.TaskSetModeParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskSetMode, p)
}

func (c *Client) TaskDiff(ctx context.Context, p *protocol.TaskDiffParams) (*protocol.TaskDiffResult, error) {
	return call[protocol.TaskDiffResult](ctx, c, protocol.MethodTaskDiff, p)
}

func (c *Client) TaskMerge(ctx context.Context, p *protocol.TaskMergeParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskMerge, p)
}

func (c *Client) TaskUndo(ctx context.Context, p *protocol.TaskUndoParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskUndo, p)
}

func (c *Client) TaskRemove(ctx context.Context, p *protocol.TaskRemoveParams) error {
	return c.Call(ctx, protocol.MethodTaskRemove, p, nil)
}

func (c *Client) TaskEvents(ctx context.Context, p *protocol.TaskEventsParams) (*protocol.TaskEventsResult, error) {
	return call[protocol.TaskEventsResult](ctx, c, protocol.MethodTaskEvents, p)
}

func (c *Client) TaskArchive(ctx context.Context, p *protocol.TaskArchiveParams) (*protocol.TaskArchiveResult, error) {
	return call[protocol.TaskArchiveResult](ctx, c, protocol.MethodTaskArchive, p)
}

func (c *Client) ProfilesList(ctx context.Context, p *protocol.ProfilesListParams) ([]protocol.Profile, error) {
	return list[protocol.Profile](ctx, c, protocol.MethodProfilesList, p)
}

func (c *Client) SkillsList(ctx context.Context, p *protocol.SkillsListParams) ([]protocol.Skill, error) {
	return list[protocol.Skill](ctx, c, protocol.MethodSkillsList, p)
}

func (c *Client) SkillsGet(ctx context.Context, p *protocol.SkillsGetParams) (*protocol.SkillDetail, error) {
	return call[protocol.SkillDetail](ctx, c, protocol.MethodSkillsGet, p)
}

func (c *Client) McpPresets(ctx context.Context, p *protocol.McpPresetsParams) ([]protocol.McpPreset, error) {
	return list[protocol.McpPreset](ctx, c, protocol.MethodMcpPresets, p)
}

func (c *Client) McpCheck(ctx context.Context, p *protocol.McpCheckParams) (*protocol.McpCheckResult, error) {
	return call[protocol.McpCheckResult](ctx, c, protocol.MethodMcpCheck, p)
}

func (c *Client) AuditList(ctx context.Context, p *protocol.AuditListParams) (*protocol.AuditListResult, error) {
	return call[protocol.AuditListResult](ctx, c, protocol.MethodAuditList, p)
}

func (c *Client) ServerStats(ctx context.Context, p *protocol.ServerStatsParams) (*protocol.ServerStats, error) {
	return call[protocol.ServerStats](ctx, c, protocol.MethodServerStats, p)
}

func (c *Client) ServerStop(ctx context.Context, p *protocol.ServerStopParams) (*protocol.ServerStopResult, error) {
	return call[protocol.ServerStopResult](ctx, c, protocol.MethodServerStop, p)
}

func (c *Client) TaskMarkDone(ctx context.Context, p *protocol.TaskMarkDoneParams) (*protocol.Task, error) {
	return call[protocol.Task](ctx, c, protocol.MethodTaskMarkDone, p)
}

func (c *Client) TaskText(ctx context.Context, p *protocol.TaskTextParams) (*protocol.TaskTextResult, error) {
	return call[protocol.TaskTextResult](ctx, c, protocol.MethodTaskText, p)
}

func (c *Client) PolicyList(ctx context.Context, p *protocol.PolicyListParams) (*protocol.PolicyListResult, error) {
	return call[protocol.PolicyListResult](ctx, c, protocol.MethodPolicyList, p)
}

func (c *Client) PolicyRevoke(ctx context.Context, p *protocol.PolicyRevokeParams) (*protocol.PolicyRevokeResult, error) {
	return call[protocol.PolicyRevokeResult](ctx, c, protocol.MethodPolicyRevoke, p)
}

func (c *Client) QueueMerge(ctx context.Context, p *protocol.QueueMergeParams) (*protocol.Queue, error) {
	return call[protocol.Queue](ctx, c, protocol.MethodQueueMerge, p)
}

func (c *Client) QueueStatus(ctx context.Context, p *protocol.QueueStatusParams) (*protocol.QueueStatusResult, error) {
	return call[protocol.QueueStatusResult](ctx, c, protocol.MethodQueueStatus, p)
}

func (c *Client) QueueCancel(ctx context.Context, p *protocol.QueueCancelParams) (*protocol.Queue, error) {
	return call[protocol.Queue](ctx, c, protocol.MethodQueueCancel, p)
}

func (c *Client) QueueUndo(ctx context.Context, p *protocol.QueueUndoParams) (*protocol.Queue, error) {
	return call[protocol.Queue](ctx, c, protocol.MethodQueueUndo, p)
}
