package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/api/webhook"
	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestWebhookRefusedBeforeAnyRead sends deliveries that cannot be good
// whatever the fleet's secret (stale, from the future, malformed, missing)
// to an API whose table answers nothing: each is refused with 401, and the
// table is never asked.
func TestWebhookRefusedBeforeAnyRead(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "no table here", http.StatusInternalServerError)
	}))
	defer dead.Close()
	db := dynamodb.NewFromConfig(awstest.Config(t), func(o *dynamodb.Options) {
		o.BaseEndpoint, o.RetryMaxAttempts = &dead.URL, 1
	})
	local := invoke.NewLocal(nil)
	defer local.Close()
	a, err := api.New(api.Config{Store: store.New(db, "nothing"), Invoker: local})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()

	body := `{"alert": "disk full"}`
	now := time.Now()
	signed := func(at time.Time) (string, string) { return webhook.Sign("afw_any", at, []byte(body)) }
	staleTS, staleSig := signed(now.Add(-6 * time.Minute))
	futureTS, futureSig := signed(now.Add(6 * time.Minute))
	goodTS, goodSig := signed(now)
	for _, tt := range []struct {
		name string
		h    []string
	}{
		{"stale", []string{webhook.TimestampHeader, staleTS, webhook.SignatureHeader, staleSig}},
		{"from the future", []string{webhook.TimestampHeader, futureTS, webhook.SignatureHeader, futureSig}},
		{"no headers", nil},
		{"no signature", []string{webhook.TimestampHeader, goodTS}},
		{"signature not hex", []string{webhook.TimestampHeader, goodTS, webhook.SignatureHeader, "v1=" + strings.Repeat("zz", 32)}},
		{"signature without a scheme", []string{webhook.TimestampHeader, goodTS, webhook.SignatureHeader, strings.TrimPrefix(goodSig, "v1=")}},
		{"timestamp not a number", []string{webhook.TimestampHeader, "soon", webhook.SignatureHeader, goodSig}},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/hooks/ops", strings.NewReader(body))
		for i := 0; i+1 < len(tt.h); i += 2 {
			req.Header.Set(tt.h[i], tt.h[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(string(b), "UZ-HOOK-401") {
			t.Errorf("%s = %d %s, want 401 UZ-HOOK-401", tt.name, resp.StatusCode, b)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the refusals asked the table %d times, want none", n)
	}
}
