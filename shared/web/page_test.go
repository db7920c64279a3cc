package web

import (
	"testing"
)

func TestPageTextKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body, contentType string
		want              string
		ok                bool
	}{
		{"plain\r\n\r\n\r\n\r\ntext  \n", "text/plain; charset=utf-8", "plain\n\ntext", true},
		{"caf\xe9", "text/plain; charset=iso-8859-1", "café", true},
		{`{"a":1}`, "application/problem+json", `{"a":1}`, true},
		{"<html><head><title>T</title><script>x()</script></head><body><nav>menu</nav><p>Short page.</p><footer>f</footer></body></html>", "", "T\n\nShort page.", true},
		{"\x89PNG\r\n\x1a\n", "image/png", "", false},
		{"%PDF-1.7", "application/pdf", "", false},
	}
	for _, tt := range tests {
		got, ok := pageText([]byte(tt.body), tt.contentType, nil)
		if ok != tt.ok || got != tt.want {
			t.Errorf("pageText(%q, %q) = %q, %v; want %q, %v", tt.body, tt.contentType, got, ok, tt.want, tt.ok)
		}
	}
}
