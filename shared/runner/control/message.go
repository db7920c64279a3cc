package control

import (
	_ "embed"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed message.txt
var messageDescription string

// The limits of message beside limit.MessageLines.
const (
	// MaxMessageBytes is the longest line message posts, in bytes of UTF-8.
	MaxMessageBytes = limit.MessageBytes
	// MessageDeliveryTimeout is how long message waits for Slack to take a
	// line; a line not taken by then is reported as not delivered.
	MessageDeliveryTimeout = limit.MessageDeliveryTimeout
)

// MessageArgs are message's arguments.
type MessageArgs struct {
	// Text is the line to post, plain text.
	Text string `json:"text"`
}

// MessageSpec is message: it posts one line to the Slack thread that
// started the run. The argument check refuses a blank text; the cap of
// MaxMessageBytes is in bytes, which tool.MaxLen (characters) cannot
// state, so the tool checks it when built.
var MessageSpec = tool.DefineIn[MessageArgs](&contracts, tool.About{
	Name:        "message",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeControl,
	Summary:     "Posts one progress line to the Slack thread that started the run",
	Description: messageDescription,
	Rules:       tool.Rules{"text": tool.NotBlank()},
	Values: map[string]any{
		"MaxLines":        limit.MessageLines,
		"MaxBytes":        MaxMessageBytes,
		"DeliverySeconds": int(MessageDeliveryTimeout / time.Second),
		"CapCode":         fault.RunMessageCap.ID(),
		"NoThreadCode":    fault.RunNoThread.ID(),
	},
})
