package callback

import (
	"log/slog"

	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// Settings are the variables FromEnv reads: the test-only egress escape
// hatch's (egress.AllowFromEnv), none required.
func Settings() []setting.Var { return egress.Settings() }

// FromEnv is the Sender of the API and the runner, with the defaults and
// the egress escape hatch of egress.AllowFromEnv (refused inside Lambda):
// its error is that setting's.
func FromEnv(getenv func(string) string, log *slog.Logger) (*Sender, error) {
	allow, err := egress.AllowFromEnv(getenv, log)
	if err != nil {
		return nil, err
	}
	return New(Config{AllowAddr: allow, Logger: log}), nil
}
