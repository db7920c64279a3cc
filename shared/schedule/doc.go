// Package schedule parses and evaluates EventBridge Scheduler's schedule
// expressions, the ones agentsfleet's schedules and follow-ups are written
// in (DESIGN §11): cron(minutes hours day-of-month month day-of-week year),
// rate(value unit) and at(yyyy-mm-ddThh:mm:ss), each read in a time zone.
//
// Parse accepts exactly what the EventBridge documentation describes and
// refuses anything else with an *Error that names what is wrong, such as
//
//	cron(0 9 * * * *): day-of-month or day-of-week must be ?
//
// so that a person or a fleet can fix the expression before it reaches AWS.
// The cron wildcards L, W and # are implemented (6L, 15W, LW, 2#1, L), as are
// month names JAN-DEC and day names SUN-SAT (day-of-week 1-7 is SUN-SAT).
// A range may wrap past the end of its field (hours 22-2 are 22, 23, 0, 1,
// 2; FRI-MON is FRI, SAT, SUN, MON), except in year. The / wildcard in
// day-of-week, L-n offsets, and L, W or # inside a list are refused: the
// documentation does not allow them.
//
// Evaluation follows Scheduler: a cron time that does not exist because the
// clocks go forward (daylight saving time) is skipped, and one that happens
// twice because they go back fires once, at its first occurrence. A rate is
// an exact duration (a day is 24 hours, whatever daylight saving time does),
// counted from the schedule's start. An at() time is read in the schedule's
// time zone and ignores the start.
//
// The subpackages use it: schedule/eventbridge registers schedules in
// EventBridge Scheduler, and schedule/clock fires them locally, where the
// emulator stores schedules but never fires them.
package schedule
