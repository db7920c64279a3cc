package cost_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/cost"
	"github.com/agentsfleet/agentsfleet/shared/run"
)

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	p, err := cost.FromEnv(env(cost.EnvModelPrices, " claude=3/15, gpt-5=1.25/10 ", cost.EnvComputePrices, "fargate_gb_hour=0.005"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Models["claude"] != (cost.ModelPrice{Input: 3, Output: 15}) || p.Models["gpt-5"] != (cost.ModelPrice{Input: 1.25, Output: 10}) {
		t.Errorf("models %v", p.Models)
	}
	if mp, ok := p.Models["scripted"]; !ok || mp != (cost.ModelPrice{}) {
		t.Errorf("the scripted model: %v, %v; want it free", mp, ok)
	}
	if p, _ := cost.FromEnv(env(cost.EnvModelPrices, "scripted=1/1")); p.Models["scripted"] != (cost.ModelPrice{Input: 1, Output: 1}) {
		t.Errorf("the scripted model's price set: %v", p.Models)
	}
	if p.FargateGBHour != 0.005 || p.FargateVCPUHour != cost.Default.FargateVCPUHour || p.LambdaGBSecond != cost.Default.LambdaGBSecond {
		t.Errorf("compute prices %+v", p)
	}
	for _, tt := range []struct{ env, value, want string }{
		{cost.EnvModelPrices, "claude", "not MODEL=INPUT/OUTPUT"},
		{cost.EnvModelPrices, "claude=3", "not MODEL=INPUT/OUTPUT"},
		{cost.EnvModelPrices, "=3/15", "not MODEL=INPUT/OUTPUT"},
		{cost.EnvModelPrices, "claude=x/15", "claude input price"},
		{cost.EnvModelPrices, "claude=3/-1", "claude output price"},
		{cost.EnvModelPrices, "claude=3/NaN", "claude output price"},
		{cost.EnvModelPrices, "claude=3/1e9", "claude output price"},
		{cost.EnvModelPrices, "claude=3/15,claude=1/2", "priced twice"},
		{cost.EnvComputePrices, "lambda=1", "is not lambda_gb_second="},
		{cost.EnvComputePrices, "fargate_vcpu_hour", "is not lambda_gb_second="},
		{cost.EnvComputePrices, "fargate_vcpu_hour=cheap", "fargate_vcpu_hour price"},
	} {
		if _, err := cost.FromEnv(env(tt.env, tt.value)); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.env) {
			t.Errorf("%s=%q: err = %v, want one naming the setting and saying %q", tt.env, tt.value, err, tt.want)
		}
	}
}

func TestMemoryFromEnv(t *testing.T) {
	t.Parallel()
	if n, err := cost.MemoryFromEnv(env()); n != 0 || err != nil {
		t.Errorf("unset: %d, %v", n, err)
	}
	if n, err := cost.MemoryFromEnv(env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")); n != 1024 || err != nil {
		t.Errorf("1024: %d, %v", n, err)
	}
	for _, v := range []string{"big", "64", "20000"} {
		if _, err := cost.MemoryFromEnv(env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", v)); err == nil {
			t.Errorf("%q was taken", v)
		}
	}
}

func TestOf(t *testing.T) {
	t.Parallel()
	p := cost.Default
	p.Models = map[string]cost.ModelPrice{"claude": {Input: 3, Output: 15}}
	// 2M input and 100k output tokens; 90 s of a 1 GiB runner; an hour of
	// a small sandbox (0.5 vCPU, 1 GiB).
	u := cost.Usage{Model: "claude", InputTokens: 2_000_000, OutputTokens: 100_000,
		RunnerTime: 90 * time.Second, RunnerMemoryMiB: 1024, SandboxTime: time.Hour, SandboxCPU: 512, SandboxMemoryMiB: 1024}
	got := p.Of(u)
	model := 2*3.0 + 0.1*15
	compute := 90*0.0000133334 + 0.5*0.03238 + 1*0.00356
	want := run.Cost{ModelUSD: 7.5, ComputeUSD: round(compute), USD: round(model + compute)}
	if got != want {
		t.Errorf("Of = %+v, want %+v", got, want)
	}
	// A model without a price: its tokens are left out, and named.
	u.Model = "mystery"
	if got := p.Of(u); got.ModelUSD != 0 || got.UnpricedModel != "mystery" || got.USD != got.ComputeUSD {
		t.Errorf("unpriced: %+v", got)
	}
	// Nothing used, nothing to say.
	if got := p.Of(cost.Usage{Model: "mystery"}); got != (run.Cost{}) {
		t.Errorf("nothing used: %+v", got)
	}
}

func round(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }
