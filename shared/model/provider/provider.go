// Package provider builds the deployment's model from its settings
// (DESIGN §11): AGENTSFLEET_MODEL_PROVIDER picks bedrock, anthropic,
// openai or scripted; each SDK's own variables point it elsewhere
// (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, ANTHROPIC_BASE_URL and
// ANTHROPIC_API_KEY, OPENAI_BASE_URL and OPENAI_API_KEY);
// AGENTSFLEET_MODEL is the model id for Definitions that name none, and
// AGENTSFLEET_MODEL_SCRIPT the scripted model's script file (the embedded
// demo when unset).
//
// In AWS the API key is not in the environment: AGENTSFLEET_MODEL_KEYS_ARN
// names a Secrets Manager secret holding {"ANTHROPIC_API_KEY": "…",
// "OPENAI_API_KEY": "…"}, read on the first model call (not when the
// function starts) and kept for the container's life. A key in the
// environment wins.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/lazy"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/anthropic"
	"github.com/agentsfleet/agentsfleet/shared/model/bedrock"
	"github.com/agentsfleet/agentsfleet/shared/model/openai"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/setting"
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
	// EnvKeysSecret names the Secrets Manager secret of the providers' API
	// keys, a JSON object keyed by their environment variables' names.
	EnvKeysSecret = "AGENTSFLEET_MODEL_KEYS_ARN"
)

// Settings are the variables FromEnv reads, the providers' own among
// them; none is required.
func Settings() []setting.Var {
	return setting.Join([]setting.Var{{Name: EnvProvider}, {Name: EnvModel}, {Name: EnvScript}, {Name: EnvKeysSecret}},
		anthropic.Settings(), openai.Settings())
}

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
// awsConfig loads the AWS configuration, and is called only for bedrock,
// and for the keys' secret on the first model call.
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
		cfg := anthropic.ConfigFromEnv(getenv)
		am, err := keyed(getenv, awsConfig, name, anthropic.EnvAPIKey, cfg.APIKey, func(key string) (model.Model, error) {
			cfg.APIKey = key
			return anthropic.New(cfg)
		})
		if err != nil {
			return Chosen{}, err
		}
		m, c.About = am, "Anthropic Messages API"
	case OpenAI:
		cfg := openai.ConfigFromEnv(getenv)
		om, err := keyed(getenv, awsConfig, name, openai.EnvAPIKey, cfg.APIKey, func(key string) (model.Model, error) {
			cfg.APIKey = key
			return openai.New(cfg)
		})
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

// keyed builds a provider's model with its API key: the key in the
// environment (envKey's value) now; else, when EnvKeysSecret is set, a
// model that reads the key from that secret on its first call. The
// settings are checked now, with a stand-in key, so that a bad base URL
// still stops the function at start.
func keyed(getenv func(string) string, awsConfig func(context.Context) (aws.Config, error), provider, envKey, key string, build func(key string) (model.Model, error)) (model.Model, error) {
	arn := strings.TrimSpace(getenv(EnvKeysSecret))
	if key != "" || arn == "" {
		return build(key)
	}
	if _, err := build("stand-in"); err != nil {
		return nil, err
	}
	return lazyModel{provider: provider, v: lazy.New(func(ctx context.Context) (model.Model, error) {
		cfg, err := awsConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("load the AWS configuration: %w", err)
		}
		raw, err := secret.SecretsManager{Client: secretsmanager.NewFromConfig(cfg)}.SecretValue(ctx, arn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKeysSecret, err)
		}
		var keys map[string]string
		if err := json.Unmarshal([]byte(raw), &keys); err != nil {
			return nil, badKeys{fmt.Errorf("%s: the secret %s is not a JSON object of key names to keys, such as {%q: \"…\"}", EnvKeysSecret, arn, envKey)}
		}
		k := strings.TrimSpace(keys[envKey])
		if k == "" {
			return nil, badKeys{fmt.Errorf("%s: the secret %s has no %s", EnvKeysSecret, arn, envKey)}
		}
		return build(k)
	})}, nil
}

// lazyModel is a model whose client is built on its first call, once its
// key is read.
type lazyModel struct {
	provider string
	v        *lazy.Value[model.Model]
}

func (l lazyModel) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	m, err := l.v.Get(ctx)
	if err != nil {
		// A throttled or unreachable Secrets Manager may answer the next
		// attempt; a secret without the key fails every attempt alike.
		var bad badKeys
		retry := ctx.Err() == nil && !errors.As(err, &bad)
		return model.Response{}, &model.Error{Provider: l.provider, Message: "read the API key: " + err.Error(), Retryable: retry, Err: err}
	}
	return m.Converse(ctx, req)
}

// badKeys is a keys' secret that no retry will mend.
type badKeys struct{ error }
