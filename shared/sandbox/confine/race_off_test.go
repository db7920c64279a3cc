//go:build linux && !race

package confine

const raceEnabled = false
