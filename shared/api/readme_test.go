package api

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// TestREADMEListsEveryFaultCode checks README.md's tables of codes against
// package fault and the statuses here, both ways: every code is listed
// with the status the API answers it with, and every listed UZ code exists.
func TestREADMEListsEveryFaultCode(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(strings.Trim(strings.TrimSpace(sc.Text()), "|"), "|")
		if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			continue
		}
		status, err := strconv.Atoi(strings.TrimSpace(cells[1]))
		if err != nil {
			continue // another table with codes in its first column
		}
		listed[strings.Trim(strings.TrimSpace(cells[0]), "`")] = status
	}
	known := map[string]bool{}
	for _, c := range fault.Codes() {
		known[c.ID()] = true
		got, ok := listed[c.ID()]
		if !ok {
			t.Errorf("README.md's codes tables lack %s", c.ID())
			continue
		}
		if want := Status(c); got != want {
			t.Errorf("README.md says %s answers %d; the API answers %d", c.ID(), got, want)
		}
	}
	for id := range listed {
		if strings.HasPrefix(id, "UZ-") && !known[id] {
			t.Errorf("README.md lists %s, which package fault does not declare", id)
		}
	}
}
