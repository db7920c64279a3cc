package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
)

// The improvement chat's and the revision history's shapes.
type (
	Improvement        = wire.Improvement
	ImprovementMessage = wire.ImprovementMessage
	Proposal           = wire.Proposal
	Revision           = wire.Revision
	RevisionPage       = wire.RevisionPage
	RevisionDiff       = wire.RevisionDiff
)

// StartImprovement opens an improvement chat about fleet with its first
// message and returns the chat's id; its agent answers asynchronously
// (Improvement shows status thinking until it has).
func (c *Client) StartImprovement(ctx context.Context, fleet, message string) (string, error) {
	var out wire.ImprovementStarted
	err := c.do(ctx, http.MethodPost, "/v1/fleets/"+seg(fleet)+"/improvements", wire.ImprovementRequest{Message: message}, &out)
	return out.ImprovementID, err
}

// PostImprovement adds a message to chat id; an *Error UZ-IMP-423 while
// its agent is still answering the last one.
func (c *Client) PostImprovement(ctx context.Context, id, message string) error {
	return c.do(ctx, http.MethodPost, "/v1/improvements/"+seg(id)+"/messages", wire.ImprovementRequest{Message: message}, nil)
}

// Improvement returns chat id: its status, messages and proposal.
func (c *Client) Improvement(ctx context.Context, id string) (Improvement, error) {
	var out Improvement
	err := c.do(ctx, http.MethodGet, "/v1/improvements/"+seg(id), nil, &out)
	return out, err
}

// ApplyImprovement applies chat id's proposal and returns the revision it
// became; an *Error UZ-IMP-409 when the fleet changed since the proposal's
// from_revision, UZ-KEY-403 when the key lacks a scope it needs.
func (c *Client) ApplyImprovement(ctx context.Context, id string) (int64, error) {
	var out wire.ImprovementApplied
	err := c.do(ctx, http.MethodPost, "/v1/improvements/"+seg(id)+"/apply", nil, &out)
	return out.Revision, err
}

// DiscardImprovement closes chat id without applying anything.
func (c *Client) DiscardImprovement(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/v1/improvements/"+seg(id)+"/discard", nil, nil)
}

// Revisions returns a page of fleet's revisions, newest first, from cursor
// ("" for the first).
func (c *Client) Revisions(ctx context.Context, fleet, cursor string) (RevisionPage, error) {
	var out RevisionPage
	err := c.do(ctx, http.MethodGet, "/v1/fleets/"+seg(fleet)+"/revisions"+query("cursor", cursor), nil, &out)
	return out, err
}

// RevisionDiff returns the diff of fleet's revision to against revision
// from, as unified TOML.
func (c *Client) RevisionDiff(ctx context.Context, fleet string, from, to int64) (RevisionDiff, error) {
	var out RevisionPage
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/fleets/%s/revisions?limit=1&from=%d&to=%d", seg(fleet), from, to), nil, &out)
	if err != nil || out.Diff == nil {
		return RevisionDiff{}, err
	}
	return *out.Diff, nil
}

// RestoreRevision makes revision rev's Definition fleet's next revision.
func (c *Client) RestoreRevision(ctx context.Context, fleet string, rev int64) (Applied, error) {
	var out Applied
	err := c.do(ctx, http.MethodPost, fmt.Sprintf("/v1/fleets/%s/revisions/%d/restore", seg(fleet), rev), nil, &out)
	return out, err
}
