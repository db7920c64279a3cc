package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/model/provider"
)

func TestFromEnv(t *testing.T) {
	t.Parallel()
	noAWS := func(context.Context) (aws.Config, error) { return aws.Config{}, errors.New("no AWS here") }
	withAWS := func(context.Context) (aws.Config, error) { return aws.Config{Region: "eu-west-1"}, nil }
	for _, tc := range []struct {
		env      map[string]string
		def      string
		aws      func(context.Context) (aws.Config, error)
		provider string
		model    string
		wantErr  string
	}{
		{env: nil, def: provider.Scripted, aws: noAWS, provider: "scripted", model: "scripted"},
		{env: map[string]string{"AGENTSFLEET_MODEL_PROVIDER": "OpenAI", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "AGENTSFLEET_MODEL": "qwen3"}, def: provider.Scripted, aws: noAWS, provider: "openai", model: "qwen3"},
		{env: nil, def: provider.Bedrock, aws: withAWS, provider: "bedrock"},
		{env: nil, def: provider.Bedrock, aws: noAWS, wantErr: "no AWS here"},
		{env: map[string]string{"AGENTSFLEET_MODEL_PROVIDER": "anthropic"}, def: provider.Bedrock, aws: noAWS, wantErr: "ANTHROPIC_API_KEY"},
		{env: map[string]string{"AGENTSFLEET_MODEL_PROVIDER": "gemini"}, def: provider.Bedrock, aws: noAWS, wantErr: `AGENTSFLEET_MODEL_PROVIDER="gemini": the providers are bedrock, anthropic, openai and scripted`},
		{env: map[string]string{"AGENTSFLEET_MODEL_PROVIDER": "scripted", "AGENTSFLEET_MODEL_SCRIPT": "/nonexistent.toml"}, def: provider.Bedrock, aws: noAWS, wantErr: "nonexistent.toml"},
	} {
		getenv := func(k string) string { return tc.env[k] }
		c, err := provider.FromEnv(context.Background(), getenv, tc.def, tc.aws)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("FromEnv(%v) = %v, want an error with %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || c.Provider != tc.provider || c.DefaultModel != tc.model || c.Model == nil || c.About == "" {
			t.Errorf("FromEnv(%v) = %+v, %v; want provider %s, model %q", tc.env, c, err, tc.provider, tc.model)
		}
	}
}
