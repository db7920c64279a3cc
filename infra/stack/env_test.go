package stack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/infra/stack"
	"github.com/agentsfleet/agentsfleet/shared/cost"
	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/settings"
	"github.com/agentsfleet/agentsfleet/shared/model/anthropic"
	"github.com/agentsfleet/agentsfleet/shared/model/openai"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// TestFunctionSettings: in each layout, and with every optional setting
// of the stack set, the template gives each function every setting its
// main cannot start without, and no setting its main does not read:
// shared/deploy/settings.Of, which its tests hold to what each
// function's builder reads. (Lambda sets AWS_LAMBDA_FUNCTION_NAME itself.)
// No function is given a setting meant for one machine only.
func TestFunctionSettings(t *testing.T) {
	if !slices.Equal(stack.Functions, deploy.Functions) {
		t.Fatalf("the stack deploys %q, shared/deploy builds %q", stack.Functions, deploy.Functions)
	}
	_, every := synth(t, map[string]string{stack.CtxModelProvider: "openai", stack.CtxModel: "gpt-5", stack.CtxWarmPool: "small=1",
		stack.CtxSearchBackend: "searxng", stack.CtxSearchURL: "https://search.example.com/", stack.CtxSlackDefaultFleet: "triage",
		stack.CtxModelPrices: "gpt-5=1.25/10", stack.CtxComputePrices: "fargate_vcpu_hour=0.04"})
	templates := map[string]map[string]any{"every option": every}
	for _, name := range []string{"public", "private", "anthropic", "browser"} {
		_, m := layout(t, name)
		templates[name] = m
	}
	// Settings for one machine only: the test-only egress escape hatch,
	// and secrets given as they are (a deployment names their Secrets
	// Manager secret instead).
	localOnly := map[string]bool{egress.AllowEnv: true, anthropic.EnvAPIKey: true, openai.EnvAPIKey: true, web.EnvSearchKey: true}
	for _, fn := range deploy.Functions {
		for _, v := range settings.Of(fn) {
			if v.Or != "" {
				localOnly[v.Or] = true
			}
		}
	}
	given := map[string]map[string]bool{} // what some template gives, by function
	for name, m := range templates {
		fns := resources(m, "AWS::Lambda::Function")
		for _, fn := range deploy.Functions {
			p, ok := fns[strings.ToUpper(fn[:1])+fn[1:]]
			if !ok {
				t.Fatalf("%s: no %s function in the template", name, fn)
			}
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			reads := map[string]bool{}
			for _, v := range settings.Of(fn) {
				reads[v.Name] = true
				_, has := vars[v.Name]
				_, hasOr := vars[v.Or]
				if v.Required && !v.ByLambda() && !has && (v.Or == "" || !hasOr) {
					t.Errorf("%s: the template does not give the %s function %s, which it cannot start without", name, fn, v.Name)
				}
			}
			if given[fn] == nil {
				given[fn] = map[string]bool{}
			}
			for k := range vars {
				given[fn][k] = true
				if !reads[k] {
					t.Errorf("%s: the template gives the %s function %s, which it does not read", name, fn, k)
				}
				if localOnly[k] {
					t.Errorf("%s: the template gives the %s function %s, a setting for one machine only", name, fn, k)
				}
			}
		}
	}
	// The optional settings the stack gives when asked reach the functions.
	for fn, want := range map[string][]string{
		"runner": {"AGENTSFLEET_MODEL", "AGENTSFLEET_SANDBOX_WARM", "AGENTSFLEET_MODEL_KEYS_ARN",
			"AGENTSFLEET_SANDBOX_BROWSER_TASK_DEFINITION", "AGENTSFLEET_SANDBOX_BROWSER_WARM"},
		"webtools": {"AGENTSFLEET_SEARCH_BACKEND", "AGENTSFLEET_SEARCH_URL", "AGENTSFLEET_SEARCH_API_KEY_SECRET"},
		"slack":    {"AGENTSFLEET_SLACK_DEFAULT_FLEET"},
	} {
		for _, k := range want {
			if !given[fn][k] {
				t.Errorf("no layout gives the %s function %s", fn, k)
			}
		}
	}
}

// TestPricesReachTheRunner: the prices given as context are the runner's
// settings, as written.
func TestPricesReachTheRunner(t *testing.T) {
	_, m := synth(t, map[string]string{stack.CtxModelPrices: "gpt-5=1.25/10", stack.CtxComputePrices: "lambda_gb_second=0.00002"})
	env, _ := resources(m, "AWS::Lambda::Function")["Runner"]["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	if vars[cost.EnvModelPrices] != "gpt-5=1.25/10" || vars[cost.EnvComputePrices] != "lambda_gb_second=0.00002" {
		t.Errorf("the runner's prices: %v, %v", vars[cost.EnvModelPrices], vars[cost.EnvComputePrices])
	}
}
