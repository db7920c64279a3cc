// Package limit holds the numbers the specification promises, in one
// place: the built-in tools' defaults and caps, the web tools' reach, and
// the caps on children, schedules and message lines. Each package that
// enforces one names it from here, so that a figure of the specification
// is written once.
//
// It imports only the standard library's time, so that any package (a
// tool's contract, the store, the HTTP API's shapes) may use it.
package limit

import "time"

// read (the built-in tools page).
const (
	ReadDefaultLines = 400  // lines returned when limit is not given
	ReadMaxLines     = 2000 // a larger limit reads this many lines
	ReadLineChars    = 4000 // characters kept of one line, then [line truncated]
)

// grep.
const (
	GrepDefaultResults = 100
	GrepMaxResults     = 1000
	GrepColumns        = 400 // characters kept of each path:line:text line
)

// glob.
const (
	GlobDefaultResults = 200
	GlobMaxResults     = 2000
)

// list.
const ListEntries = 500

// webfetch and websearch; http_request, web_fetch and pushover.
const (
	WebRedirects     = 5
	WebPageBytes     = 4 << 20 // webfetch reads at most 4 MB
	WebTimeout       = 30 * time.Second
	WebSearchDefault = 8
	WebSearchMax     = 20
	WebResponseBytes = 1 << 20 // http_request, web_fetch and pushover: 1 MiB
)

// Child agents.
const (
	ChildrenRunning = 4  // children working at once, per run
	ChildrenTotal   = 16 // children started in all, per run
	ChildDepth      = 2  // children (1) and grandchildren (2)
)

// Schedules.
const (
	Schedules      = 32 // schedules a fleet holds in total
	FleetSchedules = 16 // of which the fleet created itself
)

// message.
const (
	MessageLines           = 8    // lines a run may post
	MessageBytes           = 4096 // the longest line, in bytes of UTF-8
	MessageDeliveryTimeout = 12 * time.Second
)
