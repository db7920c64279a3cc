//go:build linux

package ecs_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/token"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestTableHoldsNoToken tries to break into the sandboxes with what the
// table holds: a warm pool of ECS tasks (two idle, one claimed by a run)
// is recorded in the table, the table is read whole as a function that
// may read it could (a Scan of every item, every attribute), and every
// string found in it is presented to every sandbox, as its bearer token
// and as the token of its pinned TLS. No sandbox admits any of them; the
// runner's own clients still reach all three.
func TestTableHoldsNoToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	key := testKey(t)
	withKey := func(cfg ecs.Config) ecs.Config {
		cfg.Key = func(context.Context) (token.Key, error) { return key, nil }
		return cfg
	}
	l := newLauncher(t, withKey(f.config(f.standInResolve(t, "", ""))))
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "pool")
	if err := store.CreateTable(context.Background(), db, table); err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(pool.Config{Starter: l, Records: store.New(db, table), Target: map[fleet.SandboxSize]int{fleet.DefaultSandboxSize: 2}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { p.Drain(context.Background()) })
	if n, err := p.TopUp(ctx, fleet.DefaultSandboxSize); n != 2 || err != nil {
		t.Fatalf("TopUp = %d, %v; want 2 idle tasks", n, err)
	}
	claimed, err := p.Acquire(ctx, launch.Spec{RunID: "run-claimed", Fleet: "f", Size: fleet.DefaultSandboxSize})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if _, err := p.TopUp(ctx, fleet.DefaultSandboxSize); err != nil {
		t.Fatal(err)
	}

	// What the table gives away: every string of every item.
	var loot []string
	var items int
	var urls []string
	var start map[string]ddbtypes.AttributeValue
	for {
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range out.Items {
			items++
			for name, v := range item {
				s, ok := v.(*ddbtypes.AttributeValueMemberS)
				if !ok {
					continue
				}
				loot = append(loot, s.Value)
				if name == "url" {
					urls = append(urls, s.Value)
				}
			}
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	if items != 3 || len(urls) != 3 {
		t.Fatalf("the table holds %d items with %d URLs; want the three sandboxes' records", items, len(urls))
	}
	// Each string, and each of its runs of visible characters, as a token.
	var guesses []string
	for _, s := range loot {
		guesses = append(guesses, s)
		guesses = append(guesses, strings.FieldsFunc(s, func(r rune) bool { return r < '!' || r > '~' || r == '"' || r == ',' })...)
	}

	// The pin's way in: a client pinned to a guessed token's key.
	// The bearer's way in: TLS unverified, the guess in Authorization.
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the attacker's client
	}}
	for _, url := range urls {
		for _, g := range guesses {
			if c, err := client.Pinned(client.Config{URL: url, Token: g}); err == nil {
				if res, err := c.Call(ctx, "list", []byte(`{}`), ""); err == nil {
					t.Errorf("sandbox %s admitted a pinned client with %q from the table: %.80q", url, g, res.Output)
				}
			}
			req, err := http.NewRequest(http.MethodPost, url+"/v1/tools/list", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+g)
			resp, err := insecure.Do(req)
			if err != nil {
				t.Fatalf("POST %s: %v", req.URL, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("sandbox %s answered %d to a bearer token from the table, want 401", url, resp.StatusCode)
			}
		}
	}
	// The runner itself still gets in, from the records and the key alone:
	// another invocation (its own launcher, the same key) resumes the
	// claimed run's task and claims an idle one.
	other, err := pool.New(pool.Config{Starter: newLauncher(t, withKey(f.config(f.standInResolve(t, "", "")))), Records: store.New(db, table)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, run := range []string{"run-claimed", "run-new"} {
		sb, err := other.Acquire(ctx, launch.Spec{RunID: run, Fleet: "f", Size: fleet.DefaultSandboxSize})
		if err != nil {
			t.Fatalf("Acquire(%s) from the records = %v", run, err)
		}
		if run == "run-claimed" && sb.ID != claimed.ID {
			t.Errorf("Acquire(%s) from the records = %s, want its task %s", run, sb.ID, claimed.ID)
		}
		if res, err := sb.Client.Call(ctx, "list", []byte(`{}`), ""); err != nil || res.IsError {
			t.Errorf("the runner's call to %s = %+v, %v", sb.ID, res, err)
		}
	}
}
