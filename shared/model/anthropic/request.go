package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// newParams translates req into the Messages API's request.
func newParams(req model.Request) (sdk.MessageNewParams, error) {
	if req.Model == "" {
		return sdk.MessageNewParams{}, errors.New("no model id in the request")
	}
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: maxTokens,
		Messages:  msgs,
	}
	if strings.TrimSpace(req.System) != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return sdk.MessageNewParams{}, err
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: tool})
	}
	return params, nil
}

// messages translates the conversation. Consecutive messages of one role
// become one message, so that the results of one turn's tool calls travel
// together in one user message, as the API wants. Within a user message the
// tool_result blocks come first, in order, then any text: the API refuses
// text before a tool result. Text parts that are empty or only whitespace,
// and messages left empty, are dropped: the API refuses such text blocks
// ("text content blocks must contain non-whitespace text") and empty
// messages.
func messages(in []model.Message) ([]sdk.MessageParam, error) {
	type turn struct {
		role    model.Role
		results []sdk.ContentBlockParamUnion
		blocks  []sdk.ContentBlockParamUnion
	}
	var turns []*turn
	for i, m := range in {
		if m.Role != model.User && m.Role != model.Assistant {
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		if len(turns) == 0 || turns[len(turns)-1].role != m.Role {
			turns = append(turns, &turn{role: m.Role})
		}
		t := turns[len(turns)-1]
		for j, p := range m.Content {
			switch {
			case p.ToolResult != nil:
				if m.Role != model.User {
					return nil, fmt.Errorf("message %d part %d: a tool result in an %s message", i, j, m.Role)
				}
				block, err := toolResult(*p.ToolResult)
				if err != nil {
					return nil, fmt.Errorf("message %d part %d: tool result %s: %w", i, j, p.ToolResult.CallID, err)
				}
				t.results = append(t.results, block)
			case p.ToolCall != nil:
				if m.Role != model.Assistant {
					return nil, fmt.Errorf("message %d part %d: a tool call in a %s message", i, j, m.Role)
				}
				args, err := arguments(p.ToolCall.Arguments)
				if err != nil {
					return nil, fmt.Errorf("message %d part %d: tool call %s: %w", i, j, p.ToolCall.ID, err)
				}
				t.blocks = append(t.blocks, sdk.NewToolUseBlock(p.ToolCall.ID, args, p.ToolCall.Name))
			case strings.TrimSpace(p.Text) != "":
				t.blocks = append(t.blocks, sdk.NewTextBlock(p.Text))
			}
		}
	}
	out := make([]sdk.MessageParam, 0, len(turns))
	for _, t := range turns {
		content := append(t.results, t.blocks...)
		switch {
		case len(content) == 0:
		case t.role == model.User:
			out = append(out, sdk.NewUserMessage(content...))
		default:
			out = append(out, sdk.NewAssistantMessage(content...))
		}
	}
	return out, nil
}

// toolResult is the tool_result block for r: its output as a text block
// and its image, if any, as a base64 image block after it. An output that
// is empty or only whitespace sends no text block, since the API refuses
// one.
func toolResult(r model.ToolResult) (sdk.ContentBlockParamUnion, error) {
	block := sdk.ToolResultBlockParam{
		ToolUseID: r.CallID,
		IsError:   sdk.Bool(r.IsError),
	}
	if strings.TrimSpace(r.Output) != "" {
		block.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: r.Output}}}
	}
	if img := r.Image; img != nil {
		if err := img.Check(); err != nil {
			return sdk.ContentBlockParamUnion{}, err
		}
		block.Content = append(block.Content, sdk.ToolResultBlockParamContentUnion{OfImage: &sdk.ImageBlockParam{
			Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
				Data:      base64.StdEncoding.EncodeToString(img.Data),
				MediaType: sdk.Base64ImageSourceMediaType(img.MediaType),
			}},
		}})
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &block}, nil
}

// arguments is a tool call's input as the API wants it: a JSON object, {}
// when the call had none.
func arguments(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid(raw) {
		return nil, errors.New("arguments are not valid JSON")
	}
	return raw, nil
}

// toolParam offers t with its schema sent as it is: every keyword of it
// ($defs, additionalProperties, …), not only the properties and required
// that the SDK's ToolInputSchemaParam names.
func toolParam(t model.Tool) (*sdk.ToolParam, error) {
	schema := t.Schema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("tool %s: schema is not a JSON object", t.Name)
	}
	tool := &sdk.ToolParam{
		Name:        t.Name,
		InputSchema: param.Override[sdk.ToolInputSchemaParam](schema),
	}
	if t.Description != "" {
		tool.Description = sdk.String(t.Description)
	}
	return tool, nil
}
