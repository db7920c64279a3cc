package secret_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/secret"
)

// TestJSONSecretsAreScreenedFieldByField: a secret that is a JSON object
// (database credentials, as Secrets Manager keeps them) is screened whole
// and each long enough string field alone, wherever it appears.
func TestJSONSecretsAreScreenedFieldByField(t *testing.T) {
	t.Parallel()
	creds := `{"username":"app_owner","password":"s3cr3t-Pa55","engine":"postgres","port":5432,"host":"db.internal","nested":{"token":"tok-778899"},"list":["k-1234"],"db":"app"}`
	set := secret.NewSet(secret.Map{"db": creds}, map[string]string{"DB": "db"})
	out, err := set.Redact(context.Background(), "login app_owner / s3cr3t-Pa55 at db.internal, token tok-778899, key k-1234, base64 "+
		base64.StdEncoding.EncodeToString([]byte("s3cr3t-Pa55"))+", whole "+creds+", port 5432, db app")
	if err != nil {
		t.Fatal(err)
	}
	for _, leaked := range []string{"app_owner", "s3cr3t-Pa55", "db.internal", "tok-778899", "k-1234", base64.StdEncoding.EncodeToString([]byte("s3cr3t-Pa55")), `"password"`} {
		if strings.Contains(out, leaked) {
			t.Errorf("the screened text holds %q: %s", leaked, out)
		}
	}
	// Fields shorter than MinFieldLen are not secrets by themselves.
	if !strings.Contains(out, "port 5432, db app") {
		t.Errorf("short fields were screened: %s", out)
	}
}

// TestSafeCut: a cut is moved before any spelling of a value it would
// split — raw, base64, a JSON object's field — and left where it is
// otherwise, including before a partial guess that is no whole value.
func TestSafeCut(t *testing.T) {
	t.Parallel()
	const token = "tok_abcdefghijklmnop"
	set := secret.NewSet(secret.Map{"t": token, "j": `{"password":"hunter2-hunter2"}`}, map[string]string{"T": "t", "J": "j"})
	if err := set.LoadAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(token))
	longest := 0
	for _, v := range []string{token, `{"password":"hunter2-hunter2"}`, "hunter2-hunter2"} {
		for _, f := range secret.Forms(v) {
			longest = max(longest, len(f))
		}
	}
	if got := set.Margin(); got != longest-1 {
		t.Fatalf("Margin = %d; want the longest spelling less one, %d", got, longest-1)
	}
	for _, tc := range []struct {
		name, before, value string
	}{
		{"raw", "0123456789", token},
		{"base64", "0123456789", b64},
		{"json field", "0123456789", "hunter2-hunter2"},
	} {
		text := []byte(tc.before + tc.value + "tail-of-the-page")
		for in := 1; in < len(tc.value); in++ {
			if got := set.SafeCut(text, len(tc.before)+in); got != len(tc.before) {
				t.Errorf("%s: a cut %d bytes into the value is moved to %d; want %d, before it", tc.name, in, got, len(tc.before))
			}
		}
		if got := set.SafeCut(text, len(tc.before)+len(tc.value)); got != len(tc.before)+len(tc.value) {
			t.Errorf("%s: a cut right after the value is moved to %d", tc.name, got)
		}
	}
	guess := []byte("0123456789" + token[:8] + "WRONGWRONGWRONG")
	if got := set.SafeCut(guess, 18); got != 18 {
		t.Errorf("a cut after a partial guess is moved to %d; want it kept at 18", got)
	}
	if got := set.SafeCut([]byte("short"), 100); got != 5 {
		t.Errorf("a cut past the end = %d; want the length", got)
	}
}
