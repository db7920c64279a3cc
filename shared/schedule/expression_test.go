package schedule_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/schedule"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := schedule.LoadTimezone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// tm reads "2006-01-02T15:04" (or with seconds) in loc.
func tm(t *testing.T, s string, loc *time.Location) time.Time {
	t.Helper()
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if v, err := time.ParseInLocation(layout, s, loc); err == nil {
			return v
		}
	}
	t.Fatalf("bad test time %q", s)
	return time.Time{}
}

// The AWS documentation's examples (EventBridge cron expressions reference
// and Scheduler's schedule types), the wildcards L, W and #, and calendar
// corners. Each case lists the next firing times after "after".
func TestCronNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr  string
		zone  string
		after string
		want  []string // in zone
	}{
		// AWS examples.
		{"cron(0 10 * * ? *)", "UTC", "2026-03-02T09:59", []string{"2026-03-02T10:00", "2026-03-03T10:00"}},
		{"cron(15 12 * * ? *)", "UTC", "2026-03-02T12:15", []string{"2026-03-03T12:15", "2026-03-04T12:15"}},
		// 2026-03-06 is a Friday.
		{"cron(0 18 ? * MON-FRI *)", "UTC", "2026-03-06T18:00", []string{"2026-03-09T18:00", "2026-03-10T18:00"}},
		{"cron(0 8 1 * ? *)", "UTC", "2026-01-15T00:00", []string{"2026-02-01T08:00", "2026-03-01T08:00"}},
		{"cron(0/15 * * * ? *)", "UTC", "2026-03-02T09:59", []string{"2026-03-02T10:00", "2026-03-02T10:15", "2026-03-02T10:30"}},
		{"cron(0/10 * ? * MON-FRI *)", "UTC", "2026-03-06T23:55", []string{"2026-03-09T00:00", "2026-03-09T00:10"}},
		{"cron(0/5 8-17 ? * MON-FRI *)", "UTC", "2026-03-02T17:54", []string{"2026-03-02T17:55", "2026-03-03T08:00"}},
		// Hours 22-2 wrap past midnight: 22, 23, 0, 1, 2 on weekdays.
		{"cron(0/30 22-2 ? * MON-FRI *)", "UTC", "2026-03-02T02:00", []string{"2026-03-02T02:30", "2026-03-02T22:00"}},
		{"cron(0 9 * * ? 2027)", "UTC", "2026-06-01T00:00", []string{"2027-01-01T09:00", "2027-01-02T09:00"}},
		{"cron(0 12 ? * SUN,SAT *)", "UTC", "2026-03-02T00:00", []string{"2026-03-07T12:00", "2026-03-08T12:00", "2026-03-14T12:00"}},
		{"cron(0 0 ? JAN,JUL 2 *)", "UTC", "2026-01-01T00:00", []string{"2026-01-05T00:00", "2026-01-12T00:00"}},
		// Day-of-week 1 is SUN; FRI-MON wraps the week.
		{"cron(0 0 ? * 1 *)", "UTC", "2026-03-02T00:00", []string{"2026-03-08T00:00"}},
		{"cron(0 0 ? * FRI-MON *)", "UTC", "2026-03-03T00:00", []string{"2026-03-06T00:00", "2026-03-07T00:00", "2026-03-08T00:00", "2026-03-09T00:00", "2026-03-13T00:00"}},
		// The last day of February, leap year or not.
		{"cron(0 9 L * ? *)", "UTC", "2027-02-01T00:00", []string{"2027-02-28T09:00", "2027-03-31T09:00"}},
		{"cron(0 9 L * ? *)", "UTC", "2028-02-01T00:00", []string{"2028-02-29T09:00"}},
		{"cron(0 9 L FEB ? *)", "UTC", "2026-03-01T00:00", []string{"2027-02-28T09:00", "2028-02-29T09:00"}},
		{"cron(0 9 29 2 ? *)", "UTC", "2026-01-01T00:00", []string{"2028-02-29T09:00", "2032-02-29T09:00"}},
		// LW: the last weekday. 2026-05-31 is a Sunday, 2026-02-28 a Saturday.
		{"cron(0 9 LW * ? *)", "UTC", "2026-05-01T00:00", []string{"2026-05-29T09:00", "2026-06-30T09:00"}},
		{"cron(0 9 LW FEB ? *)", "UTC", "2026-01-01T00:00", []string{"2026-02-27T09:00"}},
		// 15W: 2026-03-15 is a Sunday (→ Monday 16th), 2026-08-15 a Saturday
		// (→ Friday 14th). 1W: 2026-08-01 is a Saturday (→ Monday 3rd).
		{"cron(0 9 15W * ? *)", "UTC", "2026-03-01T00:00", []string{"2026-03-16T09:00", "2026-04-15T09:00"}},
		{"cron(0 9 15W AUG ? *)", "UTC", "2026-01-01T00:00", []string{"2026-08-14T09:00"}},
		{"cron(0 9 1W AUG ? *)", "UTC", "2026-01-01T00:00", []string{"2026-08-03T09:00"}},
		// 31W in a 30-day month: no day 31, no firing.
		{"cron(0 9 31W * ? *)", "UTC", "2026-04-01T00:00", []string{"2026-05-29T09:00"}},
		// 6L: the last Friday; 2#1: the first Monday.
		{"cron(15 8 ? * 6L *)", "UTC", "2026-03-01T00:00", []string{"2026-03-27T08:15", "2026-04-24T08:15"}},
		{"cron(0 9 ? * 2#1 *)", "UTC", "2026-03-01T00:00", []string{"2026-03-02T09:00", "2026-04-06T09:00"}},
		{"cron(0 9 ? * MON#5 *)", "UTC", "2026-03-01T00:00", []string{"2026-03-30T09:00", "2026-06-29T09:00"}},
		{"cron(0 9 ? * L *)", "UTC", "2026-03-01T00:00", []string{"2026-03-07T09:00"}},
		{"cron(0 0 28-3 FEB,MAR ? 2026)", "UTC", "2026-02-01T00:00", []string{"2026-02-01T00:00", "2026-02-02T00:00"}},
		// Spring forward in New York (2026-03-08, 02:00 → 03:00): 02:30 does
		// not exist that day and is skipped.
		{"cron(30 2 * * ? *)", "America/New_York", "2026-03-07T03:00", []string{"2026-03-09T02:30", "2026-03-10T02:30"}},
		{"cron(0 * * * ? *)", "America/New_York", "2026-03-08T00:30", []string{"2026-03-08T01:00", "2026-03-08T03:00", "2026-03-08T04:00"}},
		// A daily 09:00 keeps its wall time across both transitions.
		{"cron(0 9 * * ? *)", "America/New_York", "2026-03-07T10:00", []string{"2026-03-08T09:00", "2026-03-09T09:00"}},
		{"cron(0 9 * * ? *)", "America/New_York", "2026-10-31T10:00", []string{"2026-11-01T09:00", "2026-11-02T09:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr+"@"+tt.after, func(t *testing.T) {
			t.Parallel()
			e, err := schedule.Parse(tt.expr)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			loc := mustZone(t, tt.zone)
			after := tm(t, tt.after, loc)
			if tt.after == "2026-02-01T00:00" { // include the start itself
				after = after.Add(-time.Second)
			}
			for i, w := range tt.want {
				got, ok := e.Next(after, loc)
				want := tm(t, w, loc)
				if !ok || !got.Equal(want) {
					t.Fatalf("Next #%d after %s = %s, %v; want %s", i+1, after, got, ok, want)
				}
				after = got
			}
		})
	}
}

// Fall back in New York (2026-11-01, 02:00 EDT → 01:00 EST): 01:30 happens
// twice and fires once, at its first (EDT) occurrence, as Scheduler does.
func TestCronFallBackFiresOnce(t *testing.T) {
	t.Parallel()
	ny := mustZone(t, "America/New_York")
	e, err := schedule.Parse("cron(30 1 * * ? *)")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := e.Next(time.Date(2026, 11, 1, 0, 0, 0, 0, ny), ny)
	if want := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC); !first.Equal(want) {
		t.Fatalf("first = %s, want %s (01:30 EDT)", first.UTC(), want)
	}
	second, _ := e.Next(first, ny)
	if want := time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC); !second.Equal(want) {
		t.Fatalf("second = %s, want %s (the next day's 01:30 EST, not the repeated hour)", second.UTC(), want)
	}

	// Every 20 minutes through the repeated hour: each wall time once.
	e, _ = schedule.Parse("cron(0/20 * * * ? *)")
	var got []string
	after := time.Date(2026, 11, 1, 0, 50, 0, 0, ny)
	for range 7 {
		after, _ = e.Next(after, ny)
		got = append(got, after.UTC().Format("15:04"))
	}
	// 01:00, 01:20, 01:40 EDT are 05:00-05:40 UTC; 02:00 EST is 07:00 UTC.
	want := []string{"05:00", "05:20", "05:40", "07:00", "07:20", "07:40", "08:00"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}

	// Asked from inside the second 01:xx (EST), it does not go back.
	after = time.Date(2026, 11, 1, 6, 10, 0, 0, time.UTC) // 01:10 EST
	next, _ := e.Next(after, ny)
	if want := time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Fatalf("Next(01:10 EST) = %s, want %s", next.UTC(), want)
	}
}

func TestCronEnds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ expr, after string }{
		{"cron(0 9 * * ? 2026)", "2026-12-31T09:00"},
		{"cron(0 0 30 FEB ? *)", "2026-01-01T00:00"}, // no 30 February, ever
		{"cron(59 23 31 12 ? 2199)", "2199-12-31T23:59"},
	} {
		e, err := schedule.Parse(tt.expr)
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.expr, err)
		}
		if got, ok := e.Next(tm(t, tt.after, time.UTC), time.UTC); ok {
			t.Errorf("%s Next after %s = %s, want never", tt.expr, tt.after, got)
		}
	}
}

func TestRateAndAt(t *testing.T) {
	t.Parallel()
	ny := mustZone(t, "America/New_York")
	tests := []struct {
		expr    string
		every   time.Duration
		oneShot bool
	}{
		{"rate(1 minute)", time.Minute, false},
		{"rate(5 minutes)", 5 * time.Minute, false},
		{"rate(1 hour)", time.Hour, false},
		{"rate(12 hours)", 12 * time.Hour, false},
		{"rate(1 day)", 24 * time.Hour, false},
		{"rate(7 days)", 7 * 24 * time.Hour, false},
		{"at(2026-03-08T02:30:00)", 0, true},
	}
	for _, tt := range tests {
		e, err := schedule.Parse(tt.expr)
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.expr, err)
		}
		if e.Every() != tt.every || e.OneShot() != tt.oneShot || e.String() != tt.expr {
			t.Errorf("%s: Every %s OneShot %v String %q; want %s %v", tt.expr, e.Every(), e.OneShot(), e.String(), tt.every, tt.oneShot)
		}
	}

	// A day is 24 hours: across spring forward, 09:00 EST becomes 10:00 EDT.
	day, _ := schedule.Parse("rate(1 day)")
	start := time.Date(2026, 3, 7, 9, 0, 0, 0, ny)
	got, _ := day.NextSince(start, start, ny)
	if want := time.Date(2026, 3, 8, 10, 0, 0, 0, ny); !got.Equal(want) {
		t.Fatalf("rate(1 day) after %s = %s, want %s", start, got, want)
	}
	// NextSince counts from the start: first the start itself, then every
	// interval, whatever after is.
	five, _ := schedule.Parse("rate(5 minutes)")
	for _, tt := range []struct{ after, want time.Duration }{
		{-time.Hour, 0}, {-time.Nanosecond, 0}, {0, 5 * time.Minute},
		{7 * time.Minute, 10 * time.Minute}, {10 * time.Minute, 15 * time.Minute},
	} {
		got, ok := five.NextSince(start, start.Add(tt.after), time.UTC)
		if !ok || !got.Equal(start.Add(tt.want)) {
			t.Errorf("NextSince(start, start%+v) = %s, want start%+v", tt.after, got, tt.want)
		}
	}
	if got, _ := five.Next(start, nil); !got.Equal(start.Add(5 * time.Minute)) {
		t.Errorf("rate Next = %s, want after+5m", got)
	}

	// at() reads its time in the zone and fires once.
	at, _ := schedule.Parse("at(2026-07-04T09:00:00)")
	want := time.Date(2026, 7, 4, 13, 0, 0, 0, time.UTC)
	if got, ok := at.Next(want.Add(-time.Hour), ny); !ok || !got.Equal(want) {
		t.Fatalf("at Next = %s, %v; want %s", got, ok, want)
	}
	if got, ok := at.Next(want, ny); ok {
		t.Fatalf("at Next after its time = %s, want never", got)
	}
	// The start does not move an at() (Scheduler ignores StartDate for it).
	if got, ok := at.NextSince(want.Add(time.Hour), want.Add(-time.Hour), ny); !ok || !got.Equal(want) {
		t.Fatalf("at NextSince = %s, %v; want %s", got, ok, want)
	}
	// A cron expression fires on or after the start.
	c, _ := schedule.Parse("cron(0 9 * * ? *)")
	s := time.Date(2026, 7, 4, 9, 0, 0, 0, time.UTC)
	if got, _ := c.NextSince(s, s.Add(-48*time.Hour), time.UTC); !got.Equal(s) {
		t.Fatalf("cron NextSince = %s, want the start %s", got, s)
	}
	var zero schedule.Expression
	if _, ok := zero.Next(s, nil); ok {
		t.Fatal("the zero Expression fires")
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ expr, want string }{
		{"cron(0 9 * * * *)", "cron(0 9 * * * *): day-of-month or day-of-week must be ?"},
		{"cron(0 9 ? * ? *)", "cron(0 9 ? * ? *): day-of-month and day-of-week cannot both be ?: use ? in exactly one of them"},
		{"cron(0 9 * * ?)", "cron(0 9 * * ?): cron() takes 6 fields (minutes hours day-of-month month day-of-week year), not 5"},
		{"cron(0 9 * * ? * *)", "cron(0 9 * * ? * *): cron() takes 6 fields (minutes hours day-of-month month day-of-week year), not 7"},
		{"cron(60 9 * * ? *)", `cron(60 9 * * ? *): minutes "60": 60 is not in 0-59`},
		{"cron(0 24 * * ? *)", `cron(0 24 * * ? *): hours "24": 24 is not in 0-23`},
		{"cron(0 9 0 * ? *)", `cron(0 9 0 * ? *): day-of-month "0": 0 is not in 1-31`},
		{"cron(0 9 ? 13 * *)", `cron(0 9 ? 13 * *): month "13": 13 is not in 1-12`},
		{"cron(0 9 ? * 0 *)", `cron(0 9 ? * 0 *): day-of-week "0": 0 is not in 1-7`},
		{"cron(0 9 ? * 8 *)", `cron(0 9 ? * 8 *): day-of-week "8": 8 is not in 1-7`},
		{"cron(0 9 * * ? 1969)", `cron(0 9 * * ? 1969): year "1969": 1969 is not in 1970-2199`},
		{"cron(0 9 * * ? 2030-2027)", `cron(0 9 * * ? 2030-2027): year "2030-2027": the range runs backwards`},
		{"cron(0 9 ? * MOON *)", `cron(0 9 ? * MOON *): day-of-week "MOON": "MOON" is not a number from 1 to 7 or one of SUN-SAT`},
		{"cron(0 9 * JANUARY ? *)", `cron(0 9 * JANUARY ? *): month "JANUARY": "JANUARY" is not a number from 1 to 12 or one of JAN-DEC`},
		{"cron(0 9 ? * MON/2 *)", `cron(0 9 ? * MON/2 *): day-of-week "MON/2": the / wildcard is not allowed in day-of-week`},
		{"cron(0/0 9 * * ? *)", `cron(0/0 9 * * ? *): minutes "0/0": the increment after / must be a whole number from 1 to 60`},
		{"cron(0,,5 9 * * ? *)", `cron(0,,5 9 * * ? *): minutes "": empty value (two commas, or a comma at an end)`},
		{"cron(? 9 * * ? *)", `cron(? 9 * * ? *): minutes "?": ? is only allowed as the whole day-of-month or day-of-week field`},
		{"cron(0 L * * ? *)", `cron(0 L * * ? *): hours "L": L is only allowed in day-of-month and day-of-week`},
		{"cron(0 9 * * ? 2030#1)", `cron(0 9 * * ? 2030#1): year "2030#1": # is only allowed in day-of-week`},
		{"cron(0 9 1,L * ? *)", `cron(0 9 1,L * ? *): day-of-month "L": L, LW and nW (such as 15W) stand alone in day-of-month`},
		{"cron(0 9 L-3 * ? *)", `cron(0 9 L-3 * ? *): day-of-month "L-3": offsets from the last day (L-n) are not supported; use L, LW, nW or days`},
		{"cron(0 9 32W * ? *)", `cron(0 9 32W * ? *): day-of-month "32W": 32 is not in 1-31`},
		{"cron(0 9 ? * 2#6 *)", `cron(0 9 ? * 2#6 *): day-of-week "2#6": the number after # must be from 1 to 5`},
		{"cron(0 9 ? * 2#1,3 *)", `cron(0 9 ? * 2#1,3 *): day-of-week "2#1": L, nL (such as 6L) and n#k (such as 2#1) stand alone in day-of-week`},
		{"rate(0 minutes)", "rate(0 minutes): value must be a positive whole number, not 0"},
		{"rate(05 minutes)", "rate(05 minutes): value must be a positive whole number, not 05"},
		{"rate(1 minutes)", "rate(1 minutes): a value of 1 takes the singular unit: rate(1 minute)"},
		{"rate(5 minute)", "rate(5 minute): a value other than 1 takes the plural unit: rate(5 minutes)"},
		{"rate(5 weeks)", `rate(5 weeks): unit "weeks" is not minute(s), hour(s) or day(s)`},
		{"rate(-5 minutes)", "rate(-5 minutes): want rate(value unit), such as rate(5 minutes) or rate(1 hour)"},
		{"rate(5minutes)", "rate(5minutes): want rate(value unit), such as rate(5 minutes) or rate(1 hour)"},
		{"at(2026-02-29T09:00:00)", "at(2026-02-29T09:00:00): 2026-02-29T09:00:00 is not a date and time (day out of range)"},
		{"at(2026-03-01 09:00:00)", "at(2026-03-01 09:00:00): want at(yyyy-mm-ddThh:mm:ss), such as at(2030-01-31T09:00:00)"},
		{"at(2026-03-01T09:00)", "at(2026-03-01T09:00): want at(yyyy-mm-ddThh:mm:ss), such as at(2030-01-31T09:00:00)"},
		{"every(5 minutes)", "every(5 minutes): want cron(…), rate(…) or at(…)"},
		{"0 9 * * ? *", "0 9 * * ? *: want cron(…), rate(…) or at(…)"},
		{"", ": want cron(…), rate(…) or at(…)"},
		{" cron(0 9 * * ? *)", " cron(0 9 * * ? *): want cron(…), rate(…) or at(…)"},
	}
	for _, tt := range tests {
		_, err := schedule.Parse(tt.expr)
		if err == nil {
			t.Errorf("Parse(%q) = nil error, want %q", tt.expr, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Parse(%q) error\n got %q\nwant %q", tt.expr, err, tt.want)
		}
		var se *schedule.Error
		if !errors.As(err, &se) || !errors.Is(err, fault.RequestInvalid) {
			t.Errorf("Parse(%q) error %T is not a *schedule.Error matching fault.RequestInvalid", tt.expr, err)
		}
		if code, ok := fault.CodeOf(err); !ok || code != fault.RequestInvalid {
			t.Errorf("CodeOf(Parse(%q)) = %v, %v; want UZ-REQ-400", tt.expr, code.ID(), ok)
		}
	}
}

// Scheduler takes expressions of at most 256 characters; a longer cron()
// is still well formed, so only its length refuses it.
func TestParseLength(t *testing.T) {
	t.Parallel()
	years := func(n int) string {
		var ys []string
		for y := 2030; y < 2030+n; y++ {
			ys = append(ys, strconv.Itoa(y))
		}
		return "cron(0 9 ? * MON-FRI " + strings.Join(ys, ",") + ")"
	}
	if e := years(47); len(e) != schedule.MaxLength {
		t.Fatalf("the test's expression is %d characters, want %d", len(e), schedule.MaxLength)
	} else if _, err := schedule.Parse(e); err != nil {
		t.Fatalf("Parse of %d characters: %v", len(e), err)
	}
	long := years(48)
	_, err := schedule.Parse(long)
	var se *schedule.Error
	if !errors.As(err, &se) || se.Reason != "261 characters; Scheduler takes at most 256" {
		t.Fatalf("Parse of %d characters = %v, want a *schedule.Error saying it is too long", len(long), err)
	}
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		"cron(0 10 * * ? *)", "cron(0 18 ? * MON-FRI *)", "cron(0/5 8-17 ? * MON-FRI *)",
		"cron(0 9 ? * mon-fri *)", "cron(5,35 14 * * ? *)", "cron(15 10 ? * 6L 2002-2005)",
		"cron(0 0 L * ? *)", "cron(0 0 LW * ? *)", "cron(0 0 15W * ? *)", "cron(0 0 ? * 2#1 *)",
		"cron(0 0 1-31/2 * ? *)", "cron(0 0 ? JAN-DEC/3 * *)", "cron(0 0 * * ? 2026/2)", "cron(0 0 * * ? *)",
		"rate(1 minute)", "rate(1440 minutes)", "at(2030-12-31T23:59:59)",
	} {
		if _, err := schedule.Parse(expr); err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
		}
	}
}

func TestLoadTimezone(t *testing.T) {
	t.Parallel()
	if loc, err := schedule.LoadTimezone(""); err != nil || loc != time.UTC {
		t.Fatalf(`LoadTimezone("") = %v, %v; want UTC`, loc, err)
	}
	if loc, err := schedule.LoadTimezone("Europe/Paris"); err != nil || loc.String() != "Europe/Paris" {
		t.Fatalf("LoadTimezone(Europe/Paris) = %v, %v", loc, err)
	}
	for _, name := range []string{"Mars/Olympus", "Local", "america/new york"} {
		_, err := schedule.LoadTimezone(name)
		want := `time zone "` + name + `": not an IANA time zone name (such as America/New_York or UTC)`
		if err == nil || err.Error() != want || !errors.Is(err, fault.RequestInvalid) {
			t.Errorf("LoadTimezone(%q) = %v, want %q", name, err, want)
		}
	}
}
