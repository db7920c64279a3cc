package sandboxtest

import (
	"strings"
	"testing"
)

func TestReportLine(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	report(&b, "sandboxd/trivial-tool", []Figure{{"http_p50", 142.4, "µs"}, {"direct_p50", 26.12, "µs"}, {"ratio", 5.452, "×"}},
		[]Target{{"http_p50", 150}, {"ratio", 5}, {"nope", 1}})
	want := "bench sandboxd/trivial-tool: http_p50 142 µs  direct_p50 26.1 µs  ratio 5.45 × | target http_p50 ≤ 150: ok, target ratio ≤ 5.00: MISSED, target nope ≤ 1.00: no such figure\n"
	if got := b.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
