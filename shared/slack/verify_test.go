package slack_test

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/slack"
)

// Slack's own example, from "Verifying requests from Slack": a slash
// command's body, the app's signing secret, the timestamp and the signature
// Slack computed for them.
const (
	exampleSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	exampleTimestamp = "1531420618"
	exampleBody      = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	exampleSignature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestVerifySlacksExample(t *testing.T) {
	t.Parallel()
	at := time.Unix(1531420618, 0).Add(30 * time.Second)
	h := header(slack.TimestampHeader, exampleTimestamp, slack.SignatureHeader, exampleSignature)
	if err := slack.Verify(exampleSecret, h, []byte(exampleBody), at); err != nil {
		t.Fatalf("Verify(Slack's example) = %v, want nil", err)
	}
	ts, sig := slack.Sign(exampleSecret, time.Unix(1531420618, 0), []byte(exampleBody))
	if ts != exampleTimestamp || sig != exampleSignature {
		t.Fatalf("Sign(Slack's example) = %s %s, want %s %s", ts, sig, exampleTimestamp, exampleSignature)
	}
	// The same request six minutes later is stale.
	if err := slack.Verify(exampleSecret, h, []byte(exampleBody), at.Add(6*time.Minute)); !errors.Is(err, slack.ErrStale) {
		t.Fatalf("Verify(example, 6 min later) = %v, want ErrStale", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-signing"
	now := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	body := []byte(`{"type":"event_callback","event_id":"Ev1"}`)
	ts, sig := slack.Sign(secret, now, body)
	flip := func(s string) string { // the last hex digit changed
		last := s[len(s)-1]
		if last == '0' {
			return s[:len(s)-1] + "1"
		}
		return s[:len(s)-1] + "0"
	}
	oldTS, oldSig := slack.Sign(secret, now.Add(-5*time.Minute-time.Second), body)
	newTS, newSig := slack.Sign(secret, now.Add(5*time.Minute+time.Second), body)
	edgeTS, edgeSig := slack.Sign(secret, now.Add(-5*time.Minute), body)
	for _, tt := range []struct {
		name   string
		secret string
		h      http.Header
		body   []byte
		want   error // nil: accepted
	}{
		{"valid", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, sig), body, nil},
		{"at the edge of the window", secret, header(slack.TimestampHeader, edgeTS, slack.SignatureHeader, edgeSig), body, nil},
		{"upper-case hex", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, "v0="+strings.ToUpper(sig[3:])), body, nil},
		{"tampered body", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, sig), append(bytes.Clone(body), ' '), slack.ErrSignature},
		{"empty body", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, sig), nil, slack.ErrSignature},
		{"tampered signature", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, flip(sig)), body, slack.ErrSignature},
		{"another timestamp", secret, header(slack.TimestampHeader, strconv.FormatInt(now.Unix()+1, 10), slack.SignatureHeader, sig), body, slack.ErrSignature},
		{"another secret", "other", header(slack.TimestampHeader, ts, slack.SignatureHeader, sig), body, slack.ErrSignature},
		{"stale", secret, header(slack.TimestampHeader, oldTS, slack.SignatureHeader, oldSig), body, slack.ErrStale},
		{"from the future", secret, header(slack.TimestampHeader, newTS, slack.SignatureHeader, newSig), body, slack.ErrStale},
		{"no headers", secret, header(), body, slack.ErrMissing},
		{"no signature", secret, header(slack.TimestampHeader, ts), body, slack.ErrMissing},
		{"no timestamp", secret, header(slack.SignatureHeader, sig), body, slack.ErrMissing},
		{"empty signature", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, ""), body, slack.ErrMissing},
		{"repeated signature", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, sig, slack.SignatureHeader, sig), body, slack.ErrMalformed},
		{"repeated timestamp", secret, header(slack.TimestampHeader, ts, slack.TimestampHeader, ts, slack.SignatureHeader, sig), body, slack.ErrMalformed},
		{"joined signatures", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, sig+","+sig), body, slack.ErrMalformed},
		{"v1 scheme", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, "v1="+sig[3:]), body, slack.ErrMalformed},
		{"bare hex", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, sig[3:]), body, slack.ErrMalformed},
		{"short signature", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, sig[:len(sig)-2]), body, slack.ErrMalformed},
		{"not hex", secret, header(slack.TimestampHeader, ts, slack.SignatureHeader, sig[:len(sig)-1]+"g"), body, slack.ErrMalformed},
		{"signed timestamp", secret, header(slack.TimestampHeader, "+"+ts, slack.SignatureHeader, sig), body, slack.ErrMalformed},
		{"leading zero", secret, header(slack.TimestampHeader, "0"+ts, slack.SignatureHeader, sig), body, slack.ErrMalformed},
		{"fractional timestamp", secret, header(slack.TimestampHeader, ts+".5", slack.SignatureHeader, sig), body, slack.ErrMalformed},
		{"huge timestamp", secret, header(slack.TimestampHeader, "99999999999999999999", slack.SignatureHeader, sig), body, slack.ErrMalformed},
		{"no secret configured", "", header(slack.TimestampHeader, ts, slack.SignatureHeader, sig), body, slack.ErrNoSecret},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := slack.Verify(tt.secret, tt.h, tt.body, now)
			if tt.want == nil && err != nil {
				t.Fatalf("got %v, want accepted", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestVerifyAgreesWithSlackGo checks Sign against slack-go's own verifier,
// which reads the wall clock (so it can be given only a fresh signature),
// and shows what Verify refuses that slack-go would accept: a repeated
// header, of which slack-go reads the first value only.
func TestVerifyAgreesWithSlackGo(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-signing"
	body := []byte(`{"type":"event_callback"}`)
	ts, sig := slack.Sign(secret, time.Now(), body)
	h := header(slack.TimestampHeader, ts, slack.SignatureHeader, sig)
	sv, err := goslack.NewSecretsVerifier(h, secret)
	if err != nil {
		t.Fatal(err)
	}
	sv.Write(body)
	if err := sv.Ensure(); err != nil {
		t.Fatalf("slack-go refuses what Sign made: %v", err)
	}
	if err := slack.Verify(secret, h, body, time.Now()); err != nil {
		t.Fatalf("Verify refuses what slack-go accepts: %v", err)
	}
	h.Add(slack.SignatureHeader, "v0="+strings.Repeat("0", 64))
	if err := slack.Verify(secret, h, body, time.Now()); !errors.Is(err, slack.ErrMalformed) {
		t.Fatalf("Verify(repeated signature header) = %v, want ErrMalformed", err)
	}
}
