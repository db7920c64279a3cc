package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// answer assembles the assistant's message from the stream's events.
type answer struct {
	blocks []block
	stop   sdk.StopReason
	// The usage counts are whole-message totals: message_start gives them
	// all, and message_delta overwrites the ones it carries.
	input, cacheWrite, cacheRead, output int64
	// stopped is set by message_stop, the stream's last event.
	stopped bool
}

// block is one content block: text or a tool call. Others (thinking, …)
// are kept as blocks so that the indexes line up, and left out of the
// answer.
type block struct {
	typ      string
	text     string
	id, name string
	input    []byte // the tool call's input_json_delta pieces, joined
	start    string // the tool call's input in content_block_start
}

// add applies one event. Text deltas go to onText, when set, as they come.
func (a *answer) add(ev sdk.MessageStreamEventUnion, onText func(string)) error {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		a.input, a.cacheWrite, a.cacheRead, a.output = u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens
	case "content_block_start":
		if ev.Index != int64(len(a.blocks)) {
			return fmt.Errorf("stream: content block %d started, want %d", ev.Index, len(a.blocks))
		}
		cb := ev.ContentBlock
		b := block{typ: cb.Type, text: cb.Text, id: cb.ID, name: cb.Name, start: cb.JSON.Input.Raw()}
		a.blocks = append(a.blocks, b)
		if b.typ == "text" && b.text != "" && onText != nil {
			onText(b.text)
		}
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
			return fmt.Errorf("stream: delta for content block %d, of %d", ev.Index, len(a.blocks))
		}
		b := &a.blocks[ev.Index]
		switch ev.Delta.Type {
		case "text_delta":
			b.text += ev.Delta.Text
			if ev.Delta.Text != "" && onText != nil {
				onText(ev.Delta.Text)
			}
		case "input_json_delta":
			b.input = append(b.input, ev.Delta.PartialJSON...)
		}
	case "message_delta":
		a.stop = ev.Delta.StopReason
		u := ev.Usage
		a.output = u.OutputTokens
		if u.JSON.InputTokens.Valid() {
			a.input = u.InputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			a.cacheWrite = u.CacheCreationInputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			a.cacheRead = u.CacheReadInputTokens
		}
	case "message_stop":
		a.stopped = true
	}
	return nil
}

// errCutOff is a stream that ended before the answer did: the connection
// broke off, so a retry may get the whole answer.
var errCutOff = errors.New("stream ended before the answer was complete")

// response is the assembled answer. A stream that ended before
// message_stop and without a stop reason is a retryable *model.Error.
func (a *answer) response() (model.Response, error) {
	if !a.stopped && a.stop == "" {
		return model.Response{}, &model.Error{Provider: provider, Message: errCutOff.Error(), Retryable: true, Err: errCutOff}
	}
	resp := model.Response{
		Message: model.Message{Role: model.Assistant},
		Stop:    stopReason(a.stop),
		Usage: model.Usage{
			InputTokens:  a.input + a.cacheWrite + a.cacheRead,
			OutputTokens: a.output,
		},
	}
	for _, b := range a.blocks {
		switch b.typ {
		case "text":
			if b.text != "" {
				resp.Message.Content = append(resp.Message.Content, model.Part{Text: b.text})
			}
		case "tool_use":
			args := b.arguments()
			if !json.Valid(args) {
				// A call cut off at max_tokens cannot be run; the stop
				// reason tells the caller the answer was cut.
				if resp.Stop == model.StopMaxTokens {
					continue
				}
				err := fmt.Errorf("tool call %s (%s): arguments are not valid JSON: %.200s", b.id, b.name, args)
				return model.Response{}, &model.Error{Provider: provider, Message: err.Error(), Err: err}
			}
			resp.Message.Content = append(resp.Message.Content, model.Part{ToolCall: &model.ToolCall{
				ID: b.id, Name: b.name, Arguments: json.RawMessage(args),
			}})
		}
	}
	return resp, nil
}

// arguments is the tool call's input: the streamed pieces joined, or the
// input content_block_start carried when no piece came, and {} when
// neither holds anything.
func (b block) arguments() []byte {
	if len(b.input) > 0 {
		return b.input
	}
	if b.start != "" && b.start != "null" {
		return []byte(b.start)
	}
	return []byte(`{}`)
}

// stopReason maps the API's stop_reason.
func stopReason(r sdk.StopReason) model.StopReason {
	switch r {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return model.StopEndTurn
	case sdk.StopReasonToolUse:
		return model.StopToolUse
	case sdk.StopReasonMaxTokens:
		return model.StopMaxTokens
	default: // refusal, pause_turn, model_context_window_exceeded, …
		return model.StopOther
	}
}
