package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/client"
)

// improvePoll is how often improve asks whether the chat's agent has
// answered.
const improvePoll = 300 * time.Millisecond

// improveCmd is `agentsfleet improve NAME`: an improvement chat in the
// terminal. It reads a line at a time from in, prints the agent's answer,
// and when the agent proposes a revision, the diff (coloured on a
// terminal) and a prompt: apply, discard, or keep talking. An empty line
// or the end of in ends it (the chat stays open, its id printed).
func improveCmd(ctx context.Context, args []string, in io.Reader, out io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("improve", flag.ContinueOnError)
	c := connFlags(fs)
	e := remoteEnv{out: out, getenv: getenv, devKey: devKeyFile}
	s, pos, err := e.open(fs, c, args, "FLEET")
	if err != nil {
		return err
	}
	ch := &chatView{s: s, fleet: pos[0], in: bufio.NewScanner(in), color: isTerminal(out)}
	return ch.loop(ctx)
}

type chatView struct {
	s     *session
	fleet string
	in    *bufio.Scanner
	color bool
	id    string
	seen  int // messages printed
}

func (ch *chatView) prompt(p string) (string, bool) {
	fmt.Fprint(ch.s.out, p)
	if !ch.in.Scan() {
		fmt.Fprintln(ch.s.out)
		return "", false
	}
	return strings.TrimSpace(ch.in.Text()), true
}

func (ch *chatView) loop(ctx context.Context) error {
	fmt.Fprintf(ch.s.out, "Say what should change in fleet %s (an empty line ends).\n", ch.fleet)
	for {
		line, ok := ch.prompt("you> ")
		if !ok || line == "" {
			if ch.id != "" {
				fmt.Fprintf(ch.s.out, "the chat %s stays open\n", ch.id)
			}
			return nil
		}
		if err := ch.send(ctx, line); err != nil {
			return ch.s.fail(err)
		}
		v, err := ch.wait(ctx)
		if err != nil {
			return ch.s.fail(err)
		}
		done, err := ch.show(ctx, v)
		if err != nil || done {
			return err
		}
	}
}

func (ch *chatView) send(ctx context.Context, line string) error {
	if ch.id == "" {
		id, err := ch.s.c.StartImprovement(ctx, ch.fleet, line)
		ch.id = id
		return err
	}
	return ch.s.c.PostImprovement(ctx, ch.id, line)
}

// wait polls the chat until its agent has answered.
func (ch *chatView) wait(ctx context.Context) (client.Improvement, error) {
	t := time.NewTicker(improvePoll)
	defer t.Stop()
	for {
		v, err := ch.s.c.Improvement(ctx, ch.id)
		if err != nil || v.Status != "thinking" {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-t.C:
		}
	}
}

// show prints what is new in v and, for a proposal, asks what to do;
// done once the chat is applied or discarded.
func (ch *chatView) show(ctx context.Context, v client.Improvement) (bool, error) {
	for _, m := range v.Messages[min(ch.seen, len(v.Messages)):] {
		if m.Role == "agent" {
			fmt.Fprintf(ch.s.out, "agent> %s\n", m.Text)
		}
	}
	ch.seen = len(v.Messages)
	switch v.Status {
	case "failed":
		fmt.Fprintf(ch.s.out, "the turn failed: %s\n", v.Error)
	case "stale":
		fmt.Fprintf(ch.s.out, "the fleet changed since the proposal was made (revision %d); ask for a new one\n", v.Proposal.FromRevision)
	case "proposed":
		return ch.review(ctx, v.Proposal)
	}
	return false, nil
}

// review shows a proposal and asks whether to apply it.
func (ch *chatView) review(ctx context.Context, p *client.Proposal) (bool, error) {
	fmt.Fprintf(ch.s.out, "proposal against revision %d: %s\n", p.FromRevision, p.Summary)
	writeDiff(ch.s.out, p.Diff, ch.color)
	fmt.Fprintf(ch.s.out, "applying needs the scopes %s\n", strings.Join(p.Scopes, ", "))
	for {
		answer, ok := ch.prompt("apply, discard, or keep talking? [a/d/k] ")
		switch {
		case !ok:
			return true, nil
		case answer == "a" || answer == "apply":
			rev, err := ch.s.c.ApplyImprovement(ctx, ch.id)
			var ae *client.Error
			if errors.As(err, &ae) && ae.Code == "UZ-IMP-409" {
				fmt.Fprintln(ch.s.out, "not applied: "+ae.Message)
				return false, nil
			}
			if err != nil {
				return true, ch.s.fail(err)
			}
			fmt.Fprintf(ch.s.out, "applied: fleet %s is at revision %d\n", ch.fleet, rev)
			return true, nil
		case answer == "d" || answer == "discard":
			if err := ch.s.c.DiscardImprovement(ctx, ch.id); err != nil {
				return true, ch.s.fail(err)
			}
			fmt.Fprintln(ch.s.out, "discarded")
			return true, nil
		case answer == "k" || answer == "keep" || answer == "":
			return false, nil
		}
	}
}

// writeDiff prints a unified diff, its removed lines red and added lines
// green when color is set.
func writeDiff(w io.Writer, diff string, color bool) {
	for _, l := range strings.SplitAfter(diff, "\n") {
		if l == "" {
			continue
		}
		switch {
		case !color:
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
			l = "\x1b[1m" + strings.TrimSuffix(l, "\n") + "\x1b[0m\n"
		case strings.HasPrefix(l, "-"):
			l = "\x1b[31m" + strings.TrimSuffix(l, "\n") + "\x1b[0m\n"
		case strings.HasPrefix(l, "+"):
			l = "\x1b[32m" + strings.TrimSuffix(l, "\n") + "\x1b[0m\n"
		case strings.HasPrefix(l, "@@"):
			l = "\x1b[36m" + strings.TrimSuffix(l, "\n") + "\x1b[0m\n"
		}
		io.WriteString(w, l)
	}
}

// revisions is `agentsfleet revisions FLEET [--diff A B]`: the fleet's
// revisions, newest first, with who made each, from where and when; with
// --diff, the diff of revision B against revision A.
func (e remoteEnv) revisions(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("revisions", flag.ContinueOnError)
	c := connFlags(fs)
	diffFrom := fs.Int64("diff", 0, "show the diff from this revision to the one after the fleet's name (revisions FLEET --diff A B)")
	want := []string{"FLEET"}
	if slices.ContainsFunc(args, func(a string) bool { return a == "--diff" || a == "-diff" || strings.HasPrefix(a, "--diff=") }) {
		want = append(want, "B (revisions FLEET --diff A B)")
	}
	s, pos, err := e.open(fs, c, args, want...)
	if err != nil {
		return err
	}
	fleetName := pos[0]
	if len(pos) > 1 {
		return s.revisionDiff(ctx, fleetName, *diffFrom, pos[1])
	}
	rows := [][]string{{"REVISION", "WHEN", "BY", "VIA", "FROM"}}
	for cursor := ""; ; {
		page, err := s.c.Revisions(ctx, fleetName, cursor)
		if err != nil {
			return s.fail(err)
		}
		for _, r := range page.Revisions {
			if s.json {
				s.emit(r)
				continue
			}
			rows = append(rows, []string{fmt.Sprint(r.Revision), when(r.CreatedAt), dash(r.By), dash(r.Via), revisionSource(r)})
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if !s.json {
		s.table(rows)
	}
	return nil
}

func (s *session) revisionDiff(ctx context.Context, fleetName string, from int64, b string) error {
	to, err := strconv.ParseInt(b, 10, 64)
	if from < 1 || err != nil || to < 1 {
		return fmt.Errorf("%w: revisions FLEET --diff A B takes two revision numbers from 1, not %d and %q", errUsage, from, b)
	}
	d, err := s.c.RevisionDiff(ctx, fleetName, from, to)
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		s.emit(d)
		return nil
	}
	if d.Diff == "" {
		fmt.Fprintf(s.out, "revisions %d and %d have the same Definition\n", from, to)
		return nil
	}
	writeDiff(s.out, d.Diff, isTerminal(s.out))
	return nil
}

func revisionSource(r client.Revision) string {
	switch {
	case r.Improvement != "":
		return "chat " + r.Improvement
	case r.Restored != 0:
		return fmt.Sprintf("restored %d", r.Restored)
	}
	return "-"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
