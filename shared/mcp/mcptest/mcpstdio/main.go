// Command mcpstdio is a stdio MCP server for tests, built with the same SDK
// as the client: tests build it (mcptest.BuildStdio) and run it as a
// Definition's stdio server, confined in the sandbox. Its tools:
//
//   - echo {text}: answers the text.
//   - fail {}: answers a tool error (isError).
//   - read {path}: answers the file's content, or why it cannot be read.
//   - write {path, text}: writes the file, or answers why it cannot.
//   - env {}: answers its environment, one variable a line, sorted.
//   - pid {}: answers its process id.
//   - sleep {seconds}: answers after that long (a tool that hangs).
//   - exit {code}: writes a line on standard error and exits with code.
//   - drop {name}: removes the tool name (its tool list changes).
//
// With the argument -hang it never answers anything; with -crash it writes
// a line on standard error and exits 3 at once.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type textArgs struct {
	Text string `json:"text"`
}

type pathArgs struct {
	Path string `json:"path"`
	Text string `json:"text,omitempty"`
}

type numArgs struct {
	Seconds float64 `json:"seconds,omitempty"`
	Code    int     `json:"code,omitempty"`
}

type nameArgs struct {
	Name string `json:"name"`
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func failed(s string) *sdk.CallToolResult {
	r := text(s)
	r.IsError = true
	return r
}

func main() {
	switch {
	case slices.Contains(os.Args[1:], "-hang"):
		go func() { _, _ = io.Copy(io.Discard, os.Stdin) }()
		for {
			time.Sleep(time.Hour)
		}
	case slices.Contains(os.Args[1:], "-crash"):
		fmt.Fprintln(os.Stderr, "mcpstdio: crashing on purpose")
		os.Exit(3)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "mcpstdio", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes the text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return failed("the tool failed on purpose"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "read", Description: "Reads a file."},
		func(_ context.Context, _ *sdk.CallToolRequest, in pathArgs) (*sdk.CallToolResult, any, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return failed(err.Error()), nil, nil
			}
			return text(string(b)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "write", Description: "Writes a file."},
		func(_ context.Context, _ *sdk.CallToolRequest, in pathArgs) (*sdk.CallToolResult, any, error) {
			if err := os.WriteFile(in.Path, []byte(in.Text), 0o644); err != nil {
				return failed(err.Error()), nil, nil
			}
			return text("wrote " + in.Path), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Tells its environment."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			env := os.Environ()
			slices.Sort(env)
			return text(strings.Join(env, "\n")), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "Tells its process id."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return text(fmt.Sprint(os.Getpid())), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "sleep", Description: "Answers after a while."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in numArgs) (*sdk.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
			case <-ctx.Done():
			}
			return text("slept"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "exit", Description: "Exits the server."},
		func(_ context.Context, _ *sdk.CallToolRequest, in numArgs) (*sdk.CallToolResult, any, error) {
			fmt.Fprintf(os.Stderr, "mcpstdio: exiting with code %d on request\n", in.Code)
			os.Exit(in.Code)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "drop", Description: "Removes a tool."},
		func(_ context.Context, _ *sdk.CallToolRequest, in nameArgs) (*sdk.CallToolResult, any, error) {
			s.RemoveTools(in.Name)
			return text("dropped " + in.Name), nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpstdio:", err)
		os.Exit(1)
	}
}
