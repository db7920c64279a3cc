// Package provider builds the deployment's model from its settings
// (DESIGN §11): AGENTSFLEET_MODEL_PROVIDER picks bedrock, anthropic,
// openai or scripted; each SDK's own variables point it elsewhere
// (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, ANTHROPIC_BASE_URL and
// ANTHROPIC_API_KEY, OPENAI_BASE_URL and OPENAI_API_KEY);
// AGENTSFLEET_MODEL is the model id for Definitions that name none, and
// AGENTSFLEET_MODEL_SCRIPT the scripted model's script file (the embedded
// demo when unset).
package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/anthropic"
	"github.com/agentsfleet/agentsfleet/shared/model/bedrock"
	"github.com/agentsfleet/agentsfleet/shared/model/openai"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
)

// The providers.
const (
	Bedrock   = "bedrock"
	Anthropic = "anthropic"
	OpenAI    = "openai"
	Scripted  = "scripted"
)

// The settings' environment variables.
const (
	EnvProvider = "AGENTSFLEET_MODEL_PROVIDER"
	EnvModel    = "AGENTSFLEET_MODEL"
	EnvScript   = "AGENTSFLEET_MODEL_SCRIPT"
)

// Chosen is the model the settings name.
type Chosen struct {
	// Model answers, retrying rate limits and server errors (model.WithRetry).
	Model model.Model
	// Provider is its provider's name.
	Provider string
	// DefaultModel is the model id for a Definition that names none.
	DefaultModel string
	// About says in a few words what was chosen, for `agentsfleet dev`.
	About string
}

// FromEnv builds the model getenv's settings name; def is the provider
// when EnvProvider is unset (bedrock in AWS, scripted on one machine).
// awsConfig loads the AWS configuration, and is called only for bedrock.
func FromEnv(ctx context.Context, getenv func(string) string, def string, awsConfig func(context.Context) (aws.Config, error)) (Chosen, error) {
	name := strings.ToLower(strings.TrimSpace(getenv(EnvProvider)))
	if name == "" {
		name = def
	}
	c := Chosen{Provider: name, DefaultModel: strings.TrimSpace(getenv(EnvModel))}
	var m model.Model
	switch name {
	case Bedrock:
		cfg, err := awsConfig(ctx)
		if err != nil {
			return Chosen{}, fmt.Errorf("bedrock model: load the AWS configuration: %w", err)
		}
		m = bedrock.New(cfg)
		c.About = "Amazon Bedrock in " + cfg.Region
	case Anthropic:
		am, err := anthropic.New(anthropic.ConfigFromEnv(getenv))
		if err != nil {
			return Chosen{}, err
		}
		m, c.About = am, "Anthropic Messages API"
	case OpenAI:
		cfg := openai.ConfigFromEnv(getenv)
		om, err := openai.New(cfg)
		if err != nil {
			return Chosen{}, err
		}
		m, c.About = om, "OpenAI-compatible server at "+cfg.BaseURL
	case Scripted:
		if path := strings.TrimSpace(getenv(EnvScript)); path != "" {
			sm, err := scripted.Load(path)
			if err != nil {
				return Chosen{}, err
			}
			m, c.About = sm, "the scripted model replaying "+path
		} else {
			m, c.About = scripted.Default(), "the scripted demo model (set "+EnvProvider+" for a real one)"
		}
		if c.DefaultModel == "" {
			c.DefaultModel = Scripted
		}
	default:
		return Chosen{}, fmt.Errorf("%s=%q: the providers are %s, %s, %s and %s", EnvProvider, name, Bedrock, Anthropic, OpenAI, Scripted)
	}
	if c.DefaultModel == "" && name != Scripted {
		// A Definition may still name its model; say so when one does not.
		c.About += " (no " + EnvModel + ": each Definition must name its model)"
	}
	c.Model = model.WithRetry(m, model.RetryPolicy{})
	return c, nil
}
