package client

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// The kinds of failure of Setup, beside ErrBadRequest (400: a request
// sandboxd refused, named), ErrUnauthorized and ErrUnavailable.
var (
	// ErrNoSetup: this sandboxd runs no setup step (404).
	ErrNoSetup = errors.New("the sandbox runs no setup step")
	// ErrSetupDiffers: the sandbox ran another setup step before (409).
	ErrSetupDiffers = errors.New("the sandbox ran a different setup step before")
	// ErrSetupFailed: the setup command could not be started (500).
	ErrSetupFailed = errors.New("the setup step failed inside sandboxd")
)

var setupKinds = map[int]error{
	http.StatusBadRequest:          ErrBadRequest,
	http.StatusUnauthorized:        ErrUnauthorized,
	http.StatusNotFound:            ErrNoSetup,
	http.StatusConflict:            ErrSetupDiffers,
	http.StatusInternalServerError: ErrSetupFailed,
}

var errSetupTimeout = errors.New("the setup timeout passed")

// Setup runs the fleet's setup step (wire.SetupPath) and waits for it: up
// to req's timeout and CallMargin more. A command that exits non-zero or
// times out is a result, not an error. Asked again (a retry, a runner
// invoked again), sandboxd answers the first run's result with Already
// set. Every error is a *Error, as Call's, matching ErrBadRequest,
// ErrUnauthorized, ErrNoSetup, ErrSetupDiffers, ErrSetupFailed or
// ErrUnavailable; none holds a value of req.Env.
func (c *Client) Setup(ctx context.Context, req wire.SetupRequest) (wire.SetupResult, error) {
	timeout := time.Duration(req.TimeoutSeconds)*time.Second + CallMargin
	return post[wire.SetupResult](ctx, c, "run the setup step", wire.SetupPath, req, timeout, errSetupTimeout, setupKinds,
		`the body is not {"output", "exit_code"}`)
}
