// Package run is the run's vocabulary (DESIGN.md §10): what a run's result
// is — its status, answer, error and usage — and the codes a run.ended
// error carries when no product code (package shared/fault) says why. The
// runner's run.ended event, GET /v1/runs/{id} and a completion callback all
// carry these types, so their JSON is written here once.
//
// It is a leaf: it imports nothing but the standard library, so that the
// API's wire shapes and its Go client can use it without the store, the
// runner or the AWS SDK.
package run
