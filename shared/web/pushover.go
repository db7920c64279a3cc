package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// pushoverHost is the host of Pushover's API, which a fleet lists to send
// notifications.
const pushoverHost = spec.PushoverHost

// DefaultPushoverURL is Pushover's message API.
const DefaultPushoverURL = "https://" + pushoverHost + "/1/messages.json"

// The fleet secrets pushover sends as the application token and the user
// (or group) key. They are filled here and never shown to the model.
const (
	PushoverTokenSecret = spec.PushoverTokenSecret
	PushoverUserSecret  = spec.PushoverUserSecret
)

// Pushover's limits, from its contract.
const (
	maxPriority     = spec.MaxPushoverPriority // emergency
	emergencyRetry  = spec.EmergencyRetry
	emergencyExpire = spec.EmergencyExpire
)

// pushover sends a notification. The endpoint's host must be on the
// invocation's host list and reached over https at a public address; the
// token and user key come from the fleet's secrets and are read only after
// that check. Redirects are not followed.
type pushover struct {
	*tool.Def[spec.PushoverArgs]
	net      *network
	endpoint string
}

var _ tool.Tool = (*pushover)(nil)

func newPushover(n *network, endpoint string) *pushover {
	return &pushover{Def: spec.Pushover, net: n, endpoint: endpoint}
}

func (t *pushover) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	if secret.HasRef(args.Message + args.Title + args.URL) {
		return tool.Errorf("pushover: refused: secret references are not filled in notifications, which leave agentsfleet"), nil
	}
	inv := invocationFrom(ctx)
	u, err := url.Parse(t.endpoint)
	if err != nil {
		return tool.Result{}, fmt.Errorf("pushover endpoint %q: %w", t.endpoint, err)
	}
	r := route{tool: wire.ToolPushover, httpsOnly: true, listed: true, hosts: inv.Hosts, maxRedirects: 0}
	if err := r.check(ctx, http.MethodPost, u); err != nil {
		return tool.Errorf("pushover: %v. Add %s to the fleet's network host list to send notifications. Nothing was sent", err, u.Hostname()), nil
	}
	for _, name := range []string{PushoverTokenSecret, PushoverUserSecret} {
		if !inv.Secrets.Has(name) {
			return tool.Errorf("pushover: the fleet has no secret %s; pushover needs %s (application API token) and %s (user or group key). Nothing was sent",
				name, PushoverTokenSecret, PushoverUserSecret), nil
		}
	}
	if name := inv.unapproved([]string{PushoverTokenSecret, PushoverUserSecret}, u.Hostname()); name != "" {
		recorderFrom(ctx).refuse(ctx, http.MethodPost, u, run.RuleSecretApproval, nil)
		return tool.Errorf("pushover: refused: the secret %s says approve = true, and no person approved its use for %s in this run. Nothing was sent", name, u.Hostname()), nil
	}
	token, err := inv.Secrets.Value(ctx, PushoverTokenSecret)
	if err != nil {
		return tool.Result{}, err
	}
	user, err := inv.Secrets.Value(ctx, PushoverUserSecret)
	if err != nil {
		return tool.Result{}, err
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
		if *args.Priority == maxPriority {
			form.Set("retry", strconv.Itoa(int(emergencyRetry/time.Second)))
			form.Set("expire", strconv.Itoa(int(emergencyExpire/time.Second)))
		}
	}
	ctx, cancel := context.WithTimeout(withSecretNames(ctx, []string{PushoverTokenSecret, PushoverUserSecret}), t.net.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return tool.Result{}, fmt.Errorf("pushover request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "agentsfleet-pushover/1.0")
	client := &http.Client{Transport: t.net.listed, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return tool.Errorf("pushover: not sent: %s", t.net.describe(ctx, err)), nil
	}
	defer resp.Body.Close()
	data, _, err := readScreened(ctx, resp.Body, maxRespBytes, inv.Secrets)
	if err != nil {
		return tool.Errorf("pushover: reading Pushover's answer: %s", t.net.describe(ctx, err)), nil
	}
	t.net.log.Info("web request", "tool", wire.ToolPushover, "run_id", inv.RunID, "host", u.Hostname(), "status", resp.StatusCode,
		"secrets", []string{PushoverTokenSecret, PushoverUserSecret})
	var answer struct {
		Status  int      `json:"status"`
		Request string   `json:"request"`
		Errors  []string `json:"errors"`
		Receipt string   `json:"receipt"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return tool.Errorf("pushover: not sent: Pushover answered HTTP %d %s with a body that is not its JSON", resp.StatusCode, http.StatusText(resp.StatusCode)), nil
	}
	if answer.Status != 1 || resp.StatusCode != http.StatusOK {
		why := strings.Join(answer.Errors, "; ")
		if why == "" {
			why = "no reason given"
		}
		return tool.Errorf("pushover: not sent: Pushover answered HTTP %d: %s", resp.StatusCode, why), nil
	}
	out := "Notification sent (Pushover request " + answer.Request + ")."
	if answer.Receipt != "" {
		out += " Emergency receipt " + answer.Receipt + "."
	}
	return tool.Text(out), nil
}
