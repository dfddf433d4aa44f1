package acp

import (
	"encoding/json"

	"github.com/familiar-dev/familiar/protocol"
)

// The ACP v1 messages familiar sends and reads (schema/v1/schema.json of
// @agentclientprotocol/sdk 2.4.0). Optional fields are omitted rather than
// null where the schema allows either.

// ProtocolVersion is the ACP major version familiar speaks.
const ProtocolVersion = 1

type initializeParams struct {
	ProtocolVersion    *int `json:"protocolVersion"`
	ClientCapabilities struct {
		Elicitation *struct {
			Form json.RawMessage `json:"form"`
		} `json:"elicitation"`
		Auth struct {
			Terminal bool `json:"terminal"`
		} `json:"auth"`
		Session *struct {
			Notices json.RawMessage `json:"notices"`
		} `json:"session"`
	} `json:"clientCapabilities"`
}

type mcpServerParam struct {
	Type    string      `json:"type"` // "" (stdio), "http", "sse"
	Name    string      `json:"name"`
	Command string      `json:"command"`
	Args    []string    `json:"args"`
	Env     []nameValue `json:"env"`
	URL     string      `json:"url"`
	Headers []nameValue `json:"headers"`
}

type nameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type newSessionParams struct {
	Cwd        *string          `json:"cwd"`
	McpServers []mcpServerParam `json:"mcpServers"`
}

type loadSessionParams struct {
	SessionID  string           `json:"sessionId"`
	Cwd        *string          `json:"cwd"`
	McpServers []mcpServerParam `json:"mcpServers"`
}

type listSessionsParams struct {
	Cwd    string `json:"cwd"`
	Cursor string `json:"cursor"`
}

type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
	Resource *struct {
		URI  string `json:"uri"`
		Text string `json:"text"`
	} `json:"resource,omitempty"`
}

type promptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []contentBlock `json:"prompt"`
}

type sessionIDParams struct {
	SessionID string `json:"sessionId"`
}

// queueParams is _familiar/queue's: queue/merge's params on the session's
// repository.
type queueParams struct {
	SessionID string                 `json:"sessionId"`
	IDs       []string               `json:"ids,omitempty"`
	Strategy  protocol.MergeStrategy `json:"strategy,omitempty"`
	Verify    *string                `json:"verify,omitempty"`
}

type setModeParams struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

// setConfigParams is session/set_config_option's: a select's value id (a
// string) or a boolean's value.
type setConfigParams struct {
	SessionID string          `json:"sessionId"`
	ConfigID  string          `json:"configId"`
	Value     json.RawMessage `json:"value"`
}

type sessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type modeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []sessionMode `json:"availableModes"`
}

// Stop reasons.
const (
	stopEndTurn   = "end_turn"
	stopCancelled = "cancelled"
	stopRefusal   = "refusal"
	stopMaxTokens = "max_tokens"
)

// textContent is a ContentBlock of type text.
func textContent(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// toolKinds ACP knows.
var toolKinds = map[string]bool{"read": true, "edit": true, "delete": true, "move": true, "search": true,
	"execute": true, "think": true, "fetch": true, "switch_mode": true, "other": true}

// toolStatus maps familiar's step status to ACP's.
func toolStatus(s string) string {
	switch s {
	case "running":
		return "in_progress"
	case "completed", "failed", "pending":
		return s
	}
	return "pending"
}
