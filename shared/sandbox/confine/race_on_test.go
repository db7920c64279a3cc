//go:build linux && race

package confine

// raceEnabled says the tests run under the race detector, whose shadow
// memory makes address-space limits meaningless for the helper binary.
const raceEnabled = true
