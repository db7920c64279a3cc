package invoke

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// The settings FromEnv reads: each function's name or ARN.
const (
	EnvRunner   = "AGENTSFLEET_FUNCTION_RUNNER"
	EnvWebtools = "AGENTSFLEET_FUNCTION_WEBTOOLS"
	EnvSlack    = "AGENTSFLEET_FUNCTION_SLACK"
)

// Callee is a function that an Invoker from FromEnv calls: Function
// (Runner, Webtools or Slack) by the name or ARN in the variable Env
// (EnvRunner, EnvWebtools, EnvSlack; setting.LambdaFunctionName for the
// calling function itself, as the runner invokes itself).
type Callee struct {
	Function string
	Env      string
	// Required: FromEnv fails without Env. An optional function left
	// unnamed is an ErrUnknownFunction when called.
	Required bool
}

// Settings are the variables FromEnv reads for callees.
func Settings(callees []Callee) []setting.Var {
	out := make([]setting.Var, len(callees))
	for i, c := range callees {
		out[i] = setting.Var{Name: c.Env, Required: c.Required}
	}
	return out
}

// FromEnv is the Lambda invoker of callees, each named by its setting,
// with a Lambda client made from awsCfg. An error names every required
// setting that is not set. It makes no AWS call.
func FromEnv(getenv func(string) string, awsCfg aws.Config, callees []Callee) (*Lambda, error) {
	names := map[string]string{}
	var missing, fns []string
	for _, c := range callees {
		if v := strings.TrimSpace(getenv(c.Env)); v != "" {
			names[c.Function] = v
		} else if c.Required {
			missing, fns = append(missing, c.Env), append(fns, c.Function)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s not set: they name the %s functions", strings.Join(missing, ", "), strings.Join(fns, ", "))
	}
	return NewLambda(lambda.NewFromConfig(awsCfg), names), nil
}

// Has reports whether l can call function: whether it has its name.
func (l *Lambda) Has(function string) bool { return l.names[function] != "" }
