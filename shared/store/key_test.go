package store_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestCreateKeyAndAuthenticate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k, secret, err := e.CreateKey(ctx, "ci deploy", []string{scope.RunsWrite, fleet.ScopeFiles, scope.RunsWrite})
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	if got, want := k.Scopes, []string{"runs:write", "tools:files"}; !slices.Equal(got, want) {
		t.Fatalf("Scopes = %q, want %q sorted without repeats", got, want)
	}
	if !strings.HasPrefix(secret, "afk_"+k.ID+"_") || len(secret) != 78 {
		t.Fatalf("key = %q (%d chars), want afk_%s_ and 43 characters", secret, len(secret), k.ID)
	}
	if !k.Has(scope.RunsWrite) || k.Has(scope.RunsRead) {
		t.Fatalf("Has: runs:write %v, runs:read %v; want true, false", k.Has(scope.RunsWrite), k.Has(scope.RunsRead))
	}
	got, err := e.Authenticate(ctx, secret)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if got.ID != k.ID || got.Name != "ci deploy" || !slices.Equal(got.Scopes, k.Scopes) || got.Revoked {
		t.Fatalf("Authenticate = %+v, want %+v", got, k)
	}
	if !got.LastUsedAt.Equal(e.clock.Now()) {
		t.Fatalf("LastUsedAt = %v, want %v", got.LastUsedAt, e.clock.Now())
	}

	// The item holds a 32-byte hash, never the secret.
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "KEYS"}, "sk": &types.AttributeValueMemberS{Value: "KEY#" + k.ID}}})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem: %v, %v", out, err)
	}
	for name, av := range out.Item {
		if s, ok := av.(*types.AttributeValueMemberS); ok && strings.Contains(secret, s.Value) && len(s.Value) > 30 {
			t.Errorf("attribute %s holds part of the key: %q", name, s.Value)
		}
	}
	if h, ok := out.Item["hash"].(*types.AttributeValueMemberB); !ok || len(h.Value) != 32 {
		t.Errorf("hash = %v, want 32 bytes", out.Item["hash"])
	}
}

func TestAuthenticateRefusesWithOneCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k, secret, err := e.CreateKey(ctx, "ops", []string{scope.FleetsRead})
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := e.CreateKey(ctx, "other", []string{scope.FleetsRead})
	if err != nil {
		t.Fatal(err)
	}
	revokedKey, revoked, err := e.CreateKey(ctx, "old", []string{scope.FleetsRead})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RevokeKey(ctx, revokedKey.ID); err != nil {
		t.Fatal(err)
	}
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	secretPart := secret[len("afk_")+len(k.ID)+1:]
	otherSecret := other[len(other)-43:]
	tests := []struct{ name, key string }{
		{"empty", ""},
		{"bearer prefix left on", "Bearer " + secret},
		{"truncated", secret[:len(secret)-1]},
		{"one more character", secret + "A"},
		{"one secret character changed", flip(secret, len(secret)-5)},
		{"another key's secret", "afk_" + k.ID + "_" + otherSecret},
		{"unknown id", "afk_key_0000000000000000000000000_" + secretPart},
		{"wrong prefix", "afx_" + secret[4:]},
		{"separator replaced", secret[:4+len(k.ID)] + "-" + secretPart},
		{"not base64url", secret[:len(secret)-2] + "+/"},
		{"non-canonical last character", secret[:len(secret)-1] + nonCanonical(secret[len(secret)-1])},
		{"revoked", revoked},
	}
	var msgs []string
	for _, tt := range tests {
		_, err := e.Authenticate(ctx, tt.key)
		if !errorsIs(err, fault.KeyUnauthorized) {
			t.Errorf("%s: Authenticate = %v, want %s", tt.name, err, fault.KeyUnauthorized.ID())
			continue
		}
		msgs = append(msgs, err.Error())
	}
	for _, m := range msgs {
		if m != msgs[0] {
			t.Errorf("messages differ: %q and %q; want one message that does not say why", msgs[0], m)
		}
	}
	if _, err := e.Authenticate(ctx, secret); err != nil {
		t.Fatalf("the good key after all that: %v", err)
	}
}

// nonCanonical returns a base64url character that decodes to the same 32
// bytes as c in the last position when the encoder is not strict (the last
// character of 43 carries 2 unused bits).
func nonCanonical(c byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, c)
	return string(alphabet[i^1]) // flips an unused low bit
}

func TestLastUsedIsWrittenAtMostHourly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, secret, err := e.CreateKey(ctx, "ops", []string{scope.RunsRead})
	if err != nil {
		t.Fatal(err)
	}
	first := e.clock.Now()
	steps := []struct {
		advance time.Duration
		want    time.Time
	}{
		{0, first},
		{30 * time.Minute, first},
		{29 * time.Minute, first},
		{time.Minute, first.Add(time.Hour)},
	}
	for i, st := range steps {
		e.clock.Advance(st.advance)
		if _, err := e.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
		keys, err := e.ListKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := keys[0].LastUsedAt; !got.Equal(st.want) {
			t.Fatalf("step %d: LastUsedAt = %v, want %v", i, got, st.want)
		}
	}
}

func TestListAndRevokeKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ids []string
	for _, n := range []string{"a", "b", "c"} {
		k, _, err := e.CreateKey(ctx, n, []string{scope.KeysAdmin})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, k.ID)
		e.clock.Advance(time.Millisecond)
	}
	if err := e.RevokeKey(ctx, ids[1]); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	e.clock.Advance(time.Hour)
	if err := e.RevokeKey(ctx, ids[1]); err != nil {
		t.Fatalf("RevokeKey again: %v", err)
	}
	keys, err := e.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, k := range keys {
		gotIDs = append(gotIDs, k.ID)
	}
	if !slices.Equal(gotIDs, ids) {
		t.Fatalf("ListKeys ids = %q, want %q (oldest first)", gotIDs, ids)
	}
	if !keys[1].Revoked || keys[0].Revoked || keys[2].Revoked {
		t.Fatalf("revoked = %v %v %v, want false true false", keys[0].Revoked, keys[1].Revoked, keys[2].Revoked)
	}
	if want := e.clock.Now().Add(-time.Hour).Truncate(time.Second); !keys[1].RevokedAt.Equal(want) {
		t.Fatalf("RevokedAt = %v, want the first revocation %v", keys[1].RevokedAt, want)
	}
	if !slices.Equal(keys[0].Scopes, []string{scope.KeysAdmin}) || keys[0].Name != "a" {
		t.Fatalf("keys[0] = %+v", keys[0])
	}
	for _, id := range []string{"key_0000000000000000000000000z", "nope", ""} {
		wantCode(t, e.RevokeKey(ctx, id), fault.KeyNotFound)
	}
}

func TestCreateKeyRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name     string
		keyName  string
		scopes   []string
		wantText []string
	}{
		{"unknown scopes", "ops", []string{scope.RunsRead, "runs:delete", "admin"}, []string{`"runs:delete"`, `"admin"`, "fleets:write", "tools:execute"}},
		{"no scopes", "ops", nil, []string{"at least one scope", "keys:admin"}},
		{"empty name", "", []string{scope.RunsRead}, []string{"key name"}},
		{"control character in name", "a\nb", []string{scope.RunsRead}, []string{"key name"}},
		{"long name", strings.Repeat("x", 129), []string{scope.RunsRead}, []string{"key name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, secret, err := e.CreateKey(ctx, tt.keyName, tt.scopes)
			wantCode(t, err, fault.RequestInvalid)
			if secret != "" {
				t.Errorf("secret = %q, want none", secret)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
	if keys, err := e.ListKeys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("ListKeys = %v, %v; want no keys", keys, err)
	}
}

// TestKeyFleets: a key keeps the fleets it serves, sorted, through every
// read; a key naming none serves every fleet; bad lists are refused.
func TestKeyFleets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k, secret, err := e.CreateKey(ctx, "team a", []string{scope.RunsRead}, "b", "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := k.Fleets, []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("Fleets = %q, want %q", got, want)
	}
	got, err := e.Authenticate(ctx, secret)
	if err != nil || !slices.Equal(got.Fleets, k.Fleets) {
		t.Fatalf("Authenticate = %+v, %v; want fleets %q", got, err, k.Fleets)
	}
	if byID, err := e.GetKey(ctx, k.ID); err != nil || !slices.Equal(byID.Fleets, k.Fleets) || byID.Name != "team a" {
		t.Fatalf("GetKey = %+v, %v", byID, err)
	}
	e.clock.Advance(time.Second) // keys list in creation order
	all, _, err := e.CreateKey(ctx, "all", []string{scope.RunsRead})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := e.ListKeys(ctx)
	if err != nil || len(keys) != 2 || !slices.Equal(keys[0].Fleets, k.Fleets) || keys[1].Fleets != nil {
		t.Fatalf("ListKeys = %+v, %v", keys, err)
	}
	for _, tt := range []struct {
		key    store.Key
		fleet  string
		serves bool
	}{{k, "a", true}, {k, "b", true}, {k, "c", false}, {k, "", false}, {all, "c", true}} {
		if got := tt.key.Serves(tt.fleet); got != tt.serves {
			t.Errorf("%s.Serves(%q) = %v, want %v", tt.key.Name, tt.fleet, got, tt.serves)
		}
	}
	for _, tt := range []struct {
		key    store.Key
		fleets []string
		covers bool
	}{{k, []string{"a"}, true}, {k, []string{"a", "b"}, true}, {k, []string{"a", "c"}, false}, {k, nil, false},
		{all, nil, true}, {all, []string{"z"}, true}} {
		if got := tt.key.Covers(tt.fleets); got != tt.covers {
			t.Errorf("%s.Covers(%q) = %v, want %v", tt.key.Name, tt.fleets, got, tt.covers)
		}
	}
	wantCode(t, func() error { _, err := e.GetKey(ctx, "key_0000000000000000000000000z"); return err }(), fault.KeyNotFound)
	wantCode(t, func() error { _, err := e.GetKey(ctx, "nope"); return err }(), fault.KeyNotFound)

	many := make([]string, store.MaxKeyFleets+1)
	for i := range many {
		many[i] = fmt.Sprintf("f%d", i)
	}
	for name, fleets := range map[string][]string{"bad name": {"a#b"}, "empty name": {""}, "too many": many} {
		_, secret, err := e.CreateKey(ctx, name, []string{scope.RunsRead}, fleets...)
		wantCode(t, err, fault.RequestInvalid)
		if secret != "" {
			t.Errorf("%s: a key was made", name)
		}
	}
}
