package web

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentsfleet/agentsfleet/shared/secret"
)

//go:embed pushover.txt
var pushoverDescription string

// DefaultPushoverURL is Pushover's message API.
const DefaultPushoverURL = "https://api.pushover.net/1/messages.json"

// The fleet secrets pushover sends as the application token and the user
// (or group) key. They are filled here and never shown to the model.
const (
	PushoverTokenSecret = "PUSHOVER_TOKEN"
	PushoverUserSecret  = "PUSHOVER_USER"
)

// pushover sends a notification. The endpoint's host must be on the fleet's
// network host list and reached over https at a public address; the token
// and user key come from the fleet's secrets and are read only after that
// check. Redirects are not followed.
type pushover struct {
	net      *network
	endpoint string
}

type pushoverArgs struct {
	Message  string `json:"message"`
	Title    string `json:"title"`
	Priority *int   `json:"priority"`
	URL      string `json:"url"`
}

func newPushover(n *network, endpoint string) *pushover { return &pushover{net: n, endpoint: endpoint} }

func (*pushover) Name() string        { return ToolPushover }
func (*pushover) Description() string { return pushoverDescription }
func (*pushover) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"message":{"type":"string","maxLength":1024},` +
		`"title":{"type":"string","maxLength":250},` +
		`"priority":{"type":"integer","minimum":-2,"maximum":2,"default":0},` +
		`"url":{"type":"string","maxLength":512}` +
		`},"required":["message"],"additionalProperties":false}`)
}

func (t *pushover) Run(ctx context.Context, inv *Invocation, raw json.RawMessage) (Result, error) {
	var args pushoverArgs
	if err := decodeArgs(raw, &args); err != nil {
		return errorResult("pushover: %v", err), nil
	}
	switch {
	case strings.TrimSpace(args.Message) == "":
		return errorResult("pushover: argument \"message\" is required"), nil
	case utf8.RuneCountInString(args.Message) > 1024:
		return errorResult("pushover: message is %d characters; at most 1024", utf8.RuneCountInString(args.Message)), nil
	case utf8.RuneCountInString(args.Title) > 250:
		return errorResult("pushover: title is %d characters; at most 250", utf8.RuneCountInString(args.Title)), nil
	case utf8.RuneCountInString(args.URL) > 512:
		return errorResult("pushover: url is %d characters; at most 512", utf8.RuneCountInString(args.URL)), nil
	case args.Priority != nil && (*args.Priority < -2 || *args.Priority > 2):
		return errorResult("pushover: priority must be between -2 and 2, not %d", *args.Priority), nil
	case secret.HasRef(args.Message + args.Title + args.URL):
		return errorResult("pushover: refused: secret references are not filled in notifications, which leave agentsfleet"), nil
	}
	u, err := url.Parse(t.endpoint)
	if err != nil {
		return Result{}, fmt.Errorf("pushover endpoint %q: %w", t.endpoint, err)
	}
	r := route{tool: ToolPushover, httpsOnly: true, listed: true, hosts: inv.Hosts, maxRedirects: 0}
	if err := r.checkURL(u); err != nil {
		return errorResult("pushover: %v. Add %s to the fleet's network host list to send notifications. Nothing was sent", err, u.Hostname()), nil
	}
	for _, name := range []string{PushoverTokenSecret, PushoverUserSecret} {
		if !inv.Secrets.Has(name) {
			return errorResult("pushover: the fleet has no secret %s; pushover needs %s (application API token) and %s (user or group key). Nothing was sent",
				name, PushoverTokenSecret, PushoverUserSecret), nil
		}
	}
	token, err := inv.Secrets.Value(ctx, PushoverTokenSecret)
	if err != nil {
		return Result{}, err
	}
	user, err := inv.Secrets.Value(ctx, PushoverUserSecret)
	if err != nil {
		return Result{}, err
	}
	form := url.Values{"token": {token}, "user": {user}, "message": {args.Message}}
	if args.Title != "" {
		form.Set("title", args.Title)
	}
	if args.URL != "" {
		form.Set("url", args.URL)
	}
	if args.Priority != nil {
		form.Set("priority", strconv.Itoa(*args.Priority))
		if *args.Priority == 2 { // emergency: Pushover requires both
			form.Set("retry", "60")
			form.Set("expire", "3600")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, t.net.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return Result{}, fmt.Errorf("pushover request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "agentsfleet-pushover/1.0")
	client := &http.Client{Transport: t.net.listed, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return errorResult("pushover: not sent: %s", t.net.describe(ctx, err)), nil
	}
	defer resp.Body.Close()
	data, _, err := readCapped(resp.Body, maxRespBytes)
	if err != nil {
		return errorResult("pushover: reading Pushover's answer: %s", t.net.describe(ctx, err)), nil
	}
	t.net.log.Info("web request", "tool", ToolPushover, "run_id", inv.RunID, "host", u.Hostname(), "status", resp.StatusCode,
		"secrets", []string{PushoverTokenSecret, PushoverUserSecret})
	var answer struct {
		Status  int      `json:"status"`
		Request string   `json:"request"`
		Errors  []string `json:"errors"`
		Receipt string   `json:"receipt"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return errorResult("pushover: not sent: Pushover answered HTTP %d %s with a body that is not its JSON", resp.StatusCode, http.StatusText(resp.StatusCode)), nil
	}
	if answer.Status != 1 || resp.StatusCode != http.StatusOK {
		why := strings.Join(answer.Errors, "; ")
		if why == "" {
			why = "no reason given"
		}
		return errorResult("pushover: not sent: Pushover answered HTTP %d: %s", resp.StatusCode, why), nil
	}
	out := "Notification sent (Pushover request " + answer.Request + ")."
	if answer.Receipt != "" {
		out += " Emergency receipt " + answer.Receipt + "."
	}
	return Result{Output: out}, nil
}
