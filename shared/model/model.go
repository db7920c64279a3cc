// Package model is the one interface agentsfleet's runner talks to a model
// through, whatever serves it: Amazon Bedrock's Converse API
// (model/bedrock, the default on AWS), Anthropic's Messages API
// (model/anthropic), any OpenAI-compatible Chat Completions server
// (model/openai), or a script replayed for demos and tests
// (model/scripted). Settings picks one from the environment.
//
// A conversation is provider-neutral: messages of text, tool calls and tool
// results, which may carry an image (a screenshot). Each provider
// translates it to its own wire form and back, and reports token usage.
// Errors carry whether a retry may succeed (rate limits, overload, 5xx),
// and WithRetry retries those with backoff inside the caller's deadline.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Model answers a conversation. Implementations are safe for concurrent
// use.
type Model interface {
	// Converse sends req and returns the model's answer: one assistant
	// message, which may ask for tool calls. Text is also passed to
	// req.OnText as it arrives, where the provider streams. A failure is an
	// *Error (or wraps one) saying whether a retry may succeed.
	Converse(ctx context.Context, req Request) (Response, error)
}

// Role says who wrote a message.
type Role string

// The roles of a conversation. Tool results travel in user messages, as
// both Bedrock and Anthropic want them; providers that want a role of their
// own for them (OpenAI's "tool") translate.
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one turn of the conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content []Part `json:"content"`
}

// Part is one piece of a message: exactly one of its fields is set.
type Part struct {
	Text       string      `json:"text,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
}

// ToolCall is the model asking for one tool call. ID is the provider's id
// for it, which the result must echo.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult answers the ToolCall whose ID is CallID.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
	// Image, when set, is a picture the tool made (a screenshot), which
	// the model is shown with Output.
	Image *Image `json:"image,omitempty"`
}

// Image is an encoded picture in a tool result.
//
// Its JSON form is a reference, never the pixels: Data is left out, so
// that a conversation persisted as JSON (the runner's checkpoint) names
// the image by Ref and the holder reads Data back from where Ref says
// before the conversation goes to a model again. A provider refuses an
// image without Data.
type Image struct {
	// MediaType is the encoding: "image/png", "image/jpeg", "image/gif"
	// or "image/webp", the types every provider takes.
	MediaType string `json:"media_type"`
	// Data is the encoded image; not in the JSON form.
	Data []byte `json:"-"`
	// Width and Height are its size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// Ref names where the image is kept (the runner's checkpoint bucket
	// key); empty while it is kept nowhere.
	Ref string `json:"ref,omitempty"`
	// Bytes is len(Data), kept with the reference.
	Bytes int `json:"bytes"`
}

// The media types an Image may have: those Bedrock, Anthropic and
// OpenAI-compatible servers all take.
const (
	ImagePNG  = "image/png"
	ImageJPEG = "image/jpeg"
	ImageGIF  = "image/gif"
	ImageWebP = "image/webp"
)

// The largest image every provider takes: Bedrock's Converse takes at
// most 3.75 MB an image (Anthropic's API 5 MB, OpenAI's more), and
// Anthropic refuses a side longer than 8,000 pixels.
const (
	MaxImageBytes = 3_750_000
	MaxImageSide  = 8000
)

// Check reports what makes img unsendable to a model: no data, a media
// type outside the four above, more than MaxImageBytes or a side longer
// than MaxImageSide. nil means it can be sent.
func (img *Image) Check() error {
	switch img.MediaType {
	case ImagePNG, ImageJPEG, ImageGIF, ImageWebP:
	default:
		return fmt.Errorf("image has media type %q; a model takes %s, %s, %s or %s",
			img.MediaType, ImagePNG, ImageJPEG, ImageGIF, ImageWebP)
	}
	if len(img.Data) == 0 {
		if img.Ref != "" {
			return fmt.Errorf("image %s has no data: it was not read back from where it is kept", img.Ref)
		}
		return errors.New("image has no data")
	}
	if len(img.Data) > MaxImageBytes {
		return fmt.Errorf("image is %d bytes; a model takes at most %d", len(img.Data), MaxImageBytes)
	}
	if img.Width > MaxImageSide || img.Height > MaxImageSide {
		return fmt.Errorf("image is %d×%d pixels; a model takes at most %d a side", img.Width, img.Height, MaxImageSide)
	}
	return nil
}

// Format is the image's format as a short name: "png", "jpeg", "gif" or
// "webp" (Bedrock's ImageFormat values).
func (img *Image) Format() string {
	_, f, _ := strings.Cut(img.MediaType, "/")
	return f
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments object.
	Schema json.RawMessage
}

// Request is one call to the model.
type Request struct {
	// Model is the provider's model id (the Definition's model, or the
	// deployment's default).
	Model string
	// System is the system prompt: the fleet's instructions and the run's
	// context.
	System string
	// Messages is the conversation so far; it starts with a user message.
	Messages []Message
	// Tools are the tools the model may call; none means it can only answer.
	Tools []Tool
	// MaxTokens caps the answer's output tokens; 0 means the provider's
	// default (Settings.MaxTokens).
	MaxTokens int
	// OnText, when set, receives the answer's text as it streams. It is
	// called from the goroutine that called Converse.
	OnText func(delta string)
}

// StopReason says why the model stopped.
type StopReason string

// The stop reasons every provider's is mapped to.
const (
	StopEndTurn   StopReason = "end_turn"   // the answer is complete
	StopToolUse   StopReason = "tool_use"   // the answer asks for tool calls
	StopMaxTokens StopReason = "max_tokens" // the answer was cut at MaxTokens
	StopOther     StopReason = "other"      // a refusal, a content filter, …
)

// Response is the model's answer.
type Response struct {
	// Message is the assistant message: text, tool calls or both.
	Message Message
	Stop    StopReason
	Usage   Usage
}

// Usage is what a call cost, in tokens.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Text returns the message's text parts joined.
func (m Message) Text() string {
	var s string
	for _, p := range m.Content {
		s += p.Text
	}
	return s
}

// ToolCalls returns the message's tool calls, in order.
func (m Message) ToolCalls() []ToolCall {
	var calls []ToolCall
	for _, p := range m.Content {
		if p.ToolCall != nil {
			calls = append(calls, *p.ToolCall)
		}
	}
	return calls
}

// Error is a failed model call.
type Error struct {
	// Provider is "bedrock", "anthropic", "openai" or "scripted".
	Provider string
	// Status is the HTTP status, when there was one.
	Status int
	// Message is the provider's own message, for the run's error.
	Message string
	// Retryable is true for rate limits, overload and server errors, which
	// a later attempt may get past.
	Retryable bool
	// RetryAfter is how long the provider asked to wait, if it said.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s model: %d: %s", e.Provider, e.Status, msg)
	}
	return fmt.Sprintf("%s model: %s", e.Provider, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether err is a model error a retry may get past.
func IsRetryable(err error) bool {
	var me *Error
	return errors.As(err, &me) && me.Retryable
}
