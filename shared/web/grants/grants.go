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

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// Store is web.Grants over the table. It reads a run, its revision and,
// for a child, the child: three GetItems per call.
type Store struct{ St *store.Store }

var _ web.Grants = Store{}

// Grant returns what agent childID ("" for the run's own) of run runID
// holds, refusing a run that has ended and a child that is not running.
func (g Store) Grant(ctx context.Context, runID, childID string) (web.Grant, error) {
	r, err := g.St.GetRun(ctx, runID)
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
	out := web.Grant{Fleet: r.Fleet, Tools: def.Tools, Hosts: def.Hosts, Secrets: def.Secrets}
	if childID == "" {
		return out, nil
	}
	c, err := g.St.GetChild(ctx, runID, childID)
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
	return web.Grant{Fleet: r.Fleet, Tools: c.Tools, Hosts: c.Hosts, Secrets: share}, nil
}

// FleetSecrets returns the secret ids of fleet's current Definition.
func (g Store) FleetSecrets(ctx context.Context, name string) (map[string]string, error) {
	rev, err := g.St.CurrentRevision(ctx, name)
	if err != nil {
		return nil, err
	}
	def, err := parse(rev)
	if err != nil {
		return nil, err
	}
	return def.Secrets, nil
}

func (g Store) definition(ctx context.Context, name string, n int64) (*fleet.Definition, error) {
	rev, err := g.St.GetRevision(ctx, name, n)
	if err != nil {
		return nil, err
	}
	return parse(rev)
}

func parse(rev store.Revision) (*fleet.Definition, error) {
	def, err := fleet.ParseJSON(rev.Definition)
	if err != nil {
		return nil, fmt.Errorf("fleet %s revision %d cannot be read: %w", rev.Fleet, rev.Number, err)
	}
	return def, nil
}
