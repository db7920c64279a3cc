package callback_test

import (
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/callback"
)

func TestRedacted(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"https://example.com/hooks/done?token=s3cret#s3cret", "https://example.com/hooks/done"},
		{"https://user:pa55@example.com:8443/a%2Fb?x=1", "https://example.com:8443/a%2Fb"},
		{"http://127.0.0.1:9/", "http://127.0.0.1:9/"},
		{"https://example.com", "https://example.com"},
		{"://bad?token=s3cret", "(a callback_url that does not parse)"},
	} {
		if got := callback.Redacted(tt.in); got != tt.want {
			t.Errorf("Redacted(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
