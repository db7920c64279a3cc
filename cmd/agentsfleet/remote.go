package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/agentsfleet/agentsfleet/shared/api/client"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The remote commands speak to the HTTP API (shared/api/client) of
// `agentsfleet dev` or of a deployment, rather than running anything here.

// devKeyFile is where `agentsfleet dev` (run from this folder, with its
// default --state) writes its API key.
var devKeyFile = filepath.Join(".dev", "api-key")

// remoteEnv is what the remote commands read and write besides their
// arguments.
type remoteEnv struct {
	out    io.Writer
	getenv func(string) string
	// devKey is the file of the local stack's key (devKeyFile).
	devKey string
}

// remote runs one of remoteCommands; args start with the command's name.
func remote(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	return remoteEnv{out: out, getenv: getenv, devKey: devKeyFile}.run(ctx, args)
}

func (e remoteEnv) run(ctx context.Context, args []string) error {
	cmd, rest := args[0], args[1:]
	sub := func(names ...string) (string, error) {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return "", fmt.Errorf("%w: %s takes a subcommand: %s", errUsage, cmd, strings.Join(names, ", "))
		}
		for _, n := range names {
			if rest[0] == n {
				s := rest[0]
				rest = rest[1:]
				return s, nil
			}
		}
		return "", fmt.Errorf("%w: %s has no subcommand %q; it has %s", errUsage, cmd, rest[0], strings.Join(names, ", "))
	}
	switch cmd {
	case "apply":
		return e.apply(ctx, rest)
	case "fleets":
		return e.fleets(ctx, rest)
	case "pause", "resume":
		return e.pauseFleet(ctx, cmd, rest)
	case "start":
		return e.start(ctx, rest)
	case "runs":
		return e.runs(ctx, rest)
	case "events":
		return e.events(ctx, rest)
	case "egress":
		return e.egress(ctx, rest)
	case "cancel":
		return e.cancel(ctx, rest)
	case "approve":
		return e.decide(ctx, afrun.DecisionApprove, rest)
	case "deny":
		return e.decide(ctx, afrun.DecisionDeny, rest)
	case "schedules":
		return e.schedules(ctx, rest)
	case "schedule":
		s, err := sub("create", "delete", "pause", "resume", "run")
		if err != nil {
			return err
		}
		if s == "create" {
			return e.scheduleCreate(ctx, rest)
		}
		return e.scheduleAct(ctx, s, rest)
	case "revisions":
		return e.revisions(ctx, rest)
	case "keys":
		s, err := sub("create", "list", "revoke")
		if err != nil {
			return err
		}
		switch s {
		case "create":
			return e.keysCreate(ctx, rest)
		case "list":
			return e.keysList(ctx, rest)
		}
		return e.keysRevoke(ctx, rest)
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}

// conn is the flags every remote command takes.
type conn struct {
	api, key, output string
}

// connFlags defines --api, --key and --output on fs.
func connFlags(fs *flag.FlagSet) *conn {
	fs.SetOutput(io.Discard)
	c := &conn{}
	fs.StringVar(&c.api, "api", "", "the API's URL (else AGENTSFLEET_API_URL, else the local stack's)")
	fs.StringVar(&c.key, "key", "", "the API key (else AGENTSFLEET_API_KEY, else the local stack's .dev/api-key)")
	fs.StringVar(&c.output, "output", "text", "text, or json for one JSON object (a line each for lists and events)")
	return c
}

// session is one remote command's connection to the API.
type session struct {
	c       *client.Client
	json    bool
	out     io.Writer
	urlFrom string // where the URL came from
	keyFrom string // where the key came from
	local   bool   // the URL is the local stack's default
}

// open parses args with fs (flags may come before, between or after the
// positional arguments), checks the positional arguments against want
// (names; a last name ending in "..." takes the rest), and connects.
func (e remoteEnv) open(fs *flag.FlagSet, c *conn, args []string, want ...string) (*session, []string, error) {
	name := fs.Name()
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", errUsage, name, err)
	}
	rest := len(want) > 0 && strings.HasSuffix(want[len(want)-1], "...")
	switch {
	case len(pos) < len(want):
		return nil, nil, fmt.Errorf("%w: %s needs %s", errUsage, name, strings.TrimSuffix(strings.Join(want[len(pos):], " "), "..."))
	case len(pos) > len(want) && !rest:
		return nil, nil, fmt.Errorf("%w: %s takes %d argument(s) (%s), not %d: %q", errUsage, name, len(want), strings.Join(want, " "), len(pos), pos)
	case c.output != "text" && c.output != "json":
		return nil, nil, fmt.Errorf("%w: --output is text or json, not %q", errUsage, c.output)
	}
	if rest {
		pos = append(pos[:len(want)-1], strings.Join(pos[len(want)-1:], " "))
	}
	s, err := e.connect(c)
	if err != nil {
		return nil, nil, err
	}
	s.json = c.output == "json"
	return s, pos, nil
}

// connect finds the API's URL and key: the flags, else the environment,
// else the local stack (AGENTSFLEET_ADDR or its default, and the key
// `agentsfleet dev` wrote to .dev/api-key).
func (e remoteEnv) connect(c *conn) (*session, error) {
	s := &session{out: e.out}
	u := c.api
	switch {
	case u != "":
		s.urlFrom = "--api"
	case e.getenv("AGENTSFLEET_API_URL") != "":
		u, s.urlFrom = e.getenv("AGENTSFLEET_API_URL"), "AGENTSFLEET_API_URL"
	case e.getenv("AGENTSFLEET_ADDR") != "":
		u, s.urlFrom, s.local = "http://"+e.getenv("AGENTSFLEET_ADDR"), "AGENTSFLEET_ADDR, the local stack's address", true
	default:
		u, s.urlFrom, s.local = "http://"+defaultAddr, "the local stack's default address", true
	}
	key := c.key
	switch {
	case key != "":
		s.keyFrom = "--key"
	case e.getenv("AGENTSFLEET_API_KEY") != "":
		key, s.keyFrom = e.getenv("AGENTSFLEET_API_KEY"), "AGENTSFLEET_API_KEY"
	case loopback(u):
		// Only the local stack gets the local stack's key.
		if raw, err := os.ReadFile(e.devKey); err == nil {
			key, s.keyFrom = strings.TrimSpace(string(raw)), e.devKey+" (written by agentsfleet dev)"
		}
	}
	cl, err := client.New(u, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (from %s)", errUsage, err, s.urlFrom)
	}
	if key == "" {
		hint := ""
		if loopback(u) {
			hint = fmt.Sprintf("; `agentsfleet dev` writes one to %s, and there is none here", e.devKey)
		}
		return nil, fmt.Errorf("%w: no API key for %s: give --key KEY or set AGENTSFLEET_API_KEY%s", errUsage, cl.URL(), hint)
	}
	s.c = cl
	return s, nil
}

// loopback reports whether the URL's host is this machine.
func loopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// parseInterspersed parses fs's flags wherever they are among args and
// returns the other arguments; after "--" every argument is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if len(left) == 0 {
			return pos, nil
		}
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" {
			return append(pos, left...), nil
		}
		pos = append(pos, left[0])
		args = left[1:]
	}
}

// fail explains an error of the API: a refused key says where it came
// from, an API that is not there where its URL came from.
func (s *session) fail(err error) error {
	var ae *client.Error
	var ue *client.UnreachableError
	switch {
	case errors.As(err, &ae) && ae.Status == 401:
		return fmt.Errorf("the API at %s refused the key from %s: %w", s.c.URL(), s.keyFrom, err)
	case errors.As(err, &ue) && s.local:
		return fmt.Errorf("%w (the URL is %s); start the local stack with `agentsfleet dev`, or give --api URL", err, s.urlFrom)
	case errors.As(err, &ue):
		return fmt.Errorf("%w (the URL is from %s)", err, s.urlFrom)
	}
	return err
}

// emit prints v as one JSON line.
func (s *session) emit(v any) {
	enc := json.NewEncoder(s.out)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// table prints rows, the first being the header, in aligned columns.
func (s *session) table(rows [][]string) {
	tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// apply is `agentsfleet apply -f FILE`: the Definition becomes its fleet's
// next revision. The API checks it; its answer names the line and field of
// a problem.
func (e remoteEnv) apply(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	c := connFlags(fs)
	file := fs.String("f", "", "the Definition (.toml or .json)")
	s, _, err := e.open(fs, c, args)
	if err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("%w: apply needs -f FILE", errUsage)
	}
	format, ok := fleet.FormatOf(*file)
	if !ok {
		return fmt.Errorf("%w: %s: a Definition file ends in .toml or .json", errUsage, *file)
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	name, ct := definitionName(data, format)
	if name == "" {
		// No name to put it at: the parser says what is wrong, as the API would.
		if _, err := fleet.Parse(data, format); err != nil {
			return fmt.Errorf("%s: %w", *file, err)
		}
		return fmt.Errorf("%s: the Definition has no name", *file)
	}
	got, err := s.c.ApplyFleet(ctx, name, data, ct)
	if err != nil {
		return fmt.Errorf("apply %s: %w", *file, s.fail(err))
	}
	if s.json {
		s.emit(got)
		return nil
	}
	if got.Unchanged {
		fmt.Fprintf(s.out, "fleet %s: revision %d, unchanged (the fleet already runs this Definition)\n", got.Name, got.Revision)
	} else {
		fmt.Fprintf(s.out, "fleet %s: revision %d\n", got.Name, got.Revision)
	}
	return nil
}

// definitionName is the name a Definition document gives itself, and its
// content type.
func definitionName(data []byte, format fleet.Format) (string, string) {
	var d struct {
		Name string `toml:"name" json:"name"`
	}
	if format == fleet.JSON {
		json.Unmarshal(data, &d)
		return d.Name, "application/json"
	}
	toml.Unmarshal(data, &d)
	return d.Name, "application/toml"
}

// fleets is `agentsfleet fleets`: every fleet.
func (e remoteEnv) fleets(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fleets", flag.ContinueOnError)
	c := connFlags(fs)
	s, _, err := e.open(fs, c, args)
	if err != nil {
		return err
	}
	rows := [][]string{{"FLEET", "REVISION", "STATE", "SCHEDULES", "UPDATED"}}
	cursor := ""
	for {
		page, err := s.c.Fleets(ctx, cursor)
		if err != nil {
			return s.fail(err)
		}
		for _, f := range page.Fleets {
			if s.json {
				s.emit(f)
				continue
			}
			state := "active"
			if f.Paused {
				state = "paused"
			}
			rows = append(rows, []string{f.Name, fmt.Sprint(f.Revision), state, fmt.Sprint(f.Schedules), when(f.UpdatedAt)})
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	switch {
	case s.json:
	case len(rows) == 1:
		fmt.Fprintln(s.out, "no fleets yet: agentsfleet apply -f DEFINITION makes one")
	default:
		s.table(rows)
	}
	return nil
}

// pauseFleet is `agentsfleet pause FLEET` and `agentsfleet resume FLEET`.
func (e remoteEnv) pauseFleet(ctx context.Context, cmd string, args []string) error {
	var fs *flag.FlagSet
	set := func(s *session, name string) (client.Fleet, error) { return s.c.Resume(ctx, name) }
	if cmd == "pause" {
		fs = flag.NewFlagSet("pause", flag.ContinueOnError)
		set = func(s *session, name string) (client.Fleet, error) { return s.c.Pause(ctx, name) }
	} else {
		fs = flag.NewFlagSet("resume", flag.ContinueOnError)
	}
	c := connFlags(fs)
	s, pos, err := e.open(fs, c, args, "FLEET")
	if err != nil {
		return err
	}
	f, err := set(s, pos[0])
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		s.emit(f)
		return nil
	}
	if f.Paused {
		fmt.Fprintf(s.out, "fleet %s paused: it starts no runs until resumed\n", f.Name)
	} else {
		fmt.Fprintf(s.out, "fleet %s resumed\n", f.Name)
	}
	return nil
}

// start is `agentsfleet start FLEET INPUT [--follow]`.
func (e remoteEnv) start(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	c := connFlags(fs)
	follow := fs.Bool("follow", false, "show the run as it happens, and exit 0 only if it succeeds")
	s, pos, err := e.open(fs, c, args, "FLEET", "INPUT...")
	if err != nil {
		return err
	}
	if strings.TrimSpace(pos[1]) == "" {
		return fmt.Errorf("%w: start needs the INPUT: what to ask the fleet", errUsage)
	}
	started, err := s.c.StartRun(ctx, pos[0], pos[1], client.StartOptions{})
	if err != nil {
		return s.fail(err)
	}
	if !*follow {
		if s.json {
			s.emit(started)
		} else {
			fmt.Fprintf(s.out, "run %s %s\nfollow it: agentsfleet events %s --follow\n", started.RunID, started.Status, started.RunID)
		}
		return nil
	}
	if !s.json {
		fmt.Fprintf(s.out, "fleet %s · run %s\n\n", pos[0], started.RunID)
	}
	return s.follow(ctx, started.RunID, 0)
}

// follow shows a run's events from after until it ends, as `agentsfleet
// run` shows them; errRunFailed unless it succeeded.
func (s *session) follow(ctx context.Context, id string, after int64) error {
	show := s.viewer()
	run, err := s.c.Follow(ctx, id, after, show)
	if err != nil {
		return s.fail(err)
	}
	if run.Status != store.StatusSucceeded {
		return errRunFailed
	}
	return nil
}

// viewer returns what shows each event: the text view of `agentsfleet
// run`, or a JSON line.
func (s *session) viewer() func(afrun.Event) {
	if s.json {
		return func(ev afrun.Event) { s.emit(ev) }
	}
	v := newTextView(s.out, false)
	return func(ev afrun.Event) {
		n := runner.Note{Agent: ev.Agent, Event: &ev}
		if ev.Type == afrun.EventToolCall {
			// The live view shows a call as it starts, before it commits.
			var tc afrun.ToolCall
			if json.Unmarshal(ev.Data, &tc) == nil {
				n = runner.Note{Agent: ev.Agent, Calling: &tc}
			}
		}
		v.note(n)
	}
}

// runs is `agentsfleet runs FLEET [--cursor C]`: a page of its runs,
// newest first.
func (e remoteEnv) runs(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("runs", flag.ContinueOnError)
	c := connFlags(fs)
	cursor := fs.String("cursor", "", "the page after this cursor (printed under a full page)")
	s, pos, err := e.open(fs, c, args, "FLEET")
	if err != nil {
		return err
	}
	page, err := s.c.Runs(ctx, pos[0], *cursor)
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		for _, r := range page.Runs {
			s.emit(r)
		}
		return nil
	}
	if len(page.Runs) == 0 {
		fmt.Fprintf(s.out, "no runs of %s yet\n", pos[0])
		return nil
	}
	rows := [][]string{{"RUN", "STATUS", "SOURCE", "REVISION", "STARTED", "STATUS SINCE"}}
	for _, r := range page.Runs {
		src := string(r.Source)
		if r.ScheduleID != "" {
			src += " " + r.ScheduleID
		}
		rows = append(rows, []string{r.RunID, string(r.Status), src, fmt.Sprint(r.Revision), when(r.CreatedAt), when(r.StatusAt)})
	}
	s.table(rows)
	if page.Next != "" {
		fmt.Fprintf(s.out, "more: agentsfleet runs %s --cursor %s\n", pos[0], page.Next)
	}
	return nil
}

// events is `agentsfleet events RUN [--follow]`: the run's events so far,
// or until it ends.
func (e remoteEnv) events(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	c := connFlags(fs)
	follow := fs.Bool("follow", false, "keep showing events until the run ends, and exit 0 only if it succeeds")
	s, pos, err := e.open(fs, c, args, "RUN")
	if err != nil {
		return err
	}
	if *follow {
		return s.follow(ctx, pos[0], 0)
	}
	show := s.viewer()
	after := int64(0)
	for {
		evs, next, err := s.c.Events(ctx, pos[0], after)
		if err != nil {
			return s.fail(err)
		}
		for _, ev := range evs {
			show(ev)
		}
		if len(evs) == 0 || next == after {
			break
		}
		after = next
	}
	if after == 0 {
		// No events: say why, the run's status.
		run, err := s.c.Run(ctx, pos[0])
		if err != nil {
			return s.fail(err)
		}
		if !s.json {
			fmt.Fprintf(s.out, "run %s is %s and has no events yet\n", run.RunID, run.Status)
		}
	}
	return nil
}

// egress is `agentsfleet egress RUN [--cursor C]`: the run's outbound
// requests, oldest first, every page from the cursor on ("" the first).
func (e remoteEnv) egress(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("egress", flag.ContinueOnError)
	c := connFlags(fs)
	cursor := fs.String("cursor", "", "start at this page (printed when a listing was cut short)")
	s, pos, err := e.open(fs, c, args, "RUN")
	if err != nil {
		return err
	}
	rows := [][]string{{"TIME", "TOOL", "METHOD", "HOST", "PORT", "STATUS", "IN", "OUT", "MS", "SECRETS", "REFUSED"}}
	for next := *cursor; ; {
		page, err := s.c.Egress(ctx, pos[0], next)
		if err != nil {
			return s.fail(err)
		}
		for _, en := range page.Egress {
			if s.json {
				s.emit(en)
				continue
			}
			rows = append(rows, egressRow(en))
		}
		if next = page.Next; next == "" {
			break
		}
	}
	if s.json {
		return nil
	}
	if len(rows) == 1 {
		fmt.Fprintf(s.out, "run %s has sent no request\n", pos[0])
		return nil
	}
	s.table(rows)
	return nil
}

// egressRow is an entry as `agentsfleet egress` shows it.
func egressRow(en afrun.Egress) []string {
	status, refused, secrets := fmt.Sprint(en.Status), "-", "-"
	switch {
	case en.Refused:
		status, refused = "-", en.Rule
	case en.Status == 0:
		status = "failed: " + en.Error
	}
	if len(en.Secrets) > 0 {
		secrets = strings.Join(en.Secrets, ",")
	}
	return []string{when(en.Time), en.Tool, en.Method, en.Host, fmt.Sprint(en.Port), status,
		fmt.Sprint(en.BytesIn), fmt.Sprint(en.BytesOut), fmt.Sprint(en.DurationMS), secrets, refused}
}

// decide is `agentsfleet approve|deny RUN APPROVAL [--note TEXT]`.
func (e remoteEnv) decide(ctx context.Context, decision afrun.Decision, args []string) error {
	fs := flag.NewFlagSet(string(decision), flag.ContinueOnError) // "approve" or "deny"
	c := connFlags(fs)
	note := fs.String("note", "", "a note the run's model is told with the decision")
	s, pos, err := e.open(fs, c, args, "RUN", "APPROVAL")
	if err != nil {
		return err
	}
	got, err := s.c.Decide(ctx, pos[0], pos[1], decision, *note)
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		s.emit(got)
	} else {
		fmt.Fprintf(s.out, "approval %s: %s by %s; run %s is %s\n", got.ApprovalID, got.Decision, got.By, pos[0], got.RunStatus)
	}
	return nil
}

// cancel is `agentsfleet cancel RUN`.
func (e remoteEnv) cancel(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	c := connFlags(fs)
	s, pos, err := e.open(fs, c, args, "RUN")
	if err != nil {
		return err
	}
	got, err := s.c.Cancel(ctx, pos[0])
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		s.emit(got)
	} else {
		fmt.Fprintf(s.out, "run %s %s\n", got.RunID, got.Status)
	}
	return nil
}

// schedules is `agentsfleet schedules FLEET`.
func (e remoteEnv) schedules(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("schedules", flag.ContinueOnError)
	c := connFlags(fs)
	s, pos, err := e.open(fs, c, args, "FLEET")
	if err != nil {
		return err
	}
	list, err := s.c.Schedules(ctx, pos[0])
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		for _, sc := range list {
			s.emit(sc)
		}
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintf(s.out, "%s has no schedules\n", pos[0])
		return nil
	}
	rows := [][]string{{"SCHEDULE", "STATE", "EXPRESSION", "TIMEZONE", "SOURCE", "MESSAGE"}}
	for _, sc := range list {
		rows = append(rows, []string{sc.ScheduleID, string(sc.State), sc.Expression, sc.Timezone, string(sc.Source), clipLine(sc.Message, 60)})
	}
	s.table(rows)
	return nil
}

// scheduleCreate is `agentsfleet schedule create FLEET --expression E
// --message M [--timezone TZ] [--spend-cap TOKENS]`.
func (e remoteEnv) scheduleCreate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("schedule create", flag.ContinueOnError)
	c := connFlags(fs)
	expr := fs.String("expression", "", "cron(…), rate(…) or at(yyyy-mm-ddThh:mm:ss), as EventBridge Scheduler takes them")
	msg := fs.String("message", "", "the input of each run the schedule starts")
	tz := fs.String("timezone", "", "the IANA time zone of the expression (default UTC)")
	spend := fs.Int64("spend-cap", 0, "the tokens a day the schedule's runs may spend; past it the schedule pauses (0: no cap)")
	s, pos, err := e.open(fs, c, args, "FLEET")
	if err != nil {
		return err
	}
	switch {
	case *expr == "":
		return fmt.Errorf("%w: schedule create needs --expression, such as 'cron(0 9 ? * MON-FRI *)' or 'rate(1 hour)'", errUsage)
	case *msg == "":
		return fmt.Errorf("%w: schedule create needs --message: what each run is asked", errUsage)
	}
	sc, err := s.c.CreateSchedule(ctx, pos[0], client.NewSchedule{Expression: *expr, Message: *msg, Timezone: *tz, SpendCap: *spend})
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		s.emit(sc)
		return nil
	}
	zone := sc.Timezone
	if zone == "" {
		zone = "UTC"
	}
	fmt.Fprintf(s.out, "schedule %s of %s: %s (%s), %s\n", sc.ScheduleID, sc.Fleet, sc.Expression, zone, sc.State)
	return nil
}

// scheduleAct is `agentsfleet schedule delete|pause|resume|run FLEET ID`.
func (e remoteEnv) scheduleAct(ctx context.Context, act string, args []string) error {
	var fs *flag.FlagSet
	switch act {
	case "delete":
		fs = flag.NewFlagSet("schedule delete", flag.ContinueOnError)
	case "pause":
		fs = flag.NewFlagSet("schedule pause", flag.ContinueOnError)
	case "resume":
		fs = flag.NewFlagSet("schedule resume", flag.ContinueOnError)
	default:
		fs = flag.NewFlagSet("schedule run", flag.ContinueOnError)
	}
	c := connFlags(fs)
	s, pos, err := e.open(fs, c, args, "FLEET", "ID")
	if err != nil {
		return err
	}
	fleetName, id := pos[0], pos[1]
	var out any
	var text string
	switch act {
	case "delete":
		err = s.c.DeleteSchedule(ctx, fleetName, id)
		out, text = map[string]any{"schedule_id": id, "deleted": true}, "schedule "+id+" deleted"
	case "pause", "resume":
		set := s.c.ResumeSchedule
		if act == "pause" {
			set = s.c.PauseSchedule
		}
		var sc client.Schedule
		sc, err = set(ctx, fleetName, id)
		out, text = sc, fmt.Sprintf("schedule %s %s", id, sc.State)
	default:
		var r client.RunStarted
		r, err = s.c.RunSchedule(ctx, fleetName, id)
		out, text = r, fmt.Sprintf("run %s %s\nfollow it: agentsfleet events %s --follow", r.RunID, r.Status, r.RunID)
	}
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		s.emit(out)
	} else {
		fmt.Fprintln(s.out, text)
	}
	return nil
}

// keysCreate is `agentsfleet keys create NAME --scopes a,b [--fleets f,g]`.
func (e remoteEnv) keysCreate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	c := connFlags(fs)
	scopes := fs.String("scopes", "", "the key's scopes, comma-separated (agentsfleet tools shows which tool needs which)")
	fleets := fs.String("fleets", "", fleetsUsage)
	s, pos, err := e.open(fs, c, args, "NAME")
	if err != nil {
		return err
	}
	list := commaList(*scopes)
	if len(list) == 0 {
		return fmt.Errorf("%w: keys create needs --scopes, such as runs:read,runs:write", errUsage)
	}
	served, err := fleetList(fs, *fleets)
	if err != nil {
		return err
	}
	k, err := s.c.CreateKey(ctx, pos[0], list, served...)
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		s.emit(k)
		return nil
	}
	fmt.Fprintf(s.out, "key %s (%s; %s; %s):\n%s\nthis is the only time it is shown: keep it now\n",
		k.KeyID, k.Name, strings.Join(k.Scopes, ", "), fleetsText(k.Fleets), k.Key)
	return nil
}

// fleetsUsage is --fleets, of keys create and table key.
const fleetsUsage = "the fleets the key serves, comma-separated (default: every fleet, or those of the key that creates it)"

// fleetList reads --fleets (v, defined on fs): nil when it was not given,
// and a usage error when it was given empty (an empty list never means
// every fleet).
func fleetList(fs *flag.FlagSet, v string) ([]string, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "fleets" })
	list := commaList(v)
	if given && len(list) == 0 {
		return nil, fmt.Errorf("%w: --fleets is empty: name the fleets the key serves, such as --fleets ops,dev, or leave it out", errUsage)
	}
	return list, nil
}

// fleetsText is a key's fleets for a person: "every fleet" when it names
// none.
func fleetsText(fleets []string) string {
	if len(fleets) == 0 {
		return "every fleet"
	}
	return "fleets " + strings.Join(fleets, ", ")
}

// keysList is `agentsfleet keys list`.
func (e remoteEnv) keysList(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("keys list", flag.ContinueOnError)
	c := connFlags(fs)
	s, _, err := e.open(fs, c, args)
	if err != nil {
		return err
	}
	keys, err := s.c.Keys(ctx)
	if err != nil {
		return s.fail(err)
	}
	rows := [][]string{{"KEY", "NAME", "SCOPES", "FLEETS", "CREATED", "LAST USED", "STATE"}}
	for _, k := range keys {
		if s.json {
			s.emit(k)
			continue
		}
		used, state := "-", "active"
		if k.LastUsedAt != nil {
			used = when(*k.LastUsedAt)
		}
		if k.Revoked {
			state = "revoked"
		}
		scopes := strings.Join(k.Scopes, ",")
		if every := scope.Names(); len(k.Scopes) == len(every) && !slices.ContainsFunc(every, func(s string) bool { return !slices.Contains(k.Scopes, s) }) {
			scopes = "every scope"
		}
		fleets := strings.Join(k.Fleets, ",")
		if fleets == "" {
			fleets = "all"
		}
		rows = append(rows, []string{k.KeyID, k.Name, scopes, fleets, when(k.CreatedAt), used, state})
	}
	if !s.json {
		s.table(rows)
	}
	return nil
}

// keysRevoke is `agentsfleet keys revoke ID`.
func (e remoteEnv) keysRevoke(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("keys revoke", flag.ContinueOnError)
	c := connFlags(fs)
	s, pos, err := e.open(fs, c, args, "ID")
	if err != nil {
		return err
	}
	if err := s.c.RevokeKey(ctx, pos[0]); err != nil {
		return s.fail(err)
	}
	if s.json {
		s.emit(map[string]any{"key_id": pos[0], "revoked": true})
	} else {
		fmt.Fprintf(s.out, "key %s revoked: it never authenticates again\n", pos[0])
	}
	return nil
}
