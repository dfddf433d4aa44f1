package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/texts"
)

// A task's whole texts: what events and notifications clip (maxText) is kept
// whole and fetched by reference (task/text).

// texts is the store of a task's whole texts: clipped ones under its
// directory, and the tool outputs claude persisted in its config dir.
func (o *Orchestrator) texts(id string) *texts.Store {
	dir := o.taskDir(id)
	return texts.New(dir, filepath.Join(dir, "claude"))
}

// clipText clips s for a question or a summary, keeping the whole behind a
// reference. A failure to store is logged: the clipped text still goes out.
func (o *Orchestrator) clipText(id, s string) (clipped, ref string) {
	clipped, ref, err := o.texts(id).Clip(s, maxText)
	if err != nil {
		o.logger.Warn("store clipped text", "task", id, "err", err)
		c, _ := clip(s)
		return c, ""
	}
	return clipped, ref
}

// TaskText is task/text.
func (o *Orchestrator) TaskText(ctx context.Context, p *protocol.TaskTextParams) (*protocol.TaskTextResult, error) {
	if _, err := o.get(p.ID); err != nil {
		return nil, err
	}
	page, err := o.texts(p.ID).Read(p.Ref, p.Offset, p.EffectiveLimit())
	switch {
	case errors.Is(err, texts.ErrInvalidRef):
		return nil, protocol.InvalidParams("ref", err.Error())
	case errors.Is(err, texts.ErrNotFound):
		return nil, protocol.NotFound("text", p.Ref)
	case errors.Is(err, texts.ErrBadRange):
		return nil, protocol.InvalidParams("offset", err.Error())
	case err != nil:
		return nil, fmt.Errorf("read text: %w", err)
	}
	// Secrets are masked in what familiar sends, as everywhere else; the
	// offsets stay those of the whole text.
	return &protocol.TaskTextResult{Data: o.maskString(page.Data), Offset: page.Offset, NextOffset: page.NextOffset,
		Size: page.Size, Truncated: page.More}, nil
}
