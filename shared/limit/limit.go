// Package limit holds the specification's limits that more than one
// package states: the store enforces them, and the control tools' contracts
// tell the model of them. It is a leaf, importing nothing, so that a
// contract stating a limit need not link the store and the AWS SDK behind
// it.
package limit

// Child-agent limits.
const (
	MaxChildrenRunning = 4  // children working at once, per run
	MaxChildrenTotal   = 16 // children started in all, per run
	MaxChildDepth      = 2  // children (1) and grandchildren (2)
)

// MaxMessageLines is how many message lines a run may post.
const MaxMessageLines = 8

// Schedule limits.
const (
	MaxSchedules      = 32 // schedules a fleet holds in total
	MaxFleetSchedules = 16 // of which the fleet created itself
)
