package slack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	goslack "github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/gateway"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The paths the Handler serves (DESIGN.md §11): the Slack app's Event
// Subscriptions and Interactivity request URLs.
const (
	EventsPath        = "/slack/events"
	InteractivityPath = "/slack/interactivity"
)

// MaxBody is the largest request body the Handler reads; Slack's events
// and interaction payloads are far smaller.
const MaxBody = 1 << 20

// ReplyTimeout bounds each short answer the Handler posts before it
// acknowledges, so that the acknowledgement stays well within Slack's 3
// seconds even when Slack's Web API is slow.
const ReplyTimeout = 1500 * time.Millisecond

// Poster posts the Handler's own short answers in a Slack thread: how to
// route a channel, why a run could not start, that a run was stopped.
// WebPoster is the implementation over Slack's Web API.
type Poster interface {
	// Reply posts text in the thread threadTS of channel.
	Reply(ctx context.Context, channel, threadTS, text string) error
}

// Config is what a Handler needs.
type Config struct {
	Store *store.Store
	// Invoker starts the runner on the runs the Handler records.
	Invoker invoke.Invoker
	// SigningSecret is the Slack app's signing secret; every request is
	// verified with it.
	SigningSecret string
	// DefaultFleet is the fleet of a channel without a route
	// (AGENTSFLEET_SLACK_DEFAULT_FLEET); "" for none: a mention there is
	// answered with how to route the channel.
	DefaultFleet string
	// Now is the clock signatures are checked against; nil means time.Now.
	Now func() time.Time
	// Log receives a line for each request that failed inside agentsfleet
	// and each answer that could not be posted; nil means slog.Default().
	Log *slog.Logger
	// Post posts the Handler's short answers; nil logs them instead. Where
	// it is also an Ephemeraler, a person the fleet's access lists refuse
	// is told why in a message only they see; where it is a GroupLister,
	// those lists may name user groups.
	Post Poster
}

// Handler serves POST /slack/events and POST /slack/interactivity. Every
// request is verified (Verify) before its body is parsed: one that fails
// is answered 401 and changes nothing. Safe for concurrent use.
type Handler struct {
	cfg    Config
	log    *slog.Logger
	mux    *http.ServeMux
	groups groups
}

// NewHandler returns the Handler over cfg: it needs a Store, an Invoker
// and a signing secret.
func NewHandler(cfg Config) (*Handler, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("slack: no store")
	case cfg.Invoker == nil:
		return nil, errors.New("slack: no invoker")
	case cfg.SigningSecret == "":
		return nil, errors.New("slack: no signing secret")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{cfg: cfg, log: cfg.Log, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.mux.HandleFunc("POST "+EventsPath, h.events)
	h.mux.HandleFunc("POST "+InteractivityPath, h.interactivity)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s; Slack's are POST %s and POST %s", r.Method, r.URL.Path, EventsPath, InteractivityPath))
	})
	return h, nil
}

// ServeHTTP serves the two endpoints.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// verified reads the body of r and verifies it. On failure it has answered
// (400 for a body too large, 401 for a signature) and ok is false.
func (h *Handler) verified(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, fault.RequestInvalid.ID(), "the request body could not be read")
		return nil, false
	}
	if len(body) > MaxBody {
		writeError(w, http.StatusRequestEntityTooLarge, fault.RequestInvalid.ID(), fmt.Sprintf("the request body is more than %d bytes", MaxBody))
		return nil, false
	}
	if err := Verify(h.cfg.SigningSecret, r.Header, body, h.cfg.Now()); err != nil {
		// Which check failed is safe to say: it tells nothing of the secret.
		h.log.Warn("slack: request refused", "path", r.URL.Path, "error", err)
		writeError(w, http.StatusUnauthorized, fault.SlackUnauthorized.ID(), err.Error())
		return nil, false
	}
	return body, true
}

// internal answers an error inside agentsfleet: 500 with a request id,
// the details only in the log. Slack retries an event delivery answered so.
func (h *Handler) internal(w http.ResponseWriter, r *http.Request, err error) {
	var b [8]byte
	rand.Read(b[:])
	id := "req_" + hex.EncodeToString(b[:])
	h.log.Error("slack: request failed", "request_id", id, "path", r.URL.Path, "error", err)
	writeError(w, http.StatusInternalServerError, "internal_error", "the request failed inside agentsfleet; its request id is "+id)
}

// answer posts text in a thread, within ReplyTimeout, logging a failure:
// an answer that does not arrive must not make Slack retry the request.
func (h *Handler) answer(ctx context.Context, channel, threadTS, text string) {
	if h.cfg.Post == nil {
		h.log.Warn("slack: no poster configured; the answer is not posted", "channel", channel, "thread_ts", threadTS, "text", text)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReplyTimeout)
	defer cancel()
	if err := h.cfg.Post.Reply(ctx, channel, threadTS, text); err != nil {
		h.log.Error("slack: answer not posted", "channel", channel, "thread_ts", threadTS, "error", err)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
	}
}

// writeError answers {"error": {"code", "message"}}, the API's shape.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// HandleGateway serves one API Gateway HTTP API request (payload format
// 2.0) as ServeHTTP would: the slack function's handler.
func (h *Handler) HandleGateway(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return gateway.Serve(ctx, h, req), nil
}

// WebPoster is the Poster over Slack's Web API: chat.postMessage with the
// bot token the client holds.
type WebPoster struct {
	client *goslack.Client
}

var _ Poster = (*WebPoster)(nil)

// NewWebPoster returns a Poster posting with client (slack.New(token,
// slack.OptionAPIURL(…)) to point it at another Web API).
func NewWebPoster(client *goslack.Client) *WebPoster { return &WebPoster{client: client} }

// Ephemeral posts text to user alone with chat.postEphemeral, in the thread
// threadTS of channel ("" for the channel).
func (p *WebPoster) Ephemeral(ctx context.Context, channel, threadTS, user, text string) error {
	opts := []goslack.MsgOption{goslack.MsgOptionText(text, false)}
	if threadTS != "" {
		opts = append(opts, goslack.MsgOptionTS(threadTS))
	}
	if _, err := p.client.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
		return fmt.Errorf("post to %s alone in Slack channel %s: %w", user, channel, err)
	}
	return nil
}

// GroupMembers lists a user group's members with usergroups.users.list
// (the usergroups:read scope).
func (p *WebPoster) GroupMembers(ctx context.Context, group string) ([]string, error) {
	members, err := p.client.GetUserGroupMembersContext(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("list the members of Slack user group %s: %w", group, err)
	}
	return members, nil
}

// Update replaces the message ts of channel with text, in one plain
// section (its buttons gone), with chat.update.
func (p *WebPoster) Update(ctx context.Context, channel, ts, text string) error {
	section := goslack.NewSectionBlock(goslack.NewTextBlockObject(goslack.PlainTextType, text, false, false), nil, nil)
	if _, _, _, err := p.client.UpdateMessageContext(ctx, channel, ts, goslack.MsgOptionText(text, false), goslack.MsgOptionBlocks(section)); err != nil {
		return fmt.Errorf("update Slack message %s/%s: %w", channel, ts, err)
	}
	return nil
}

// Reply posts text in the thread with chat.postMessage. Slack's refusal
// (not_in_channel, channel_not_found, …) comes back as the error.
func (p *WebPoster) Reply(ctx context.Context, channel, threadTS, text string) error {
	_, _, err := p.client.PostMessageContext(ctx, channel, goslack.MsgOptionText(text, false), goslack.MsgOptionTS(threadTS))
	if err != nil {
		return fmt.Errorf("post in Slack thread %s/%s: %w", channel, threadTS, err)
	}
	return nil
}
