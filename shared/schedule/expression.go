package schedule

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA zones; Lambda's provided.al2023 image has no zoneinfo
	"unicode/utf8"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// Kind is the form of an expression.
type Kind uint8

// The three forms of an EventBridge Scheduler expression.
const (
	Cron Kind = iota + 1 // cron(minutes hours day-of-month month day-of-week year)
	Rate                 // rate(value unit)
	At                   // at(yyyy-mm-ddThh:mm:ss), a one-time schedule
)

func (k Kind) String() string {
	switch k {
	case Cron:
		return "cron"
	case Rate:
		return "rate"
	case At:
		return "at"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is an expression or time zone that EventBridge Scheduler would not
// accept. Its message is the input, a colon and what is wrong with it. It
// wraps fault.RequestInvalid, so errors.Is(err, fault.RequestInvalid) and
// fault.CodeOf find the product code.
type Error struct {
	Input  string // the expression as given, or `time zone "X"`
	Reason string
}

func (e *Error) Error() string { return e.Input + ": " + e.Reason }

// Unwrap returns fault.RequestInvalid: the caller can fix the input.
func (e *Error) Unwrap() error { return fault.RequestInvalid }

// Expression is a parsed schedule expression. The zero Expression never
// fires. An Expression is a value: safe to copy and to use from several
// goroutines at once.
type Expression struct {
	kind  Kind
	src   string
	cron  *cronSpec
	every time.Duration
	at    wall
}

// wall is a local date and time, not yet placed in a time zone.
type wall struct {
	year                   int
	month                  time.Month
	day, hour, min, second int
}

// MaxLength is the longest expression Scheduler takes, in characters: its
// API refuses a ScheduleExpression of more than 256 (CreateSchedule,
// UpdateSchedule). moto takes longer ones.
const MaxLength = 256

// Parse parses an EventBridge Scheduler expression. The error is an *Error
// saying exactly what is wrong.
func Parse(expr string) (Expression, error) {
	bad := func(format string, args ...any) (Expression, error) {
		return Expression{}, &Error{Input: expr, Reason: fmt.Sprintf(format, args...)}
	}
	if n := utf8.RuneCountInString(expr); n > MaxLength {
		return bad("%d characters; Scheduler takes at most %d", n, MaxLength)
	}
	open := strings.IndexByte(expr, '(')
	if open < 0 || !strings.HasSuffix(expr, ")") {
		return bad("want cron(…), rate(…) or at(…)")
	}
	body := expr[open+1 : len(expr)-1]
	switch expr[:open] {
	case "cron":
		c, err := parseCron(body)
		if err != nil {
			return bad("%s", err)
		}
		return Expression{kind: Cron, src: expr, cron: c}, nil
	case "rate":
		d, err := parseRate(body)
		if err != nil {
			return bad("%s", err)
		}
		return Expression{kind: Rate, src: expr, every: d}, nil
	case "at":
		w, err := parseAt(body)
		if err != nil {
			return bad("%s", err)
		}
		return Expression{kind: At, src: expr, at: w}, nil
	}
	return bad("want cron(…), rate(…) or at(…)")
}

// String returns the expression as it was parsed.
func (e Expression) String() string { return e.src }

// Kind returns the expression's form; 0 for the zero Expression.
func (e Expression) Kind() Kind { return e.kind }

// OneShot reports whether the expression fires once: an at() expression,
// the kind Scheduler can delete after it ran (ActionAfterCompletion DELETE).
func (e Expression) OneShot() bool { return e.kind == At }

// Every returns a rate expression's interval, and 0 for the other kinds.
func (e Expression) Every() time.Duration { return e.every }

// Next returns the first time the expression fires strictly after after,
// reading it in loc (nil means UTC). The bool is false when it never fires
// again: an at() time already past, a cron expression past its last year
// (2199 at the latest), the zero Expression.
//
// A rate expression has no anchor of its own here: Next returns after plus
// the interval, the next time after an invocation at after, as Scheduler
// counts. Use NextSince for rates counted from a schedule's start.
func (e Expression) Next(after time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	switch e.kind {
	case Cron:
		return e.cron.next(after, loc)
	case Rate:
		return after.Add(e.every).In(loc), true
	case At:
		t := resolve(e.at, loc)
		return t, t.After(after)
	}
	return time.Time{}, false
}

// NextSince is Next for a schedule that starts at start, as Scheduler runs
// it: a rate fires at start and every interval after it (start + k·interval,
// exact durations); a cron expression fires at its times on or after start;
// an at() expression ignores start, as Scheduler ignores StartDate for
// one-time schedules. A zero start means no start: NextSince is then Next.
func (e Expression) NextSince(start, after time.Time, loc *time.Location) (time.Time, bool) {
	if start.IsZero() || e.kind == At {
		return e.Next(after, loc)
	}
	if loc == nil {
		loc = time.UTC
	}
	if e.kind == Rate {
		if after.Before(start) {
			return start.In(loc), true
		}
		k := after.Sub(start)/e.every + 1
		return start.Add(k * e.every).In(loc), true
	}
	if after.Before(start) {
		after = start.Add(-time.Nanosecond)
	}
	return e.Next(after, loc)
}

// LoadTimezone loads an IANA time zone such as "America/New_York" for
// ScheduleExpressionTimezone; the empty name is UTC, as Scheduler's default.
// "Local" is refused: a schedule must not depend on the machine it is read
// on. The error is an *Error. The zone database is embedded (time/tzdata).
func LoadTimezone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	bad := &Error{Input: fmt.Sprintf("time zone %q", name), Reason: "not an IANA time zone name (such as America/New_York or UTC)"}
	if name == "Local" {
		return nil, bad
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, bad
	}
	return loc, nil
}

// resolve places a wall time in loc. Where the wall time happens twice (the
// clocks go back) it returns the first; where it never happens (they go
// forward) it returns time.Date's normalisation, an instant whose wall time
// differs from w: use exists to tell.
func resolve(w wall, loc *time.Location) time.Time {
	if t, ok := exists(w, loc); ok {
		return t
	}
	return time.Date(w.year, w.month, w.day, w.hour, w.min, w.second, 0, loc)
}

// exists returns the earliest instant whose wall time in loc is w, and false
// when there is none (a time skipped when the clocks go forward).
func exists(w wall, loc *time.Location) (time.Time, bool) {
	u := time.Date(w.year, w.month, w.day, w.hour, w.min, w.second, 0, time.UTC)
	var best time.Time
	found := false
	// The offsets in force around u cover both sides of any transition near
	// it; zones do not change offset twice within four days.
	for _, probe := range [...]time.Duration{-48 * time.Hour, 0, 48 * time.Hour} {
		_, off := u.Add(probe).In(loc).Zone()
		t := u.Add(-time.Duration(off) * time.Second).In(loc)
		if t.Year() == w.year && t.Month() == w.month && t.Day() == w.day &&
			t.Hour() == w.hour && t.Minute() == w.min && t.Second() == w.second &&
			(!found || t.Before(best)) {
			best, found = t, true
		}
	}
	return best, found
}

// ---- rate ----

var rateRE = regexp.MustCompile(`^([0-9]+) ([a-z]+)$`)

func parseRate(body string) (time.Duration, error) {
	m := rateRE.FindStringSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("want rate(value unit), such as rate(5 minutes) or rate(1 hour)")
	}
	var unit time.Duration
	switch strings.TrimSuffix(m[2], "s") {
	case "minute":
		unit = time.Minute
	case "hour":
		unit = time.Hour
	case "day":
		unit = 24 * time.Hour
	default:
		return 0, fmt.Errorf("unit %q is not minute(s), hour(s) or day(s)", m[2])
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("value %s is too large", m[1])
	}
	if n < 1 || m[1][0] == '0' {
		return 0, fmt.Errorf("value must be a positive whole number, not %s", m[1])
	}
	plural := strings.HasSuffix(m[2], "s")
	if n == 1 && plural {
		return 0, fmt.Errorf("a value of 1 takes the singular unit: rate(1 %s)", strings.TrimSuffix(m[2], "s"))
	}
	if n != 1 && !plural {
		return 0, fmt.Errorf("a value other than 1 takes the plural unit: rate(%s %ss)", m[1], m[2])
	}
	return time.Duration(n) * unit, nil
}

// ---- at ----

var atRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`)

func parseAt(body string) (wall, error) {
	if !atRE.MatchString(body) {
		return wall{}, fmt.Errorf("want at(yyyy-mm-ddThh:mm:ss), such as at(2030-01-31T09:00:00)")
	}
	t, err := time.Parse("2006-01-02T15:04:05", body)
	if err != nil {
		return wall{}, fmt.Errorf("%s is not a date and time (%v)", body, strings.TrimPrefix(err.Error(), `parsing time "`+body+`": `))
	}
	return wall{t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second()}, nil
}

// ---- cron ----

// set is a set of small non-negative integers (field values minus the
// field's minimum).
type set [4]uint64

func (s *set) add(i int)     { s[i/64] |= 1 << (i % 64) }
func (s set) has(i int) bool { return i >= 0 && i < 256 && s[i/64]&(1<<(i%64)) != 0 }

// values returns the members in increasing order, each plus base.
func (s set) values(base int) []int {
	var out []int
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			out = append(out, base+w*64+b)
			word &^= 1 << b
		}
	}
	return out
}

type field struct {
	name     string
	min, max int
	names    []string // names[i] is the value min+i
	step     bool     // the / wildcard is allowed
}

var (
	fMinutes = field{name: "minutes", min: 0, max: 59, step: true}
	fHours   = field{name: "hours", min: 0, max: 23, step: true}
	fDom     = field{name: "day-of-month", min: 1, max: 31, step: true}
	fMonth   = field{name: "month", min: 1, max: 12, step: true,
		names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}}
	fDow = field{name: "day-of-week", min: 1, max: 7,
		names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
	fYear = field{name: "year", min: 1970, max: 2199, step: true}
)

// The special days of day-of-month and day-of-week.
const (
	dayList        = iota // the set days
	dayLast               // dom L: the last day of the month
	dayLastWeekday        // dom LW: the last weekday (MON-FRI) of the month
	dayNearest            // dom nW: the weekday nearest day n, within the month
	dayLastOf             // dow nL: the last weekday n of the month
	dayNth                // dow n#k: the k-th weekday n of the month
)

type daySpec struct {
	any  bool // ?
	kind int
	days set // dayList: dom 1-31 or dow 1-7, minus 1
	n, k int // dayNearest: n; dayLastOf: weekday n; dayNth: weekday n, k
}

type cronSpec struct {
	minutes, hours, months, years set
	dom, dow                      daySpec
	hourList, minuteList          []int
}

var cronFieldNames = "minutes hours day-of-month month day-of-week year"

func parseCron(body string) (*cronSpec, error) {
	f := strings.Fields(body)
	if len(f) != 6 {
		return nil, fmt.Errorf("cron() takes 6 fields (%s), not %d", cronFieldNames, len(f))
	}
	var c cronSpec
	var err error
	if c.minutes, err = fMinutes.parse(f[0]); err != nil {
		return nil, err
	}
	if c.hours, err = fHours.parse(f[1]); err != nil {
		return nil, err
	}
	if c.months, err = fMonth.parse(f[3]); err != nil {
		return nil, err
	}
	if c.years, err = fYear.parse(f[5]); err != nil {
		return nil, err
	}
	domQ, dowQ := f[2] == "?", f[4] == "?"
	switch {
	case domQ && dowQ:
		return nil, fmt.Errorf("day-of-month and day-of-week cannot both be ?: use ? in exactly one of them")
	case !domQ && !dowQ:
		return nil, fmt.Errorf("day-of-month or day-of-week must be ?")
	}
	if c.dom, err = parseDom(f[2]); err != nil {
		return nil, err
	}
	if c.dow, err = parseDow(f[4]); err != nil {
		return nil, err
	}
	c.hourList, c.minuteList = c.hours.values(0), c.minutes.values(0)
	return &c, nil
}

// parse reads a field made of *, values, ranges, steps and commas.
func (fd field) parse(s string) (set, error) {
	var out set
	for item := range strings.SplitSeq(s, ",") {
		if err := fd.item(item, &out); err != nil {
			return set{}, err
		}
	}
	return out, nil
}

func (fd field) item(item string, out *set) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s %q: %s", fd.name, item, fmt.Sprintf(format, args...))
	}
	if item == "" {
		return bad("empty value (two commas, or a comma at an end)")
	}
	base, stepText, hasStep := strings.Cut(item, "/")
	if hasStep && !fd.step {
		return bad("the / wildcard is not allowed in %s", fd.name)
	}
	lo, hi := fd.min, fd.max
	switch {
	case base == "*":
	case strings.Contains(base, "-"):
		a, b, _ := strings.Cut(base, "-")
		var err error
		if lo, err = fd.value(a); err != nil {
			return bad("%v", err)
		}
		if hi, err = fd.value(b); err != nil {
			return bad("%v", err)
		}
		if lo > hi && fd.name == fYear.name {
			return bad("the range runs backwards")
		}
	default:
		v, err := fd.value(base)
		if err != nil {
			return bad("%v", err)
		}
		lo = v
		if !hasStep {
			hi = v
		}
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > fd.max-fd.min+1 {
			return bad("the increment after / must be a whole number from 1 to %d", fd.max-fd.min+1)
		}
		step = n
	}
	// A range may wrap past the field's end, as the hours 22-2 in AWS's
	// example cron(0/30 22-2 ? * MON-FRI *): 22, 23, 0, 1, 2.
	n := fd.max - fd.min + 1
	span := (hi - lo + n) % n
	for i := 0; i <= span; i += step {
		out.add((lo - fd.min + i) % n)
	}
	return nil
}

// value reads one number or name of the field.
func (fd field) value(s string) (int, error) {
	if i := indexName(fd.names, s); i >= 0 {
		return fd.min + i, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || strings.ContainsAny(s, "+-") {
		if why := fd.special(s); why != "" {
			return 0, errors.New(why)
		}
		if fd.names != nil {
			return 0, fmt.Errorf("%q is not a number from %d to %d or one of %s-%s", s, fd.min, fd.max, fd.names[0], fd.names[len(fd.names)-1])
		}
		return 0, fmt.Errorf("%q is not a number from %d to %d", s, fd.min, fd.max)
	}
	if n < fd.min || n > fd.max {
		return 0, fmt.Errorf("%d is not in %d-%d", n, fd.min, fd.max)
	}
	return n, nil
}

// special explains a wildcard of day-of-month or day-of-week found where it
// cannot be, or returns "".
func (fd field) special(s string) string {
	dom, dow := fd.name == fDom.name, fd.name == fDow.name
	switch u := strings.ToUpper(s); {
	case strings.Contains(u, "?"):
		return "? is only allowed as the whole day-of-month or day-of-week field"
	case strings.Contains(u, "L") && (dom || dow), strings.Contains(u, "W") && dom, strings.Contains(u, "#") && dow:
		if dom {
			return "L, LW and nW (such as 15W) stand alone in day-of-month"
		}
		return "L, nL (such as 6L) and n#k (such as 2#1) stand alone in day-of-week"
	case strings.Contains(u, "L"):
		return "L is only allowed in day-of-month and day-of-week"
	case strings.Contains(u, "W"):
		return "W is only allowed in day-of-month"
	case strings.Contains(u, "#"):
		return "# is only allowed in day-of-week"
	}
	return ""
}

func indexName(names []string, s string) int {
	for i, n := range names {
		if strings.EqualFold(n, s) {
			return i
		}
	}
	return -1
}

var (
	nearestRE = regexp.MustCompile(`^([0-9]{1,2})W$`)
	lastOfRE  = regexp.MustCompile(`^([0-9A-Za-z]{1,3})L$`)
	nthRE     = regexp.MustCompile(`^([0-9A-Za-z]{1,3})#([0-9]+)$`)
)

func parseDom(s string) (daySpec, error) {
	u := strings.ToUpper(s)
	switch {
	case s == "?":
		return daySpec{any: true}, nil
	case u == "L":
		return daySpec{kind: dayLast}, nil
	case u == "LW":
		return daySpec{kind: dayLastWeekday}, nil
	case strings.HasPrefix(u, "L-"):
		return daySpec{}, fmt.Errorf("day-of-month %q: offsets from the last day (L-n) are not supported; use L, LW, nW or days", s)
	}
	if m := nearestRE.FindStringSubmatch(u); m != nil {
		n, err := fDom.value(m[1])
		if err != nil {
			return daySpec{}, fmt.Errorf("day-of-month %q: %v", s, err)
		}
		return daySpec{kind: dayNearest, n: n}, nil
	}
	days, err := fDom.parse(s)
	return daySpec{kind: dayList, days: days}, err
}

func parseDow(s string) (daySpec, error) {
	u := strings.ToUpper(s)
	switch {
	case s == "?":
		return daySpec{any: true}, nil
	case u == "L": // the last day of the week: Saturday
		var days set
		days.add(7 - fDow.min)
		return daySpec{kind: dayList, days: days}, nil
	}
	if m := lastOfRE.FindStringSubmatch(u); m != nil {
		n, err := fDow.value(m[1])
		if err != nil {
			return daySpec{}, fmt.Errorf("day-of-week %q: %v", s, err)
		}
		return daySpec{kind: dayLastOf, n: n}, nil
	}
	if m := nthRE.FindStringSubmatch(u); m != nil {
		n, err := fDow.value(m[1])
		if err != nil {
			return daySpec{}, fmt.Errorf("day-of-week %q: %v", s, err)
		}
		k, err := strconv.Atoi(m[2])
		if err != nil || k < 1 || k > 5 {
			return daySpec{}, fmt.Errorf("day-of-week %q: the number after # must be from 1 to 5", s)
		}
		return daySpec{kind: dayNth, n: n, k: k}, nil
	}
	days, err := fDow.parse(s)
	return daySpec{kind: dayList, days: days}, err
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// weekday returns the day-of-week of a date as cron numbers it: 1 is SUN.
func weekday(y int, m time.Month, d int) int {
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()) + 1
}

func (c *cronSpec) matchDay(y int, m time.Month, d int) bool {
	if !c.dom.any {
		return c.dom.match(y, m, d, false)
	}
	return c.dow.match(y, m, d, true)
}

func (s daySpec) match(y int, m time.Month, d int, dow bool) bool {
	last := daysIn(y, m)
	switch s.kind {
	case dayList:
		if dow {
			return s.days.has(weekday(y, m, d) - 1)
		}
		return s.days.has(d - 1)
	case dayLast:
		return d == last
	case dayLastWeekday:
		return d == nearestWeekday(y, m, last)
	case dayNearest:
		// A month without day n has no nearest weekday to it, as a month
		// without day 31 has no day 31.
		return s.n <= last && d == nearestWeekday(y, m, s.n)
	case dayLastOf:
		return weekday(y, m, d) == s.n && d+7 > last
	case dayNth:
		return weekday(y, m, d) == s.n && (d-1)/7+1 == s.k
	}
	return false
}

// nearestWeekday returns the weekday (MON-FRI) nearest day n of the month,
// never leaving the month: a Saturday the 1st gives Monday the 3rd, a
// Sunday on the last day gives the Friday before it.
func nearestWeekday(y int, m time.Month, n int) int {
	last := daysIn(y, m)
	switch weekday(y, m, n) {
	case 7: // SAT
		if n == 1 {
			return n + 2
		}
		return n - 1
	case 1: // SUN
		if n == last {
			return n - 2
		}
		return n + 1
	}
	return n
}

func (c *cronSpec) next(after time.Time, loc *time.Location) (time.Time, bool) {
	a := after.In(loc)
	ay, am, ad := a.Date()
	for y := max(ay, fYear.min); y <= fYear.max; y++ {
		if !c.years.has(y - fYear.min) {
			continue
		}
		for m := time.January; m <= time.December; m++ {
			if !c.months.has(int(m)-1) || (y == ay && m < am) {
				continue
			}
			for d := 1; d <= daysIn(y, m); d++ {
				// A day before after's day has only times before it.
				if (y == ay && m == am && d < ad) || !c.matchDay(y, m, d) {
					continue
				}
				startDay := y == ay && m == am && d == ad
				for _, h := range c.hourList {
					for _, mi := range c.minuteList {
						// Earlier wall times of after's own day come before it.
						if startDay && h*60+mi < a.Hour()*60+a.Minute() {
							continue
						}
						t, ok := exists(wall{y, m, d, h, mi, 0}, loc)
						if ok && t.After(after) {
							return t, true
						}
					}
				}
			}
		}
	}
	return time.Time{}, false
}
