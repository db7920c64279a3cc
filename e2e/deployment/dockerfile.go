package deployment

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// imageConfig is what an image built from a Dockerfile's stage runs: its
// ENTRYPOINT and CMD (exec form) and its ENV, as the stage has them after
// inheriting from its base stage.
type imageConfig struct {
	entrypoint, cmd []string
	env             []string // KEY=VALUE, in order; a later one wins
}

// stage is one FROM … [AS name] of a Dockerfile and the instructions of
// its own that the harness reads.
type stage struct {
	name, base string
	entrypoint []string
	cmd        []string
	setsEntry  bool // ENTRYPOINT given in this stage
	setsCmd    bool // CMD given in this stage
	env        []string
}

// stageConfig reads a Dockerfile and returns the image its stage target
// builds: the last stage when target is empty, as `docker build` without
// --target does. A stage FROM an earlier stage inherits that stage's
// ENTRYPOINT, CMD and ENV, as Docker's builder does: its own CMD, if any,
// replaces the base's, and an ENTRYPOINT of its own clears the CMD it
// would inherit. An unknown target is an error.
func stageConfig(dockerfile, target string) (imageConfig, error) {
	stages, err := parseStages(dockerfile)
	if err != nil {
		return imageConfig{}, err
	}
	if len(stages) == 0 {
		return imageConfig{}, fmt.Errorf("the Dockerfile has no FROM")
	}
	byName := map[string]int{}
	for i, s := range stages {
		if s.name != "" {
			byName[strings.ToLower(s.name)] = i
		}
	}
	at := len(stages) - 1
	if target != "" {
		i, ok := byName[strings.ToLower(target)]
		if !ok {
			return imageConfig{}, fmt.Errorf("the Dockerfile has no stage %q", target)
		}
		at = i
	}
	// The chain from the stage back to an outside image, nearest first.
	var chain []stage
	for i := at; ; {
		chain = append(chain, stages[i])
		j, ok := byName[strings.ToLower(stages[i].base)]
		if !ok || j >= i {
			break // an image from outside the Dockerfile: nothing known of it
		}
		i = j
	}
	var c imageConfig
	for k := len(chain) - 1; k >= 0; k-- {
		s := chain[k]
		if s.setsEntry {
			c.entrypoint, c.cmd = s.entrypoint, nil
		}
		if s.setsCmd {
			c.cmd = s.cmd
		}
		c.env = append(c.env, s.env...)
	}
	return c, nil
}

// parseStages splits a Dockerfile into its stages, reading FROM,
// ENTRYPOINT, CMD and ENV (continuation lines joined, comments skipped).
// ENTRYPOINT and CMD must be in exec form (JSON), as the sandbox image's
// are: a shell form runs /bin/sh, which a task of the harness cannot.
func parseStages(dockerfile string) ([]stage, error) {
	var stages []stage
	var lines []string
	var cur strings.Builder
	for _, l := range strings.Split(dockerfile, "\n") {
		t := strings.TrimSpace(l)
		if cur.Len() == 0 && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if strings.HasPrefix(t, "#") {
			continue // a comment inside a continued instruction
		}
		if strings.HasSuffix(t, `\`) {
			cur.WriteString(strings.TrimSuffix(t, `\`) + " ")
			continue
		}
		cur.WriteString(t)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	for _, l := range lines {
		word, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		instr := strings.ToUpper(word)
		if instr == "FROM" {
			f := strings.Fields(rest)
			for len(f) > 0 && strings.HasPrefix(f[0], "--") { // --platform=…
				f = f[1:]
			}
			if len(f) == 0 {
				return nil, fmt.Errorf("FROM %q names no image", rest)
			}
			s := stage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			continue // ARG before the first FROM
		}
		s := &stages[len(stages)-1]
		switch instr {
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				return nil, fmt.Errorf("%s %s: want the exec form (a JSON array): %w", instr, rest, err)
			}
			if instr == "CMD" {
				s.cmd, s.setsCmd = v, true
			} else {
				s.entrypoint, s.setsEntry = v, true
			}
		case "ENV":
			env, err := parseEnv(rest)
			if err != nil {
				return nil, err
			}
			s.env = append(s.env, env...)
		}
	}
	return stages, nil
}

// parseEnv reads an ENV instruction's arguments: KEY=VALUE pairs (a value
// may be double-quoted) or the older KEY VALUE form.
func parseEnv(rest string) ([]string, error) {
	if k, v, ok := strings.Cut(rest, " "); ok && !strings.Contains(k, "=") {
		return []string{k + "=" + strings.TrimSpace(v)}, nil
	}
	var out []string
	for rest != "" {
		k, v, ok := strings.Cut(rest, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("ENV %s: want KEY=VALUE", rest)
		}
		if strings.HasPrefix(v, `"`) {
			end := 1
			for end < len(v) && (v[end] != '"' || v[end-1] == '\\') {
				end++
			}
			if end == len(v) {
				return nil, fmt.Errorf("ENV %s: an unclosed quote", rest)
			}
			uq, err := strconv.Unquote(v[:end+1])
			if err != nil {
				return nil, fmt.Errorf("ENV %s: %w", rest, err)
			}
			out = append(out, k+"="+uq)
			rest = strings.TrimSpace(v[end+1:])
			continue
		}
		val, next, _ := strings.Cut(v, " ")
		out = append(out, k+"="+val)
		rest = strings.TrimSpace(next)
	}
	return out, nil
}
