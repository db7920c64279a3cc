package secret

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// ReadFile reads a local secrets file for the command line and the local
// stack: either a JSON object of NAME → value, or lines of NAME=value
// (blank lines and lines starting with # are skipped; one pair of matching
// surrounding quotes is removed from a value). Errors name the file and
// line, never a value.
func ReadFile(path string) (Map, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read secrets file: %w", err)
	}
	m := Map{}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(t, &m); err != nil {
			return nil, fmt.Errorf("secrets file %s: not a JSON object of names to string values", path)
		}
		return m, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(strings.TrimPrefix(name, "export "))
		if !ok || name == "" {
			return nil, fmt.Errorf("secrets file %s line %d: want NAME=value", path, n)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		m[name] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("secrets file %s: %w", path, err)
	}
	return m, nil
}
