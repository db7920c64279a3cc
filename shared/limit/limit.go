// Package limit holds the specification's per-run and per-fleet counts
// that more than one part of agentsfleet states or enforces: the store
// enforces them atomically, the control tools' descriptions tell the model.
//
// It is a leaf: it imports nothing, so that a tool's contract can state a
// limit without linking the store (and DynamoDB) that enforces it.
package limit

// Message lines (the message tool).
const (
	MessageLines = 8 // lines a run may post
)

// Schedules.
const (
	Schedules      = 32 // schedules a fleet holds in total
	FleetSchedules = 16 // of which the fleet created itself
)

// Child agents.
const (
	ChildrenRunning = 4  // children working at once, per run
	ChildrenTotal   = 16 // children started in all, per run
	ChildDepth      = 2  // children (1) and grandchildren (2)
)
