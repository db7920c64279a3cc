package secret_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/secret"
)

func TestMain(m *testing.M) { awstest.Main(m) }

// counting is a Source that counts reads, to show the per-invocation cache.
type counting struct {
	secret.Map
	reads map[string]int
}

func (c *counting) SecretValue(ctx context.Context, id string) (string, error) {
	c.reads[id]++
	return c.Map.SecretValue(ctx, id)
}

func TestFill(t *testing.T) {
	t.Parallel()
	src := &counting{Map: secret.Map{"id/token": "tok-123", "id/quote": `a"b`}, reads: map[string]int{}}
	s := secret.NewSet(src, map[string]string{"TOKEN": "id/token", "QUOTE": "id/quote"})
	ctx := context.Background()

	got, names, err := s.Fill(ctx, "Bearer «secret:TOKEN» and «secret:TOKEN»", nil)
	if err != nil || got != "Bearer tok-123 and tok-123" || len(names) != 1 || names[0] != "TOKEN" {
		t.Fatalf("Fill = %q, %v, %v; want both references filled", got, names, err)
	}
	got, _, err = s.Fill(ctx, `{"q":"«secret:QUOTE»"}`, secret.JSONString)
	if err != nil || got != `{"q":"a\"b"}` {
		t.Fatalf("Fill(JSON) = %q, %v; want the value escaped for JSON", got, err)
	}
	if _, _, err := s.Fill(ctx, "«secret:TOKEN»", nil); err != nil {
		t.Fatal(err)
	}
	if src.reads["id/token"] != 1 {
		t.Fatalf("token read %d times, want 1 (cached for the invocation)", src.reads["id/token"])
	}
}

func TestFillErrors(t *testing.T) {
	t.Parallel()
	s := secret.NewSet(secret.Map{"id": "v4lue"}, map[string]string{"TOKEN": "id", "GONE": "missing-id"})
	ctx := context.Background()
	tests := []struct {
		text string
		want string
		is   error
	}{
		{"«secret:NOPE»", `unknown secret "NOPE": this fleet's secrets are GONE, TOKEN`, secret.ErrUnknown},
		{"«secret:bad name»", "malformed secret reference", nil},
		{"«secret:TOKEN", "malformed secret reference", nil},
		{"«secret:TOKEN» «secret:»", "malformed secret reference", nil},
		{"«secret:GONE»", "read secret GONE", nil},
	}
	for _, tt := range tests {
		got, _, err := s.Fill(ctx, tt.text, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Fill(%q) = %q, %v; want error containing %q", tt.text, got, err, tt.want)
			continue
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("Fill(%q) error %v is not %v", tt.text, err, tt.is)
		}
		if strings.Contains(err.Error(), "v4lue") || strings.Contains(got, "v4lue") {
			t.Errorf("Fill(%q) leaked the value: %q, %v", tt.text, got, err)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	const tok = "s3cr3t/+token=="
	const short = "s3cr3t"
	s := secret.NewSet(secret.Map{"a": tok, "b": short}, map[string]string{"TOKEN": "a", "SHORT": "b"})
	tests := []struct{ in, want string }{
		{"x " + tok + " y", "x «secret:TOKEN» y"},
		{"q=" + url.QueryEscape(tok), "q=«secret:TOKEN»"},
		{"p/" + url.PathEscape(tok), "p/«secret:TOKEN»"},
		{"b64 " + base64.StdEncoding.EncodeToString([]byte(tok)), "b64 «secret:TOKEN»"},
		{"b64url " + base64.RawURLEncoding.EncodeToString([]byte(tok)), "b64url «secret:TOKEN»"},
		{"only " + short + "!", "only «secret:SHORT»!"}, // the shorter value alone
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		got, err := s.Redact(context.Background(), tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Redact(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestRedactWithholdsWhenASecretCannotBeRead(t *testing.T) {
	t.Parallel()
	s := secret.NewSet(secret.Map{}, map[string]string{"TOKEN": "missing"})
	got, err := s.Redact(context.Background(), "text")
	if err == nil || got != "" {
		t.Fatalf("Redact = %q, %v; want no text and an error", got, err)
	}
}

func TestSecretsManager(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := secretsmanager.NewFromConfig(awstest.Config(t))
	name := awstest.UniqueName(t, "fleet-token")
	if _, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: &name, SecretString: ptr("ghp_from_sm")}); err != nil {
		t.Fatal(err)
	}
	bin := awstest.UniqueName(t, "fleet-bin")
	if _, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: &bin, SecretBinary: []byte{1, 2}}); err != nil {
		t.Fatal(err)
	}
	s := secret.NewSet(secret.SecretsManager{Client: client}, map[string]string{
		"GH": name, "BIN": bin, "NONE": awstest.UniqueName(t, "never-created"),
	})
	got, _, err := s.Fill(ctx, "token «secret:GH»", nil)
	if err != nil || got != "token ghp_from_sm" {
		t.Fatalf("Fill = %q, %v; want the value from Secrets Manager", got, err)
	}
	if _, err := s.Value(ctx, "BIN"); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Fatalf("Value(BIN) = %v, want a binary-secret error", err)
	}
	if _, err := s.Value(ctx, "NONE"); err == nil {
		t.Fatal("Value(NONE) succeeded, want an error")
	}
}

func ptr[T any](v T) *T { return &v }
