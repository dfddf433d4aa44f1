package orchestrator

import (
	"context"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/agent/screen"
	"github.com/familiar-dev/familiar/procs"
)

// Session is what the orchestrator needs of a running agent
// (*agent.Session). Its methods are safe for concurrent use.
type Session interface {
	SessionID() string
	PID() int
	Identity() procs.Identity
	Done() <-chan struct{}
	Answer(questionID string, a agent.Answer) error
	// AnswerDecided gives an answer familiar decided (timeout, policy),
	// waiting for a claude stopped by a signal to be continued.
	AnswerDecided(questionID string, a agent.Answer) error
	SendPrompt(text string) error
	Interrupt() error
	Input(raw []byte) error
	Resize(cols, rows int) error
	Screen() screen.Snapshot
	Stop(ctx context.Context) error
	// LowerPriority lowers the agent's niceness to nice (a prepared
	// claude, started at the priority of what a person waits for).
	LowerPriority(nice int) error
}

var _ Session = (*agent.Session)(nil)

// StartFunc starts an agent (agent.Start).
type StartFunc func(ctx context.Context, opts agent.Options) (Session, error)

func startClaude(ctx context.Context, opts agent.Options) (Session, error) {
	s, err := agent.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}
