package control

import (
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Caller is the agent of a run calling a control tool, as the tools see
// it: what each tool acts through, for one call. The runner provides it; a
// nil field leaves the tools needing it unbuilt (tool.Unbuilt, whose Run
// checks the arguments, then says why the tool is not available).
type Caller struct {
	// Plan keeps each plan update_plan accepts on the run.
	Plan func(UpdatePlanArgs)
	// Children does the child-agent tools' work.
	Children Children
	// Schedules does the schedule tools' and cron_run's work.
	Schedules Schedules
	// Thread is the run's Slack thread, for message.
	Thread Thread
}

// implementation is how a control tool is built for a caller. Each tool's
// implementation file registers its own (implement), so that a new tool
// is its contract and its implementation, and nothing in the runner.
type implementation struct {
	// build returns the tool bound to c, or nil when c lacks what it needs.
	build func(c Caller) tool.Tool
	// unbuilt says why the tool is not available when build returns nil.
	unbuilt string
	// concurrent says that several calls of the tool in one answer may run
	// at once: it changes nothing, or its work is elsewhere (a child's).
	concurrent bool
}

var implementations = map[string]implementation{}

// implement registers spec's implementation.
func implement(spec tool.Spec, i implementation) { implementations[spec.Name()] = i }

// Tools returns the control tools of c, sorted by name. Safe for
// concurrent use when c's parts are.
func Tools(c Caller) []tool.Tool {
	specs := Specs()
	tools := make([]tool.Tool, len(specs))
	for i, s := range specs {
		tools[i], _ = Tool(s.Name(), c)
	}
	return tools
}

// Tool returns the control tool name of c, false when there is no control
// tool of that name.
func Tool(name string, c Caller) (tool.Tool, bool) {
	for _, s := range Specs() {
		if s.Name() != name {
			continue
		}
		impl, ok := implementations[name]
		if !ok {
			return tool.Unbuilt(s, "it has no implementation yet"), true
		}
		if t := impl.build(c); t != nil {
			return t, true
		}
		return tool.Unbuilt(s, impl.unbuilt), true
	}
	return nil, false
}

// Concurrent reports whether calls of the control tool name in one answer
// may run at once.
func Concurrent(name string) bool { return implementations[name].concurrent }

// bound is a tool whose Run decodes the arguments and hands them to run.
type bound[T any] struct {
	*tool.Def[T]
	run func(context.Context, T) (tool.Result, error)
}

func bind[T any](d *tool.Def[T], run func(context.Context, T) (tool.Result, error)) tool.Tool {
	return bound[T]{Def: d, run: run}
}

func (b bound[T]) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	v, res, ok := b.Decode(args)
	if !ok {
		return res, nil
	}
	return b.run(ctx, v)
}

// jsonResult is v as the tools answer it: indented JSON.
func jsonResult(v any) tool.Result {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return tool.Errorf("%v", err)
	}
	return tool.Text(string(b))
}
