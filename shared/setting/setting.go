// Package setting describes agentsfleet's deployment settings: the
// environment variables its components read. A component that reads some
// names each in an exported constant (store.EnvTable,
// "AGENTSFLEET_TABLE") and lists them, as Vars, beside its FromEnv, so
// that shared/deploy can say which variables each Lambda function reads
// and the CDK stack (infra/) writes each name through the same constant
// and is tested against those lists.
//
// The AWS SDK's own variables (AWS_REGION, AWS_ENDPOINT_URL, …), which the
// SDK reads itself, are not settings here.
package setting

import (
	"fmt"
	"slices"
	"strings"
)

// Variables Lambda sets in every function's environment; a template
// cannot set them.
const (
	// LambdaFunctionName is the function's own name.
	LambdaFunctionName = "AWS_LAMBDA_FUNCTION_NAME"
	// LambdaRuntimeAPI is the address of Lambda's Runtime API: set only
	// inside Lambda.
	LambdaRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"
	// LambdaMemorySize is the function's memory in MiB.
	LambdaMemorySize = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"
)

// Var is one environment variable a component reads.
type Var struct {
	Name string
	// Required: the component does not start without it, unless Or is set.
	Required bool
	// Or is a variable that stands in for this one when this one is unset:
	// a secret's value itself, on one machine, for its Secrets Manager ARN.
	Or string
}

// ByLambda reports whether Lambda sets v in every function's environment
// (AWS_LAMBDA_*): a template does not give it.
func (v Var) ByLambda() bool { return strings.HasPrefix(v.Name, "AWS_LAMBDA_") }

// Join is the variables of lists, in their order, each name once: a name
// listed twice is required when either says so.
func Join(lists ...[]Var) []Var {
	var out []Var
	for _, list := range lists {
		for _, v := range list {
			if i := slices.IndexFunc(out, func(o Var) bool { return o.Name == v.Name }); i >= 0 {
				out[i].Required = out[i].Required || v.Required
				continue
			}
			out = append(out, v)
		}
	}
	return out
}

// Required is vars, each required: a component's optional settings that a
// function cannot do without (the schedule function's Scheduler group).
func Required(vars []Var) []Var {
	out := slices.Clone(vars)
	for i := range out {
		out[i].Required = true
	}
	return out
}

// Names is the names of vars, in their order.
func Names(vars []Var) []string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = v.Name
	}
	return out
}

// Missing is the required variables of vars that getenv has blank, in
// their order: NAME, or "NAME (or OR)" for one that Or stands in for.
func Missing(getenv func(string) string, vars []Var) []string {
	var out []string
	for _, v := range vars {
		if !v.Required || strings.TrimSpace(getenv(v.Name)) != "" || (v.Or != "" && strings.TrimSpace(getenv(v.Or)) != "") {
			continue
		}
		if v.Or != "" {
			out = append(out, v.Name+" (or "+v.Or+")")
		} else {
			out = append(out, v.Name)
		}
	}
	return out
}

// Check returns an error naming every required variable of vars that
// getenv has blank, and what, the part that needs them; nil when none is.
func Check(getenv func(string) string, vars []Var, what string) error {
	if missing := Missing(getenv, vars); len(missing) > 0 {
		return fmt.Errorf("%s not set: %s needs them", strings.Join(missing, ", "), what)
	}
	return nil
}
