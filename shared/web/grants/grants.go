// Package grants reads, for the webtools function, what a web tool call
// may use: the tools, network host list and secret ids of the calling
// agent, from its run's pinned Definition in the store (and a child's
// share of it), never from the caller (web.Config.Grants). So a caller that
// is compromised, or forges a request, cannot send a fleet's secret to a
// host the fleet does not list, nor name a secret the fleet does not
// declare.
package grants

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// Store is web.Grants over the table. It reads a run and, for a child, the
// child on every call (their status decides); a revision never changes, so
// each is read and parsed once per Store.
type Store struct {
	st *store.Store

	mu   sync.Mutex
	defs map[revision]*fleet.Definition
}

type revision struct {
	fleet string
	n     int64
}

// maxDefs bounds the revisions a Store keeps; past it the cache starts over.
const maxDefs = 256

// New returns the grants of the table st.
func New(st *store.Store) *Store { return &Store{st: st, defs: map[revision]*fleet.Definition{}} }

var _ web.Grants = (*Store)(nil)

// Grant returns what agent childID ("" for the run's own) of run runID
// holds, refusing a run that has ended and a child that is not running.
// The run's own grant shares its lists with the cached Definition: the
// caller must not change them (web.Service only reads them).
func (g *Store) Grant(ctx context.Context, runID, childID string) (web.Grant, error) {
	r, err := g.st.GetRun(ctx, runID)
	if err != nil {
		return web.Grant{}, err
	}
	if r.Status.Terminal() {
		return web.Grant{}, fmt.Errorf("run %s has ended (%s)", runID, r.Status)
	}
	def, err := g.definition(ctx, r.Fleet, r.Revision)
	if err != nil {
		return web.Grant{}, err
	}
	out := web.Grant{Fleet: r.Fleet, Tools: def.Tools, Hosts: def.Hosts, Secrets: def.Secrets, MCP: def.MCP, ToolTimeout: def.Limits.ToolTimeout(),
		Approve: def.ApproveSecrets, Granted: r.SecretGrants}
	if childID == "" {
		return out, nil
	}
	c, err := g.st.GetChild(ctx, runID, childID)
	if err != nil {
		return web.Grant{}, err
	}
	if c.Status != run.ChildRunning {
		return web.Grant{}, fmt.Errorf("child %s of run %s has ended (%s)", childID, runID, c.Status)
	}
	share := map[string]string{}
	for _, name := range c.Secrets {
		if id, ok := def.Secrets[name]; ok {
			share[name] = id
		}
	}
	return web.Grant{Fleet: r.Fleet, Tools: c.Tools, Hosts: c.Hosts, Secrets: share, MCP: def.MCP, ToolTimeout: def.Limits.ToolTimeout(),
		Approve: def.ApproveSecrets, Granted: r.SecretGrants}, nil
}

// FleetSecrets returns the secret ids of fleet's current Definition.
func (g *Store) FleetSecrets(ctx context.Context, name string) (map[string]string, error) {
	rev, err := g.st.CurrentRevision(ctx, name)
	if err != nil {
		return nil, err
	}
	def, err := parse(rev)
	if err != nil {
		return nil, err
	}
	return def.Secrets, nil
}

func (g *Store) definition(ctx context.Context, name string, n int64) (*fleet.Definition, error) {
	key := revision{name, n}
	g.mu.Lock()
	def, ok := g.defs[key]
	g.mu.Unlock()
	if ok {
		return def, nil
	}
	rev, err := g.st.GetRevision(ctx, name, n)
	if err != nil {
		return nil, err
	}
	if def, err = parse(rev); err != nil {
		return nil, err
	}
	g.mu.Lock()
	if len(g.defs) >= maxDefs {
		clear(g.defs)
	}
	g.defs[key] = def
	g.mu.Unlock()
	return def, nil
}

func parse(rev store.Revision) (*fleet.Definition, error) {
	def, err := fleet.ParseJSON(rev.Definition)
	if err != nil {
		return nil, fmt.Errorf("fleet %s revision %d cannot be read: %w", rev.Fleet, rev.Number, err)
	}
	return def, nil
}
