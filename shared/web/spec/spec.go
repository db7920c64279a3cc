package spec

import (
	"fmt"
	"maps"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Specs returns the specs of the five web tools (name, description, schema,
// argument check, place and scope) in a fixed order — webfetch, websearch,
// web_fetch, http_request, pushover — the order web.Service's tools come
// in. The caller owns the slice.
func Specs() []tool.Spec {
	return []tool.Spec{WebFetch, WebSearch, WebFetchTLS, HTTPRequest, Pushover}
}

// Limits from the spec, which package web enforces.
const (
	MaxRedirects = limit.WebRedirects     // every web tool
	MaxPageBytes = limit.WebPageBytes     // webfetch and websearch: 4 MB
	MaxRespBytes = limit.WebResponseBytes // web_fetch, http_request, pushover: 1 MiB
	// Timeout is a web tool call's time limit.
	Timeout = limit.WebTimeout
)

// PageCap and RespCap say MaxPageBytes and MaxRespBytes as the descriptions
// and the results do; the spec writes webfetch's cap as "4 MB".
var (
	PageCap = fmt.Sprintf("%d MB", MaxPageBytes>>20)
	RespCap = fmt.Sprintf("%d MiB", MaxRespBytes>>20)
)

// figures are the values a tool's description template can state
// (tool.About.Values): the limits every web tool shares, and the tool's
// own, more. The descriptions state Timeout, the production limit, whatever
// timeout a test gives a web.Service.
func figures(more map[string]any) map[string]any {
	v := map[string]any{
		"MaxRedirects": MaxRedirects,
		"PageCap":      PageCap,
		"RespCap":      RespCap,
		"Timeout":      inWords(Timeout),
	}
	maps.Copy(v, more)
	return v
}

// inWords says d as a description does: "30 seconds", "an hour".
func inWords(d time.Duration) string {
	unit := func(n time.Duration, one, many string) string {
		if n == 1 {
			return one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	switch {
	case d <= 0:
		return d.String()
	case d%time.Hour == 0:
		return unit(d/time.Hour, "an hour", "hours")
	case d%time.Minute == 0:
		return unit(d/time.Minute, "a minute", "minutes")
	case d%time.Second == 0:
		return unit(d/time.Second, "1 second", "seconds")
	}
	return d.String()
}
