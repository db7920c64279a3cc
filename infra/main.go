// Command infra is agentsfleet's CDK app: it synthesizes the stack
// Agentsfleet (package stack) into the cloud assembly.
//
// The CDK CLI runs it through the repository root's cdk.json (`cdk synth`,
// `cdk deploy`, `cdklocal deploy`), passing the context and the output
// directory in CDK_CONTEXT_JSON and CDK_OUTDIR. `make synth` runs it
// without the CLI: then it reads the root cdk.json's context itself, takes
// `-c key=value` arguments as the CLI would, and writes to cdk.out at the
// root. A relative output directory is the root's, where cdk.json and the
// CLI are.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentsfleet/agentsfleet/infra/stack"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	root, err := findRoot()
	if err != nil {
		return err
	}
	props := &awscdk.AppProps{}
	outdir := os.Getenv("CDK_OUTDIR")
	if outdir == "" {
		outdir = "cdk.out"
	}
	if !filepath.IsAbs(outdir) {
		outdir = filepath.Join(root, outdir)
	}
	props.Outdir = jsii.String(outdir)
	if os.Getenv("CDK_CONTEXT_JSON") == "" {
		// Not run by the CLI: cdk.json's context, then -c arguments.
		ctx, err := cdkJSONContext(filepath.Join(root, "cdk.json"))
		if err != nil {
			return err
		}
		for i := 0; i < len(args); i++ {
			a := args[i]
			if (a == "-c" || a == "--context") && i+1 < len(args) {
				i++
				a = args[i]
			} else if v, ok := strings.CutPrefix(a, "--context="); ok {
				a = v
			} else {
				return fmt.Errorf("argument %q: want -c key=value", a)
			}
			k, v, ok := strings.Cut(a, "=")
			if !ok {
				return fmt.Errorf("context %q: want key=value", a)
			}
			ctx[k] = v
		}
		props.Context = &ctx
	}
	app := awscdk.NewApp(props)
	settings, err := stack.FromContext(root, func(key string) any { return app.Node().TryGetContext(jsii.String(key)) })
	if err != nil {
		return err
	}
	if _, err := stack.New(app, settings, &awscdk.StackProps{Env: env()}); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}

// env is the account and region the CLI resolved (CDK_DEFAULT_*), or none:
// an environment-agnostic stack.
func env() *awscdk.Environment {
	account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	if account == "" || region == "" {
		return nil
	}
	return &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
}

// findRoot is the repository root: the nearest directory at or above the
// working directory that holds infra/go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "infra", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the repository root (a directory with infra/go.mod) is not at or above the working directory")
		}
		dir = parent
	}
}

// cdkJSONContext is the "context" object of cdk.json at path.
func cdkJSONContext(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Context == nil {
		f.Context = map[string]any{}
	}
	return f.Context, nil
}
