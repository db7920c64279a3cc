package scripted

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// Provider is the name the scripted model gives in its *model.Error.
const Provider = "scripted"

// demoName is the name the demo script goes by in errors.
const demoName = "demo.toml"

//go:embed demo.toml
var demo []byte

// Model replays a script. It keeps no state between calls: the turn to
// answer comes from the request's conversation, so one Model serves any
// number of runs at once, and a run resumed elsewhere gets the same
// answers. Safe for concurrent use.
type Model struct {
	name  string
	turns []turn
}

var _ model.Model = (*Model)(nil)

// Load reads the script at path: JSON when the path ends in .json, TOML
// otherwise. Errors are a *ParseError naming path and the line, or the
// error reading the file.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	return Parse(data, path)
}

// Parse reads a script from data. name is how errors and the model's
// answers past the script's end refer to it, and its extension picks the
// format: .json for JSON, anything else TOML. Errors are a *ParseError.
func Parse(data []byte, name string) (*Model, error) {
	turns, err := parse(data, name)
	if err != nil {
		return nil, err
	}
	return &Model{name: name, turns: turns}, nil
}

var defaultModel = sync.OnceValue(func() *Model {
	m, err := Parse(demo, demoName)
	if err != nil {
		panic("scripted: the embedded demo script does not load: " + err.Error())
	}
	return m
})

// Default returns the demo model, for `make dev` and `agentsfleet run`
// without a model configured: it lists the workdir, reads README.md when
// there is one, answers with what it found and says how to configure a
// real model. Its script is demo.toml in this package, also at
// examples/scripts/demo.toml.
func Default() *Model { return defaultModel() }

// Turns returns how many turns the script has.
func (m *Model) Turns() int { return len(m.turns) }

// Converse answers with turn N+1 of the script, N being the number of
// assistant messages in req.Messages. After the last turn it returns a
// *model.Error that is not Retryable. A cancelled ctx is returned as ctx's
// error, wrapped. req.Model and req.MaxTokens are not read.
func (m *Model) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	if err := ctx.Err(); err != nil {
		return model.Response{}, fmt.Errorf("scripted model: %w", err)
	}
	n := 0
	for _, msg := range req.Messages {
		if msg.Role == model.Assistant {
			n++
		}
	}
	if n >= len(m.turns) {
		return model.Response{}, &model.Error{
			Provider: Provider,
			Message:  fmt.Sprintf("script %s has no turn %d: it has %d turn%s", m.name, n+1, len(m.turns), plural(len(m.turns))),
		}
	}
	// An image goes to a provider whole or not at all: one without its
	// data is refused here as every provider refuses it.
	if err := checkImages(req.Messages); err != nil {
		return model.Response{}, &model.Error{Provider: Provider, Message: "request: " + err.Error()}
	}
	conv := readConversation(req.Messages)
	a := m.turns[n].pick(conv)

	msg := model.Message{Role: model.Assistant}
	text := a.text.render(conv)
	if text != "" {
		msg.Content = append(msg.Content, model.Part{Text: text})
	}
	for i, c := range a.calls {
		args, err := c.arguments(conv)
		if err != nil {
			return model.Response{}, &model.Error{Provider: Provider, Message: fmt.Sprintf("script %s, turn %d, tool call %d: %v", m.name, n+1, i+1, err), Err: err}
		}
		msg.Content = append(msg.Content, model.Part{ToolCall: &model.ToolCall{
			ID:        fmt.Sprintf("call_%d_%d", n+1, i+1),
			Name:      c.name,
			Arguments: args,
		}})
	}
	if len(msg.Content) == 0 {
		return model.Response{}, &model.Error{
			Provider: Provider,
			Message:  fmt.Sprintf("script %s, turn %d: the answer is empty: its text is only placeholders, and the conversation has nothing to fill them with", m.name, n+1),
		}
	}

	if req.OnText != nil {
		for _, chunk := range chunks(text) {
			if err := ctx.Err(); err != nil {
				return model.Response{}, fmt.Errorf("scripted model: %w", err)
			}
			req.OnText(chunk)
		}
	}

	stop := model.StopEndTurn
	switch {
	case len(a.calls) > 0:
		stop = model.StopToolUse
	case a.stop != "":
		stop = a.stop
	}
	return model.Response{
		Message: msg,
		Stop:    stop,
		Usage: model.Usage{
			InputTokens:  tokens(requestBytes(req)),
			OutputTokens: tokens(messageBytes(msg)),
		},
	}, nil
}

// pick returns the first alternative whose conditions all hold, else the
// turn's own answer.
func (t *turn) pick(c *conversation) *answer {
	for i := range t.alternatives {
		alt := &t.alternatives[i]
		if alt.lastError != nil && *alt.lastError != c.failed {
			continue
		}
		if alt.outputContains != nil && !strings.Contains(c.lastOutput, *alt.outputContains) {
			continue
		}
		return &alt.answer
	}
	return &t.answer
}

// readConversation gathers what placeholders and conditions read.
func readConversation(msgs []model.Message) *conversation {
	c := &conversation{outputs: map[string]string{}}
	names := map[string]string{} // tool call id → tool name
	seenInput := false
	for _, msg := range msgs {
		if msg.Role == model.User && !seenInput {
			c.input = msg.Text()
			seenInput = true
		}
		var results []*model.ToolResult
		for _, p := range msg.Content {
			if p.ToolCall != nil {
				names[p.ToolCall.ID] = p.ToolCall.Name
			}
			if p.ToolResult != nil {
				results = append(results, p.ToolResult)
			}
		}
		if len(results) == 0 {
			continue
		}
		// A newer message of tool results replaces the last ones.
		c.failed, c.lastError = false, ""
		for _, r := range results {
			name := r.Name
			if name == "" {
				name = names[r.CallID]
			}
			c.outputs[name] = r.Output
			c.lastOutput = r.Output
			if m := sessionLine.FindStringSubmatch(r.Output); m != nil {
				c.sessionID = m[1]
			}
			if m := childLine.FindStringSubmatch(r.Output); m != nil {
				c.childID = m[1]
			}
			if r.IsError {
				c.failed, c.lastError = true, r.Output
			}
			if r.Image != nil {
				c.lastImage = describe(r.Image)
			}
		}
	}
	return c
}

// checkImages reports the first tool result image of msgs a model could
// not be sent.
func checkImages(msgs []model.Message) error {
	for i, msg := range msgs {
		for _, p := range msg.Content {
			if r := p.ToolResult; r != nil && r.Image != nil {
				if err := r.Image.Check(); err != nil {
					return fmt.Errorf("message %d: tool result %s: %w", i, r.CallID, err)
				}
			}
		}
	}
	return nil
}

// describe is what {{last_image}} says of img: its size, type, length
// and SHA-256, which tell a test that the model got these very bytes.
func describe(img *model.Image) string {
	sum := sha256.Sum256(img.Data)
	return fmt.Sprintf("%d×%d %s, %d bytes, sha256 %x", img.Width, img.Height, img.MediaType, len(img.Data), sum)
}

// sessionLine is how exec_command and write_stdin say a process is still
// running (Codex's format).
var sessionLine = regexp.MustCompile(`Process running with session ID (\d+)`)

// childLine is how the child-agent tools name the child they answer about.
var childLine = regexp.MustCompile(`"child_id": "(child_[0-9A-Za-z]+)"`)

// chunks splits text into at most four pieces, each ending after white
// space (or at the end), as a streaming provider would deliver it.
func chunks(text string) []string {
	const pieces = 4
	target := (len(text) + pieces - 1) / pieces
	var out []string
	start, i := 0, 0
	for i < len(text) {
		for i < len(text) && !isSpace(text[i]) {
			i++
		}
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		if i-start >= target || i == len(text) {
			out = append(out, text[start:i])
			start = i
		}
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// tokens estimates the tokens of n bytes of text: ceil(n/4).
func tokens(n int) int64 { return int64((n + 3) / 4) }

// requestBytes is the size of what a provider would read: the system
// prompt; every message's text, tool call names and arguments, and tool
// result outputs and images; and every tool's name, description and
// schema.
func requestBytes(req model.Request) int {
	n := len(req.System)
	for _, msg := range req.Messages {
		n += messageBytes(msg)
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return n
}

func messageBytes(msg model.Message) int {
	n := 0
	for _, p := range msg.Content {
		n += len(p.Text)
		if p.ToolCall != nil {
			n += len(p.ToolCall.Name) + len(p.ToolCall.Arguments)
		}
		if p.ToolResult != nil {
			n += len(p.ToolResult.Output)
			if img := p.ToolResult.Image; img != nil {
				n += 4 * imageTokens(img)
			}
		}
	}
	return n
}

// imageTokens estimates the tokens of an image as Anthropic documents it:
// width × height / 750.
func imageTokens(img *model.Image) int { return img.Width * img.Height / 750 }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
