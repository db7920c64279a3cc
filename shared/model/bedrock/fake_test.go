package bedrock_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentsfleet/agentsfleet/shared/model/bedrock"
)

// fake is a local Bedrock runtime endpoint: it answers
// POST /model/{modelId}/converse-stream with the next of its replies,
// framed with the SDK's own event-stream encoder, and keeps what each
// request carried. A request Bedrock would refuse (refusal) it answers as
// Bedrock does, 400 ValidationException, without using a reply.
type fake struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	received []received
}

// reply is one answer of the fake: an error response (status ≠ 0) or a
// 200 event stream of frames, gap apart, then tail's raw bytes. With
// stall, nothing is sent until the client goes away; with hold, the
// stream stays open after the frames until then.
type reply struct {
	status  int
	errType string // X-Amzn-ErrorType
	body    string
	header  map[string]string
	frames  []frame
	gap     time.Duration
	tail    []byte
	stall   bool
	hold    bool
}

// frame is one event-stream message: an event or an exception.
type frame struct {
	messageType string // "event" or "exception"
	typ         string // :event-type or :exception-type
	payload     string
}

// received is what one request carried.
type received struct {
	modelID string
	header  http.Header
	body    []byte
}

func (fr frame) message() eventstream.Message {
	var msg eventstream.Message
	msg.Headers.Set(":message-type", eventstream.StringValue(fr.messageType))
	if fr.messageType == "exception" {
		msg.Headers.Set(":exception-type", eventstream.StringValue(fr.typ))
	} else {
		msg.Headers.Set(":event-type", eventstream.StringValue(fr.typ))
	}
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	msg.Payload = []byte(fr.payload)
	return msg
}

// cut is the first n bytes of fr's encoding: a frame the connection lost
// the rest of.
func cut(fr frame, n int) []byte {
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, fr.message()); err != nil {
		panic(err)
	}
	return buf.Bytes()[:n]
}

func event(typ, payload string) frame     { return frame{"event", typ, payload} }
func exception(typ, payload string) frame { return frame{"exception", typ, payload} }

// The events of a Bedrock answer, as Bedrock writes them (with the "p"
// padding field it adds to hide the length of the content).
func messageStart() frame { return event("messageStart", `{"p":"abcdefgh","role":"assistant"}`) }
func textDelta(index int, text string) frame {
	return event("contentBlockDelta", `{"contentBlockIndex":`+itoa(index)+`,"delta":{"text":`+quote(text)+`},"p":"abcd"}`)
}
func toolStart(index int, id, name string) frame {
	return event("contentBlockStart", `{"contentBlockIndex":`+itoa(index)+`,"p":"ab","start":{"toolUse":{"name":`+quote(name)+`,"toolUseId":`+quote(id)+`}}}`)
}
func toolDelta(index int, input string) frame {
	return event("contentBlockDelta", `{"contentBlockIndex":`+itoa(index)+`,"delta":{"toolUse":{"input":`+quote(input)+`}},"p":"abc"}`)
}
func blockStop(index int) frame {
	return event("contentBlockStop", `{"contentBlockIndex":`+itoa(index)+`,"p":"abcdef"}`)
}
func messageStop(reason string) frame {
	return event("messageStop", `{"p":"abcdefghij","stopReason":`+quote(reason)+`}`)
}
func metadata(in, out int) frame {
	return event("metadata", `{"metrics":{"latencyMs":421},"p":"a","usage":{"inputTokens":`+itoa(in)+`,"outputTokens":`+itoa(out)+`,"totalTokens":`+itoa(in+out)+`}}`)
}

// textAnswer is a whole answer of one text block in the given chunks.
func textAnswer(chunks ...string) []frame {
	frames := []frame{messageStart()}
	for _, c := range chunks {
		frames = append(frames, textDelta(0, c))
	}
	return append(frames, blockStop(0), messageStop("end_turn"), metadata(10, 5))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// newFake starts a fake answering with replies in turn, and a Model
// pointed at it with static credentials.
func newFake(t *testing.T, replies ...reply) (*fake, *bedrock.Model) {
	t.Helper()
	f := startFake(t, replies...)
	return f, bedrock.New(testConfig(), bedrock.WithBaseEndpoint(f.srv.URL))
}

// startFake starts a fake answering with replies in turn.
func startFake(t *testing.T, replies ...reply) *fake {
	t.Helper()
	return serveFake(t, httptest.NewServer, replies)
}

// startTLSFake is startFake over HTTPS; f.srv.Client() trusts it.
func startTLSFake(t *testing.T, replies ...reply) *fake {
	t.Helper()
	return serveFake(t, httptest.NewTLSServer, replies)
}

func serveFake(t *testing.T, start func(http.Handler) *httptest.Server, replies []reply) *fake {
	f := &fake{t: t, replies: replies}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /model/{modelId}/converse-stream", f.serve)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("fake: unexpected %s %s", r.Method, r.URL.EscapedPath())
		http.Error(w, "no such route", http.StatusNotFound)
	})
	f.srv = start(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func testConfig() aws.Config {
	return aws.Config{
		Region:      "us-west-2",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", ""),
	}
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake: read body: %v", err)
	}
	f.checkRequest(r, body)

	f.mu.Lock()
	f.received = append(f.received, received{modelID: r.PathValue("modelId"), header: r.Header.Clone(), body: body})
	if msg := refusal(r.PathValue("modelId"), body); msg != "" {
		f.mu.Unlock()
		w.Header().Set("X-Amzn-ErrorType", "ValidationException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"message": msg})
		return
	}
	if len(f.replies) == 0 {
		f.mu.Unlock()
		f.t.Errorf("fake: request %d has no reply", len(f.received))
		http.Error(w, "no reply", http.StatusTeapot)
		return
	}
	rep := f.replies[0]
	f.replies = f.replies[1:]
	f.mu.Unlock()

	if rep.stall {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status != 0 {
		if rep.errType != "" {
			w.Header().Set("X-Amzn-ErrorType", rep.errType)
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.body)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Requestid", "fake-request-id")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	flusher.Flush()
	enc := eventstream.NewEncoder()
	for i, fr := range rep.frames {
		if i > 0 && rep.gap > 0 {
			time.Sleep(rep.gap)
		}
		if err := enc.Encode(w, fr.message()); err != nil {
			return // the client went away
		}
		flusher.Flush()
	}
	if len(rep.tail) > 0 {
		w.Write(rep.tail)
		flusher.Flush()
	}
	if rep.hold {
		<-r.Context().Done()
	}
}

// checkRequest checks what every ConverseStream request must carry.
func (f *fake) checkRequest(r *http.Request, body []byte) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Errorf("fake: Content-Type = %q, want application/json", ct)
	}
	auth := r.Header.Get("Authorization")
	if os.Getenv("AWS_BEARER_TOKEN_BEDROCK") == "" {
		// SigV4 with the test's key, for bedrock in the test's region.
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/us-west-2/bedrock/aws4_request") {
			f.t.Errorf("fake: Authorization = %q, want a SigV4 signature for bedrock in us-west-2", auth)
		}
	}
	if !json.Valid(body) {
		f.t.Errorf("fake: body is not JSON: %s", body)
	}
}

// statusModels are the models whose tool results may carry a status:
// "This field is only supported by Amazon Nova and Anthropic Claude 3 and 4
// models" (Bedrock API reference, ToolResultBlock).
var statusModels = regexp.MustCompile(`amazon\.nova-|anthropic\.claude-(3|[a-z]+-4)`)

// refusal is the ValidationException Bedrock answers a ConverseStream body
// with, "" for one it takes. The rules are Bedrock's (API reference and its
// answers): the conversation starts with a user message and alternates, no
// message is empty, no text block is blank, toolUse and toolResult blocks
// need toolConfig, a toolResult's status only for the models above, and an
// error result has content.
func refusal(modelID string, body []byte) string {
	var req struct {
		Messages []struct {
			Role    string                       `json:"role"`
			Content []map[string]json.RawMessage `json:"content"`
		} `json:"messages"`
		ToolConfig json.RawMessage `json:"toolConfig"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return "Malformed input request: " + err.Error()
	}
	tools := false
	for i, m := range req.Messages {
		switch {
		case i == 0 && m.Role != "user":
			return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
		case i > 0 && m.Role == req.Messages[i-1].Role:
			return "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
		case len(m.Content) == 0:
			return fmt.Sprintf("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		for j, block := range m.Content {
			if raw, ok := block["text"]; ok {
				var text string
				json.Unmarshal(raw, &text)
				if strings.TrimSpace(text) == "" {
					return fmt.Sprintf("The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", i, j)
				}
			}
			if _, ok := block["toolUse"]; ok {
				tools = true
			}
			raw, ok := block["toolResult"]
			if !ok {
				continue
			}
			tools = true
			var res struct {
				Status  *string           `json:"status"`
				Content []json.RawMessage `json:"content"`
			}
			json.Unmarshal(raw, &res)
			if res.Status != nil && !statusModels.MatchString(modelID) {
				// The rule is the reference's; these words are the fake's.
				return fmt.Sprintf("The model %s does not support the status field of toolResult at messages.%d.content.%d. Remove it and try again.", modelID, i, j)
			}
			if res.Status != nil && *res.Status == "error" && len(res.Content) == 0 {
				return fmt.Sprintf("The content field at messages.%d.content.%d.toolResult cannot be empty when status value is error.", i, j)
			}
			for k, c := range res.Content {
				if msg := contentRefusal(c); msg != "" {
					return fmt.Sprintf("messages.%d.content.%d.toolResult.content.%d: %s", i, j, k, msg)
				}
			}
		}
	}
	if tools && len(req.ToolConfig) == 0 {
		return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
	}
	return ""
}

// contentRefusal is what Bedrock says of a ToolResultContentBlock, a union
// of exactly one of text, json, image, document, video, "" when it takes
// it. An image is {format, source: {bytes}}: a format of png, jpeg, gif or
// webp, bytes (a base64 blob in JSON) of at most 3.75 MB that are an image
// of that format.
func contentRefusal(raw json.RawMessage) string {
	var block map[string]json.RawMessage
	if err := json.Unmarshal(raw, &block); err != nil || len(block) != 1 {
		return "a ToolResultContentBlock must have exactly one member set"
	}
	rawImg, ok := block["image"]
	switch {
	case !ok && (block["text"] != nil || block["json"] != nil || block["document"] != nil || block["video"] != nil):
		return ""
	case !ok:
		return "unknown ToolResultContentBlock member"
	}
	var img struct {
		Format string                     `json:"format"`
		Source map[string]json.RawMessage `json:"source"`
	}
	if err := json.Unmarshal(rawImg, &img); err != nil {
		return "Malformed image block: " + err.Error()
	}
	switch img.Format {
	case "png", "jpeg", "gif", "webp":
	default:
		return fmt.Sprintf("Value '%s' at 'image.format' failed to satisfy constraint: Member must satisfy enum value set: [png, jpeg, gif, webp]", img.Format)
	}
	var b64 string
	if len(img.Source) != 1 || json.Unmarshal(img.Source["bytes"], &b64) != nil {
		return "image.source must have exactly one member set: bytes"
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	switch {
	case err != nil:
		return "image.source.bytes is not base64: " + err.Error()
	case len(data) > 3_750_000:
		return "The image exceeds the maximum size of 3.75 MB."
	case http.DetectContentType(data) != "image/"+img.Format:
		return "Could not process image: its bytes are not " + img.Format
	}
	return ""
}

// requests returns what the fake has received so far.
func (f *fake) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.received...)
}

// only returns the one request the fake received.
func (f *fake) only() received {
	f.t.Helper()
	got := f.requests()
	if len(got) != 1 {
		f.t.Fatalf("fake received %d requests, want 1", len(got))
	}
	return got[0]
}
