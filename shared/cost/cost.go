// Package cost reckons what a run cost (run.Cost, in run.ended and on
// GET /v1/runs/{id}): its model tokens at the prices the deployment sets
// for its model, and the time of the runner function's invocations and of
// the run's sandbox at AWS's prices for Lambda and Fargate on ARM. It is
// an estimate, as a bill is not: the warm pool's idle sandboxes, the other
// functions, DynamoDB and the logs are left out.
package cost

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// The settings.
const (
	// EnvModelPrices are the models' prices in US dollars per million
	// tokens, input then output: "MODEL=IN/OUT,…", such as
	// "anthropic.claude-sonnet-4-5=3/15,gpt-5=1.25/10". A model without
	// one costs nothing in the reckoning, which says so
	// (run.Cost.UnpricedModel).
	EnvModelPrices = "AGENTSFLEET_MODEL_PRICES"
	// EnvComputePrices overrides the compute prices, in US dollars:
	// "lambda_gb_second=…,fargate_vcpu_hour=…,fargate_gb_hour=…", any of
	// them (the defaults are us-east-1's for ARM).
	EnvComputePrices = "AGENTSFLEET_COMPUTE_PRICES"
)

// Settings are the variables FromEnv reads.
func Settings() []setting.Var {
	return []setting.Var{{Name: EnvModelPrices}, {Name: EnvComputePrices}, {Name: setting.LambdaMemorySize}}
}

// ModelPrice is a model's price, in US dollars per million tokens.
type ModelPrice struct{ Input, Output float64 }

// Prices are what the reckoning multiplies by.
type Prices struct {
	Models map[string]ModelPrice
	// LambdaGBSecond is Lambda's price of a GB-second (ARM).
	LambdaGBSecond float64
	// FargateVCPUHour and FargateGBHour are Fargate's prices (Linux, ARM).
	FargateVCPUHour, FargateGBHour float64
}

// Default are us-east-1's compute prices for ARM, and no model's.
var Default = Prices{LambdaGBSecond: 0.0000133334, FargateVCPUHour: 0.03238, FargateGBHour: 0.00356}

// maxPrice bounds a price: a figure past it is a typing error.
const maxPrice = 1e6

// FromEnv reads the prices: Default, with the settings' models (and the
// scripted model's, nothing) and overrides.
func FromEnv(getenv func(string) string) (Prices, error) {
	p := Default
	// The scripted model (package model/scripted) costs nothing.
	p.Models = map[string]ModelPrice{"scripted": {}}
	set := map[string]bool{}
	if v := strings.TrimSpace(getenv(EnvModelPrices)); v != "" {
		for _, entry := range strings.Split(v, ",") {
			model, price, ok := strings.Cut(strings.TrimSpace(entry), "=")
			in, out, slash := strings.Cut(price, "/")
			if !ok || !slash || strings.TrimSpace(model) == "" {
				return Prices{}, fmt.Errorf("%s: %q is not MODEL=INPUT/OUTPUT (US dollars per million tokens)", EnvModelPrices, entry)
			}
			model = strings.TrimSpace(model)
			var mp ModelPrice
			var err error
			if mp.Input, err = price64(EnvModelPrices, model+" input", in); err != nil {
				return Prices{}, err
			}
			if mp.Output, err = price64(EnvModelPrices, model+" output", out); err != nil {
				return Prices{}, err
			}
			if set[model] {
				return Prices{}, fmt.Errorf("%s: %s is priced twice", EnvModelPrices, model)
			}
			p.Models[model], set[model] = mp, true
		}
	}
	if v := strings.TrimSpace(getenv(EnvComputePrices)); v != "" {
		for _, entry := range strings.Split(v, ",") {
			name, value, ok := strings.Cut(strings.TrimSpace(entry), "=")
			var field *float64
			switch name {
			case "lambda_gb_second":
				field = &p.LambdaGBSecond
			case "fargate_vcpu_hour":
				field = &p.FargateVCPUHour
			case "fargate_gb_hour":
				field = &p.FargateGBHour
			}
			if !ok || field == nil {
				return Prices{}, fmt.Errorf("%s: %q is not lambda_gb_second=, fargate_vcpu_hour= or fargate_gb_hour= with a price", EnvComputePrices, entry)
			}
			f, err := price64(EnvComputePrices, name, value)
			if err != nil {
				return Prices{}, err
			}
			*field = f
		}
	}
	return p, nil
}

func price64(env, what, s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > maxPrice {
		return 0, fmt.Errorf("%s: %s price %q is not a number of US dollars from 0 to %g", env, what, s, float64(maxPrice))
	}
	return f, nil
}

// MemoryFromEnv is the Lambda function's memory in MiB
// (AWS_LAMBDA_FUNCTION_MEMORY_SIZE), 0 outside Lambda.
func MemoryFromEnv(getenv func(string) string) (int, error) {
	v := getenv(setting.LambdaMemorySize)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 128 || n > 10240 {
		return 0, fmt.Errorf("%s=%q: want Lambda's memory in MiB, 128 to 10240", setting.LambdaMemorySize, v)
	}
	return n, nil
}

// Usage is what a run used.
type Usage struct {
	// Model is the model its agents called; InputTokens and OutputTokens
	// are their tokens, every agent's.
	Model                     string
	InputTokens, OutputTokens int64
	// RunnerTime is how long the runner function ran for it, at
	// RunnerMemoryMiB (its configured memory).
	RunnerTime      time.Duration
	RunnerMemoryMiB int
	// SandboxTime is how long it held a sandbox of SandboxCPU units (1024
	// a vCPU) and SandboxMemoryMiB.
	SandboxTime                  time.Duration
	SandboxCPU, SandboxMemoryMiB int
}

// Of reckons u's cost at p, each figure rounded to a millionth of a
// dollar.
func (p Prices) Of(u Usage) run.Cost {
	var c run.Cost
	if mp, ok := p.Models[u.Model]; ok {
		c.ModelUSD = (float64(u.InputTokens)*mp.Input + float64(u.OutputTokens)*mp.Output) / 1e6
	} else if u.InputTokens+u.OutputTokens > 0 {
		c.UnpricedModel = u.Model
	}
	lambda := u.RunnerTime.Seconds() * float64(u.RunnerMemoryMiB) / 1024 * p.LambdaGBSecond
	hours := u.SandboxTime.Hours()
	fargate := hours * (float64(u.SandboxCPU)/1024*p.FargateVCPUHour + float64(u.SandboxMemoryMiB)/1024*p.FargateGBHour)
	c.ModelUSD, c.ComputeUSD = micro(c.ModelUSD), micro(lambda+fargate)
	c.USD = micro(c.ModelUSD + c.ComputeUSD)
	return c
}

func micro(f float64) float64 { return math.Round(f*1e6) / 1e6 }
