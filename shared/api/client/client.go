package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/run"
)

// Client calls one agentsfleet API with one key. It is safe for concurrent
// use.
type Client struct {
	base string // scheme://host[:port], no trailing slash
	key  string
	http *http.Client
	busy time.Duration // Follow's poll interval while events arrive
	idle time.Duration // the most Follow waits between polls
}

// Option changes a Client.
type Option func(*Client)

// WithHTTPClient sends the requests with h instead of a client with a 30
// second timeout.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithPoll sets how often Follow polls: every busy while events arrive,
// backing off to idle when none do (defaults 500 ms and 2 s).
func WithPoll(busy, idle time.Duration) Option {
	return func(c *Client) { c.busy, c.idle = busy, max(busy, idle) }
}

// New returns a client of the API at baseURL, http(s)://host[:port] with
// no path beyond "/", sending key as its bearer token ("" sends none). A
// URL of another shape is an error that says what is wrong.
func New(baseURL, key string, opts ...Option) (*Client, error) {
	base, err := checkBase(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, key: key, http: &http.Client{Timeout: 30 * time.Second},
		busy: 500 * time.Millisecond, idle: 2 * time.Second}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// URL is the API's base URL, as the client uses it.
func (c *Client) URL() string { return c.base }

func checkBase(raw string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("API URL %q: %s; it must be http(s)://host[:port], such as http://127.0.0.1:8080", raw, why)
	}
	if strings.TrimSpace(raw) == "" {
		return bad("it is empty")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad("it is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" || u.Host == "" {
			return bad("it has no http:// or https://")
		}
		return bad("its scheme is " + u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return bad("it has no host")
	case u.User != nil:
		return bad("it carries a user name; give the key separately")
	case u.Path != "" && u.Path != "/":
		return bad("it has a path (" + u.Path + "); the API's routes are under /v1 of the host itself")
	case u.RawQuery != "" || u.Fragment != "":
		return bad("it has a query or fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("its port is not a number from 1 to 65535")
		}
	}
	return u.Scheme + "://" + u.Host, nil
}

// Error is an error answer of the API: {"error": {"code", "message"}} and
// its HTTP status. Code is a stable product code (UZ-KEY-401, …), or
// "internal_error", "not_found", …; an answer that was not the API's JSON
// (a proxy's page) has an empty Code and the status and start of the body
// in Message.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	}
	return e.Code + ": " + e.Message
}

// UnreachableError is a request that got no answer from the API at URL:
// nothing listening, a name that does not resolve, a timeout.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("could not reach the agentsfleet API at %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// do sends a request and decodes a JSON answer into out (nil: discarded).
// body is marshalled as JSON unless it is raw ([]byte, sent with ct).
func (c *Client) do(ctx context.Context, method, path string, body any, out any, header ...string) error {
	var rd io.Reader
	ct := "application/json"
	switch b := body.(type) {
	case nil:
	case rawBody:
		rd, ct = bytes.NewReader(b.data), b.contentType
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", wire.CLIUserAgent)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] != "" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &UnreachableError{URL: c.base, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &UnreachableError{URL: c.base, Err: fmt.Errorf("reading the answer to %s %s: %w", method, path, err)}
	}
	if resp.StatusCode >= 300 {
		return errorOf(resp.StatusCode, raw)
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s answered %d with a body that is not what the API sends (%v): %s", method, path, resp.StatusCode, err, clip(raw))
	}
	return nil
}

func errorOf(status int, raw []byte) *Error {
	var body struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != nil && body.Error.Code != "" {
		return &Error{Status: status, Code: body.Error.Code, Message: body.Error.Message}
	}
	msg := clip(raw)
	if msg == "" {
		msg = "an empty answer; is this URL agentsfleet's API?"
	} else {
		msg = "an answer that is not the API's: " + msg
	}
	return &Error{Status: status, Message: msg}
}

func clip(raw []byte) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}

// rawBody is a request body sent as it is.
type rawBody struct {
	data        []byte
	contentType string
}

// The API's shapes, defined once in package wire.
type (
	Fleet         = wire.Fleet
	FleetPage     = wire.FleetPage
	Applied       = wire.Applied
	RunStarted    = wire.RunStarted
	RunSummary    = wire.RunSummary
	Run           = wire.Run
	RunPage       = wire.RunPage
	EgressPage    = wire.EgressPage
	Decided       = wire.Decided
	Schedule      = wire.Schedule
	NewSchedule   = wire.NewSchedule
	SchedulePatch = wire.SchedulePatch
	Key           = wire.Key
	NewKey        = wire.NewKey
)

func seg(s string) string { return url.PathEscape(s) }

// ApplyFleet puts a Definition (TOML, or JSON) as fleet name's next
// revision, or its first. contentType is application/toml or
// application/json ("": the API guesses from the first character). A bad
// Definition is an *Error with code UZ-DEF-400 whose message names the line
// and field; a key without a tool's scope UZ-KEY-403.
func (c *Client) ApplyFleet(ctx context.Context, name string, definition []byte, contentType string) (Applied, error) {
	var out Applied
	err := c.do(ctx, http.MethodPut, "/v1/fleets/"+seg(name), rawBody{definition, contentType}, &out)
	return out, err
}

// Fleets returns a page of fleets from cursor ("" for the first).
func (c *Client) Fleets(ctx context.Context, cursor string) (FleetPage, error) {
	var out FleetPage
	err := c.do(ctx, http.MethodGet, "/v1/fleets"+query("cursor", cursor), nil, &out)
	return out, err
}

// Fleet returns one fleet with its current Definition.
func (c *Client) Fleet(ctx context.Context, name string) (Fleet, error) {
	var out Fleet
	err := c.do(ctx, http.MethodGet, "/v1/fleets/"+seg(name), nil, &out)
	return out, err
}

// Pause pauses a fleet: it starts no runs until resumed.
func (c *Client) Pause(ctx context.Context, name string) (Fleet, error) {
	var out Fleet
	err := c.do(ctx, http.MethodPost, "/v1/fleets/"+seg(name)+"/pause", nil, &out)
	return out, err
}

// Resume resumes a paused fleet.
func (c *Client) Resume(ctx context.Context, name string) (Fleet, error) {
	var out Fleet
	err := c.do(ctx, http.MethodPost, "/v1/fleets/"+seg(name)+"/resume", nil, &out)
	return out, err
}

// RotateWebhookSecret creates or rotates the fleet's webhook secret and
// returns it; the API shows it this once.
func (c *Client) RotateWebhookSecret(ctx context.Context, name string) (string, error) {
	var out struct {
		Secret string `json:"secret"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/fleets/"+seg(name)+"/webhook-secret", nil, &out)
	return out.Secret, err
}

// StartOptions are a run start's optional parts.
type StartOptions struct {
	// IdempotencyKey makes a retry with the same key (by the same API key,
	// within a day) return the first run instead of starting another.
	IdempotencyKey string
	// CallbackURL receives the run's result when it ends, signed with the
	// fleet's webhook secret.
	CallbackURL string
	// ConversationID is the run whose conversation this one goes on with.
	ConversationID string
}

// StartRun starts a run of fleet on input.
func (c *Client) StartRun(ctx context.Context, fleet, input string, opt StartOptions) (RunStarted, error) {
	body := wire.StartRequest{Input: &input, CallbackURL: opt.CallbackURL, ConversationID: opt.ConversationID}
	var out RunStarted
	err := c.do(ctx, http.MethodPost, "/v1/fleets/"+seg(fleet)+"/runs", body, &out, "Idempotency-Key", opt.IdempotencyKey)
	return out, err
}

// Runs returns a page of fleet's runs, newest first, from cursor ("" for
// the first).
func (c *Client) Runs(ctx context.Context, fleet, cursor string) (RunPage, error) {
	var out RunPage
	err := c.do(ctx, http.MethodGet, "/v1/fleets/"+seg(fleet)+"/runs"+query("cursor", cursor), nil, &out)
	return out, err
}

// Run returns one run.
func (c *Client) Run(ctx context.Context, id string) (Run, error) {
	var out Run
	err := c.do(ctx, http.MethodGet, "/v1/runs/"+seg(id), nil, &out)
	return out, err
}

// Egress returns a page of the run's egress log, oldest first, from cursor
// ("" for the first); its Next is "" on the last page.
func (c *Client) Egress(ctx context.Context, id, cursor string) (EgressPage, error) {
	var out EgressPage
	err := c.do(ctx, http.MethodGet, "/v1/runs/"+seg(id)+"/egress"+query("cursor", cursor), nil, &out)
	return out, err
}

// eventsPage is the most events one Events call asks for (the API's
// MaxEventsPage).
const eventsPage = 500

// Events returns the run's events with seq above after (0: from the
// start), up to a page of them, and next, the after of the following call:
// the last seq returned, or after again when there is nothing new.
func (c *Client) Events(ctx context.Context, id string, after int64) ([]run.Event, int64, error) {
	var out struct {
		Events []run.Event `json:"events"`
		Next   int64       `json:"next"`
	}
	path := fmt.Sprintf("/v1/runs/%s/events?after=%d&limit=%d", seg(id), after, eventsPage)
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, after, err
	}
	return out.Events, out.Next, nil
}

// Cancel cancels a queued, running or waiting run; an ended one is an
// *Error with status 409 saying how it ended.
func (c *Client) Cancel(ctx context.Context, id string) (RunStarted, error) {
	var out RunStarted
	err := c.do(ctx, http.MethodPost, "/v1/runs/"+seg(id)+"/cancel", nil, &out)
	return out, err
}

// Decide approves or denies (decision) approval approvalID of run id, a
// call the run waits on, with an optional note the model is told.
func (c *Client) Decide(ctx context.Context, id, approvalID string, decision run.Decision, note string) (Decided, error) {
	var out Decided
	err := c.do(ctx, http.MethodPost, "/v1/runs/"+seg(id)+"/approvals/"+seg(approvalID), wire.Decision{Decision: decision, Note: note}, &out)
	return out, err
}

// Follow calls fn with each of the run's events with seq above after, in
// order, as they are committed, polling every 500 ms while events arrive
// and backing off to 2 s while none do, until run.ended; then it returns
// the run. The run's status, answer, error and usage are run.ended's (the
// run's record may settle a moment after its last event). A run that ends
// without a run.ended (cancelled before it started) is returned once its
// record says it ended. fn runs on the caller's goroutine.
func (c *Client) Follow(ctx context.Context, id string, after int64, fn func(run.Event)) (Run, error) {
	wait := c.busy
	for {
		evs, next, err := c.Events(ctx, id, after)
		if err != nil {
			return Run{}, err
		}
		var end *run.RunEnded
		for _, ev := range evs {
			fn(ev)
			if ev.Type == run.EventRunEnded && ev.Agent == "" {
				end = new(run.RunEnded)
				if err := json.Unmarshal(ev.Data, end); err != nil {
					return Run{}, fmt.Errorf("follow run %s: run.ended: %w", id, err)
				}
			}
		}
		after = next
		if end != nil {
			run, err := c.Run(ctx, id)
			if err != nil {
				return Run{}, err
			}
			run.SetResult(end.Result)
			return run, nil
		}
		if len(evs) == eventsPage {
			continue // more already there
		}
		if len(evs) > 0 {
			wait = c.busy
		} else {
			// Nothing new: a run that ended without run.ended would keep
			// us here for ever, so look at its record.
			run, err := c.Run(ctx, id)
			if err != nil {
				return Run{}, err
			}
			if run.Ended() {
				if evs, _, err := c.Events(ctx, id, after); err != nil || len(evs) == 0 {
					return run, err
				}
				continue // its run.ended came meanwhile
			}
			wait = min(wait*2, c.idle)
		}
		select {
		case <-ctx.Done():
			return Run{}, fmt.Errorf("follow run %s: %w", id, ctx.Err())
		case <-time.After(wait):
		}
	}
}

func schedPath(fleet, id string) string {
	p := "/v1/fleets/" + seg(fleet) + "/schedules"
	if id != "" {
		p += "/" + seg(id)
	}
	return p
}

// Schedules returns the fleet's schedules. A deployment without schedules
// answers an *Error saying so.
func (c *Client) Schedules(ctx context.Context, fleet string) ([]Schedule, error) {
	var out struct {
		Schedules []Schedule `json:"schedules"`
	}
	err := c.do(ctx, http.MethodGet, schedPath(fleet, ""), nil, &out)
	return out.Schedules, err
}

// CreateSchedule creates a schedule of fleet.
func (c *Client) CreateSchedule(ctx context.Context, fleet string, s NewSchedule) (Schedule, error) {
	var out Schedule
	err := c.do(ctx, http.MethodPost, schedPath(fleet, ""), s, &out)
	return out, err
}

// UpdateSchedule changes a schedule.
func (c *Client) UpdateSchedule(ctx context.Context, fleet, id string, p SchedulePatch) (Schedule, error) {
	var out Schedule
	err := c.do(ctx, http.MethodPatch, schedPath(fleet, id), p, &out)
	return out, err
}

// DeleteSchedule deletes a schedule.
func (c *Client) DeleteSchedule(ctx context.Context, fleet, id string) error {
	return c.do(ctx, http.MethodDelete, schedPath(fleet, id), nil, nil)
}

// PauseSchedule pauses a schedule: it fires no runs until resumed.
func (c *Client) PauseSchedule(ctx context.Context, fleet, id string) (Schedule, error) {
	var out Schedule
	err := c.do(ctx, http.MethodPost, schedPath(fleet, id)+"/pause", nil, &out)
	return out, err
}

// ResumeSchedule resumes a paused schedule.
func (c *Client) ResumeSchedule(ctx context.Context, fleet, id string) (Schedule, error) {
	var out Schedule
	err := c.do(ctx, http.MethodPost, schedPath(fleet, id)+"/resume", nil, &out)
	return out, err
}

// RunSchedule starts a run of the schedule now.
func (c *Client) RunSchedule(ctx context.Context, fleet, id string) (RunStarted, error) {
	var out RunStarted
	err := c.do(ctx, http.MethodPost, schedPath(fleet, id)+"/run", nil, &out)
	return out, err
}

// CreateKey creates an API key with scopes, serving fleets (none: the
// fleets of the client's own key, every fleet for a deployment-wide key). A
// key grants only scopes it holds and fleets it serves itself (else an
// *Error UZ-KEY-403).
func (c *Client) CreateKey(ctx context.Context, name string, scopes []string, fleets ...string) (NewKey, error) {
	body := wire.KeyRequest{Name: name, Scopes: scopes, Fleets: fleets}
	var out NewKey
	err := c.do(ctx, http.MethodPost, "/v1/keys", body, &out)
	return out, err
}

// Keys lists the API keys, revoked ones included.
func (c *Client) Keys(ctx context.Context) ([]Key, error) {
	var out struct {
		Keys []Key `json:"keys"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/keys", nil, &out)
	return out.Keys, err
}

// RevokeKey revokes a key: it never authenticates again.
func (c *Client) RevokeKey(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/keys/"+seg(id), nil, nil)
}

func query(name, value string) string {
	if value == "" {
		return ""
	}
	return "?" + name + "=" + url.QueryEscape(value)
}
