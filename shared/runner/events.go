package runner

import (
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

// newEvent is an event of type typ with data, one of package run's event
// data types, to commit.
func newEvent(typ string, data any) store.NewEvent {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // the data types above always marshal
	}
	return store.NewEvent{Type: typ, Data: b}
}
