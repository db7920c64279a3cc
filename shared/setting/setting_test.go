package setting_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/setting"
)

func TestJoinAndCheck(t *testing.T) {
	t.Parallel()
	vars := setting.Join(
		[]setting.Var{{Name: "A", Required: true}, {Name: "B"}},
		[]setting.Var{{Name: "B", Required: true}, {Name: "S_ARN", Required: true, Or: "S"}, {Name: "S"}},
		setting.Required([]setting.Var{{Name: "C"}}),
	)
	if got, want := setting.Names(vars), []string{"A", "B", "S_ARN", "S", "C"}; !slices.Equal(got, want) {
		t.Fatalf("Join's names = %q, want %q", got, want)
	}
	env := map[string]string{"A": "a", "S": "value", "C": " "}
	getenv := func(k string) string { return env[k] }
	if got, want := setting.Missing(getenv, vars), []string{"B", "C"}; !slices.Equal(got, want) {
		t.Errorf("Missing = %q, want %q (B required by its second listing, C blank, S standing in for S_ARN)", got, want)
	}
	delete(env, "S")
	err := setting.Check(getenv, vars, "the test")
	if err == nil || err.Error() != "B, S_ARN (or S), C not set: the test needs them" {
		t.Errorf("Check = %v", err)
	}
	env["B"], env["C"], env["S_ARN"] = "b", "c", "arn"
	if err := setting.Check(getenv, vars, "the test"); err != nil {
		t.Errorf("Check with every setting = %v", err)
	}
	if !(setting.Var{Name: setting.LambdaFunctionName}).ByLambda() || (setting.Var{Name: "AGENTSFLEET_TABLE"}).ByLambda() ||
		!strings.HasPrefix(setting.LambdaRuntimeAPI, "AWS_LAMBDA_") {
		t.Error("ByLambda is wrong")
	}
}
