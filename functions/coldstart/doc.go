// Package coldstart holds the tests and benchmarks of the Lambda binaries'
// cold starts: each binary of functions/ is built as `make lambdas` builds
// it (for this machine's architecture), started under a local fake of the
// Lambda Runtime API with a deployment's settings, and measured from exec
// to its first poll for an invocation (ready). The tests check that no
// binary makes an AWS call before its first request, and that each serves
// the handler the local stack registers for it (one invocation, whose
// answer only that handler gives); the benchmark
// compares each binary's start-to-ready time with a minimal aws-lambda-go
// function built the same way (testdata/minimal).
package coldstart
