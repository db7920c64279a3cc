package spec

import (
	_ "embed"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed pushover.txt
var pushoverDescription string

// PushoverHost is the host of Pushover's API, which a fleet lists to send
// notifications.
const PushoverHost = "api.pushover.net"

// The fleet secrets pushover sends as the application token and the user
// (or group) key. They are filled in the webtools λ and never shown to the
// model.
const (
	PushoverTokenSecret = "PUSHOVER_TOKEN"
	PushoverUserSecret  = "PUSHOVER_USER"
)

// Pushover's API limits: lengths in characters, and the priorities from
// silent to emergency.
const (
	MaxPushoverMessage  = 1024
	MaxPushoverTitle    = 250
	MaxPushoverURL      = 512
	MinPushoverPriority = -2
	MaxPushoverPriority = 2 // emergency
	// DefaultPushoverPriority is what Pushover applies to a message sent
	// without one; pushover sends a priority only when the model gives one.
	DefaultPushoverPriority = 0
)

// An emergency notification repeats every EmergencyRetry until it is
// acknowledged or EmergencyExpire has passed; Pushover requires both.
const (
	EmergencyRetry  = 60 * time.Second
	EmergencyExpire = time.Hour
)

// PushoverArgs are pushover's arguments.
type PushoverArgs struct {
	Message  string `json:"message"`
	Title    string `json:"title,omitempty"`
	Priority *int   `json:"priority,omitempty"`
	URL      string `json:"url,omitempty"`
}

// Pushover is pushover's contract: sends a Pushover notification.
var Pushover = tool.Define[PushoverArgs](tool.About{
	Name:        "pushover",
	RunsIn:      tool.InWebtools,
	Scope:       tool.ScopeNetwork,
	Summary:     "Sends a Pushover notification",
	Description: pushoverDescription,
	Rules: tool.Rules{
		"message":  tool.NotBlank().MaxLen(MaxPushoverMessage),
		"title":    tool.MaxLen(MaxPushoverTitle),
		"priority": tool.Between(MinPushoverPriority, MaxPushoverPriority),
		"url":      tool.MaxLen(MaxPushoverURL),
	},
	Values: figures(map[string]any{
		"MaxMessage":      MaxPushoverMessage,
		"MaxTitle":        MaxPushoverTitle,
		"MaxURL":          MaxPushoverURL,
		"DefaultPriority": DefaultPushoverPriority,
		"RetrySeconds":    int(EmergencyRetry / time.Second),
		"Expire":          inWords(EmergencyExpire),
		"Host":            PushoverHost,
		"TokenSecret":     PushoverTokenSecret,
		"UserSecret":      PushoverUserSecret,
	}),
})
