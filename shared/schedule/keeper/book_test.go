package keeper_test

import (
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
)

// The Keeper's Book is the runner's ScheduleBook; the keeper itself does
// not import the runner.
var _ runner.ScheduleBook = keeper.Book{}
