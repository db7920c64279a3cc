package web

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agentsfleet/agentsfleet/shared/lazy"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
	"github.com/agentsfleet/agentsfleet/shared/web/search"
)

// The deployment settings ConfigFromEnv reads.
const (
	// EnvSearchBackend is "brave", "searxng" or empty (no websearch).
	EnvSearchBackend = "AGENTSFLEET_SEARCH_BACKEND"
	// EnvSearchURL is the SearXNG instance URL, or a Brave endpoint override.
	EnvSearchURL = "AGENTSFLEET_SEARCH_URL"
	// EnvSearchKey is the Brave Search API key itself (local use) …
	EnvSearchKey = "AGENTSFLEET_SEARCH_API_KEY"
	// EnvSearchKeySecret … or the Secrets Manager id holding it (deployments).
	EnvSearchKeySecret = "AGENTSFLEET_SEARCH_API_KEY_SECRET"
)

// Settings are the variables ConfigFromEnv reads, none of them required.
func Settings() []setting.Var {
	return setting.Join([]setting.Var{{Name: EnvSearchBackend}, {Name: EnvSearchURL}, {Name: EnvSearchKey}, {Name: EnvSearchKeySecret}},
		egress.Settings())
}

// ConfigFromEnv builds the production Config from the environment
// (getenv): the search setting, the test-only egress escape hatch
// (egress.AllowFromEnv, logged at WARN when set) and secrets as the fleet
// secret source. A search key named by EnvSearchKeySecret is read from
// secrets on the first search, once (a cold start makes no AWS call).
// Nothing here comes from a fleet.
func ConfigFromEnv(getenv func(string) string, secrets secret.Source, log *slog.Logger) (Config, error) {
	allow, err := egress.AllowFromEnv(getenv, log)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		Secrets:   secrets,
		AllowAddr: allow,
		Logger:    log,
		Search: search.Config{
			Kind:   getenv(EnvSearchBackend),
			URL:    getenv(EnvSearchURL),
			APIKey: getenv(EnvSearchKey),
		},
	}
	if id := getenv(EnvSearchKeySecret); id != "" && cfg.Search.APIKey == "" {
		if secrets == nil {
			return Config{}, fmt.Errorf("%s is set but no secret store is configured", EnvSearchKeySecret)
		}
		cfg.Search.KeyFrom = lazy.New(func(ctx context.Context) (string, error) {
			key, err := secrets.SecretValue(ctx, id)
			if err != nil {
				return "", fmt.Errorf("%s: %w", EnvSearchKeySecret, err)
			}
			return key, nil
		}).Get
	}
	return cfg, nil
}
