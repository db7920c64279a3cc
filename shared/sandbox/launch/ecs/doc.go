// Package ecs is the launch.Launcher of a deployment in AWS: each sandbox
// is an Amazon ECS task on Fargate, from the sandbox image's task
// definition (sandboximage: sandboxd serve --tls-from-token on Port, no
// task role), reached by the runner over TLS whose key it pins (package
// shared/sandbox/pin). It wraps the Amazon ECS API (RunTask, DescribeTasks,
// StopTask) and, for the public network layout, the Amazon EC2 API
// (DescribeNetworkInterfaces, for the task's public IP).
//
// A Launcher starts a cold task for a run (Acquire) and stops it when the
// run ends (Release); as a launch.Starter it starts, connects to and stops
// generic warm tasks for a pool.
//
// A run whose Definition allows a display tool (launch.Spec.Browser), and a
// warm task of that kind, runs from Config.BrowserTaskDefinition instead:
// the browser image's (sandboximage.BrowserTarget, with headless
// Chromium), with sandboximage.BrowserMemoryMiB more memory than its size's.
// Without one the Launcher says so (launch.Browsers) and such a start fails
// wrapping launch.ErrNoBrowser; the runner refuses those runs before that.
//
// # Starting a task
//
// RunTask gets the task definition (its launch type, Fargate, and its
// platform, arm64, are the task definition's), awsvpc networking in
// Config.Subnets and Config.SecurityGroups with a public IP unless
// Config.Private, the tags TagRunID (the run's id) or TagWarm, startedBy
// StartedBy, and the container's environment SANDBOXD_TOKEN set to the
// task's token: Config.Key's token of a fresh random nonce (package
// shared/sandbox/token), which the Warm of a pooled task carries instead
// of the token. The launcher then polls DescribeTasks until the
// task is RUNNING, finds its address (the ENI's private IPv4 address; with
// the public layout the ENI's public IP, from EC2), and polls sandboxd's
// health through a pinned client until it answers. A task that fails on
// the way (RunTask's failures, such as capacity; a task that stopped, with
// its stopped reason and the container's; the start timeout) is an error
// wrapping launch.ErrStart that names the task and the reason, and a task
// that was started but never became healthy is stopped, so that nothing is
// left billing.
//
// # Security boundary
//
// The token is the sandbox's only secret: it is the bearer token and, with
// pin, the key of its TLS. It is derived from the deployment's key and the
// task's nonce, so that a pool's records (nonce, address, ARN) hold
// nothing that reaches the task; the key is read from a Secrets Manager
// secret only the runner may read (FromEnv), on first use, and kept in
// memory. The token leaves this process only in the RunTask request (to
// the ECS API, over TLS) and in the request of every tool call, over the
// pinned TLS. Whoever may call ecs:DescribeTasks on the cluster reads it in
// the task's overrides while the task lives, and so does whoever reads
// RunTask's request parameters in CloudTrail, and can then call the
// sandbox's tools or pose as it: the stack grants ecs:DescribeTasks to the
// runner alone. A per-task secret in Secrets Manager, referenced by the
// container definition, would keep it out of both; that is left for later.
// The token is 256 bits, since the public key its certificate carries lets
// anyone who connects test guesses offline (see package pin).
package ecs
