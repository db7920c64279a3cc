// Package awstest gives tests an AWS API emulator to talk to over the wire.
//
// By default it starts moto (see package emulator) on a free loopback port,
// once per test binary. When AWS_ENDPOINT_URL is already set (LocalStack, or
// a moto server someone started) it uses that endpoint and starts nothing.
//
// Tests isolate themselves by name (UniqueName) rather than by resetting the
// emulator, so packages and parallel tests can share one server.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { awstest.Main(m) }
//
// and in a test:
//
//	db := dynamodb.NewFromConfig(awstest.Config(t))
package awstest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/emulator"
)

var (
	mu       sync.Mutex
	endpoint string // set by Main
	startErr error
	seq      atomic.Int64
)

// Main starts the emulator (unless AWS_ENDPOINT_URL is set), runs the tests
// and stops it. It calls os.Exit with the tests' status. A failure to start
// fails only the tests that ask for the emulator.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with more to do after the tests: it starts
// the emulator, runs the tests, stops it, and returns their status.
func Run(m *testing.M) int {
	stop := start()
	defer stop()
	return m.Run()
}

func start() (stop func()) {
	mu.Lock()
	defer mu.Unlock()
	if ep := os.Getenv("AWS_ENDPOINT_URL"); ep != "" {
		endpoint = strings.TrimRight(ep, "/")
		return func() {}
	}
	srv, err := emulator.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		startErr = err
		return func() {}
	}
	endpoint = srv.Endpoint
	return srv.Stop
}

// Endpoint returns the emulator's base URL, failing the test if none runs.
func Endpoint(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if startErr != nil {
		t.Fatalf("AWS emulator: %v", startErr)
	}
	if endpoint == "" {
		t.Fatal("AWS emulator: not started; call awstest.Main from TestMain")
	}
	return endpoint
}

// Config returns an aws.Config pointed at the emulator.
func Config(t testing.TB) aws.Config {
	t.Helper()
	cfg, err := emulator.Config(context.Background(), Endpoint(t))
	if err != nil {
		t.Fatalf("AWS emulator config: %v", err)
	}
	return cfg
}

// UniqueName returns a name unique to this test binary run, for tables,
// secrets and other resources, so tests can share one emulator.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	return fmt.Sprintf("%s-%d-%d-%d", prefix, os.Getpid(), time.Now().UnixNano()%1e6, seq.Add(1))
}
