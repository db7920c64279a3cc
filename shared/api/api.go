package api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Config is what an API needs.
type Config struct {
	Store *store.Store
	// Invoker starts the runner on the runs the API records.
	Invoker invoke.Invoker
	// Schedules keeps the fleets' schedules (shared/schedule/keeper); nil
	// answers the schedule routes with 400, saying schedules are not
	// configured in this deployment.
	Schedules Schedules
	// Callbacks checks callback_url values; nil refuses every callback_url.
	Callbacks *callback.Sender
	// Now is the clock webhooks are checked against; nil means time.Now.
	Now func() time.Time
	// Log receives a line for each internal error, with its request id;
	// nil means slog.Default().
	Log *slog.Logger
}

// API is agentsfleet's HTTP API (DESIGN.md §11), one http.Handler for the
// Lambda behind API Gateway (HandleGateway) and for `agentsfleet dev`
// (ServeHTTP). Every route but the webhook needs `Authorization: Bearer
// KEY` with the route's scopes (shared/scope) and serving the fleet the
// route acts on (Routes, store.Key.Serves); the webhook needs the fleet's
// signature instead. Errors are {"error": {"code", "message"}} with
// the status of the code (Status); an internal error says only that it
// happened and its request id, the log says the rest. Safe for concurrent
// use.
type API struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
}

// New returns the API over cfg.
func New(cfg Config) (*API, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("api: no store")
	case cfg.Invoker == nil:
		return nil, errors.New("api: no invoker")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &API{cfg: cfg, log: cfg.Log, mux: http.NewServeMux()}
	if a.log == nil {
		a.log = slog.Default()
	}
	if err := a.routes(); err != nil {
		return nil, err
	}
	return a, nil
}

// ServeHTTP serves the API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// Limits of request bodies.
const (
	// MaxBody is the largest request body (a Definition, a run's input).
	MaxBody = 1 << 20
	// MaxHookBody is the largest webhook delivery.
	MaxHookBody = 256 << 10
)

// handler is a route's work: it answers with a status and a value to
// encode as JSON, or an error.
type handler func(r *http.Request, key store.Key) (int, any, error)

func (a *API) authenticate(r *http.Request) (store.Key, error) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		return store.Key{}, fault.New(fault.KeyUnauthorized, "send an API key as Authorization: Bearer KEY")
	}
	return a.cfg.Store.Authenticate(r.Context(), strings.TrimSpace(tok))
}

// errorBody is every error's body.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// fail answers err: its code and message when it carries a product code,
// else 500 with a request id, the details only in the log.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := Status(err)
	var fe *fault.Error
	code, ok := fault.CodeOf(err)
	switch {
	case status == http.StatusInternalServerError || !ok:
		id := requestID()
		a.log.Error("request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "error", err)
		writeJSON(w, http.StatusInternalServerError, errorBody{errorDetail{Code: "internal_error",
			Message: "the request failed inside agentsfleet; its request id is " + id}})
	case errors.As(err, &fe):
		writeJSON(w, status, errorBody{errorDetail{Code: code.ID(), Message: fe.Msg}})
	default:
		// A code without a message of its own (a *fleet.ScopeError, a bare
		// code): the chain's text without its wrapping.
		writeJSON(w, status, errorBody{errorDetail{Code: code.ID(), Message: innermost(err)}})
	}
}

// innermost is the message of the last error in err's chain that says more
// than the code alone.
func innermost(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, isCode := e.(fault.Code); isCode {
			break
		}
		msg = e.Error()
	}
	return msg
}

func requestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "req_" + hex.EncodeToString(b)
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

// readBody reads a request body of at most max bytes.
func readBody(r *http.Request, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return nil, fault.New(fault.RequestInvalid, "the request body could not be read: %v", err)
	}
	if int64(len(b)) > max {
		return nil, fault.New(fault.RequestInvalid, "the request body is more than %d bytes", max)
	}
	return b, nil
}

// decode reads a JSON object into v, refusing unknown fields and anything
// after it; the error names the field that is wrong.
func decode(r *http.Request, v any) error {
	b, err := readBody(r, MaxBody)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fault.New(fault.RequestInvalid, "the request body is not what %s %s takes: %s", r.Method, r.URL.Path, jsonProblem(err))
	}
	if dec.More() {
		return fault.New(fault.RequestInvalid, "the request body must be one JSON object, with nothing after it")
	}
	return nil
}

// jsonProblem says what is wrong with a body in a person's words.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be %s, not %s", te.Field, jsonType(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("it is not valid JSON (at byte %d: %v)", se.Offset, se)
	case errors.Is(err, io.EOF):
		return "it is empty; send a JSON object"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return err.Error()
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "bool":
		return "true or false"
	}
	if strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint") || strings.HasPrefix(kind, "float") {
		return "a number"
	}
	return kind
}

// needed reports a missing field.
func needed(field string) error {
	return fault.New(fault.RequestInvalid, "field %q is required", field)
}

// notFound answers a path no route serves.
func (a *API) notFound(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, errorBody{errorDetail{Code: "not_found",
		Message: fmt.Sprintf("no route %s %s; the API's routes are under /v1 (DESIGN.md §11)", r.Method, r.URL.Path)}})
}

// pageLimit reads ?limit=, 0 when absent.
func pageLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 1 || fmt.Sprint(n) != v {
		return 0, fault.New(fault.RequestInvalid, "limit must be a whole number from 1, not %q", v)
	}
	return n, nil
}

// grantable refuses scopes the key does not hold itself: a key can only
// make keys weaker than or as strong as itself.
func grantable(key store.Key, scopes []string) error {
	var over []string
	for _, s := range scopes {
		if !slices.Contains(key.Scopes, s) {
			over = append(over, s)
		}
	}
	if len(over) > 0 {
		return fault.New(fault.ScopeMissing, "a key can grant only scopes it holds; this one lacks %s", strings.Join(over, ", "))
	}
	return nil
}
