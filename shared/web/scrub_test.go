package web_test

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// TestScrub: the scrub request answers the text with every value of the
// fleet's secrets (read from Secrets Manager) replaced by its reference,
// encodings included, over the Lambda payload as well.
func TestScrub(t *testing.T) {
	t.Parallel()
	ids, src := storeSecrets(t)
	svc, err := web.NewService(web.Config{Secrets: src, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	text := "check the repo with " + ghToken + ", then log in as admin:" + url.QueryEscape(dbPass) +
		" (or " + base64.StdEncoding.EncodeToString([]byte(ghToken)) + "); «secret:GH_TOKEN» stays"
	want := "check the repo with «secret:GH_TOKEN», then log in as admin:«secret:DB_PASS» (or «secret:GH_TOKEN»); «secret:GH_TOKEN» stays"
	payload, _ := json.Marshal(wire.ScrubRequest("acme", ids, text))
	out, err := svc.Invoke(t.Context(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Output  string `json:"output"`
		IsError bool   `json:"is_error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Output != want {
		t.Fatalf("scrub answered %+v\nwant %q", res, want)
	}

	// No secrets: the text as it is, nothing read.
	before := src.count()
	got, err := svc.Call(t.Context(), wire.ScrubRequest("acme", nil, text))
	if err != nil || got.Output != text || src.count() != before {
		t.Fatalf("scrub without secrets = %+v, %v (reads %d → %d)", got, err, before, src.count())
	}
}

// TestScrubBatch: a batch is answered with each text screened on its own,
// in order, the secrets read once; a value split across two texts is in
// neither, and stays as it is.
func TestScrubBatch(t *testing.T) {
	t.Parallel()
	ids, src := storeSecrets(t)
	svc, err := web.NewService(web.Config{Secrets: src, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	half := len(ghToken) / 2
	texts := []string{"token " + ghToken, "", "nothing here", "pass " + dbPass + " and " + ghToken, ghToken[:half], ghToken[half:]}
	want := []string{"token «secret:GH_TOKEN»", "", "nothing here", "pass «secret:DB_PASS» and «secret:GH_TOKEN»", ghToken[:half], ghToken[half:]}
	payload, _ := json.Marshal(wire.ScrubBatchRequest("acme", ids, texts))
	out, err := svc.Invoke(t.Context(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Output  string `json:"output"`
		IsError bool   `json:"is_error"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.IsError {
		t.Fatalf("batch scrub answered %s, %v", out, err)
	}
	var got []string
	if err := json.Unmarshal([]byte(res.Output), &got); err != nil {
		t.Fatalf("batch scrub output %q is not a JSON array of strings: %v", res.Output, err)
	}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
		t.Fatalf("batch scrub = %q\nwant %q", got, want)
	}
	if n := src.count(); n != len(ids) {
		t.Errorf("the batch read secrets %d times, want each of the %d once", n, len(ids))
	}

	// An unreadable secret: an error answer, and no text comes back.
	res2, err := svc.Call(t.Context(), wire.ScrubBatchRequest("acme", map[string]string{"GONE": "no/such/secret"}, []string{"the text"}))
	if err != nil || !res2.IsError || strings.Contains(res2.Output, "the text") {
		t.Fatalf("batch scrub with an unreadable secret = %+v, %v; want an error answer without the text", res2, err)
	}
}

func TestScrubRefusals(t *testing.T) {
	t.Parallel()
	svc, err := web.NewService(web.Config{Secrets: secret.Map{}, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{}`, `{"text": 3}`, `[]`, ``, `{"texts": "x"}`, `{"texts": [1]}`, `{"text": "a", "texts": ["b"]}`} {
		res, err := svc.Call(t.Context(), wire.Request{Tool: wire.ToolScrub, Arguments: json.RawMessage(args)})
		if err != nil || !res.IsError || !strings.Contains(res.Output, `{"text": "…"}`) {
			t.Errorf("scrub(%s) = %+v, %v; want an error result", args, res, err)
		}
	}
	// A secret that cannot be read: an error answer naming it, and none
	// of the text comes back.
	res, err := svc.Call(t.Context(), wire.ScrubRequest("acme", map[string]string{"GONE": "no/such/secret"}, "the text"))
	if err != nil || !res.IsError || !strings.Contains(res.Output, "GONE") || strings.Contains(res.Output, "the text") {
		t.Fatalf("scrub with an unreadable secret = %+v, %v; want an error answer naming GONE, without the text", res, err)
	}
}
