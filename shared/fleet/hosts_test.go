package fleet_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

func TestNormalizeHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entry string
		want  string // normal form; "" when the entry is refused
		err   string // part of the error when refused
	}{
		// Names, URLs, ports and paths: only the host counts.
		{"api.github.com", "api.github.com", ""},
		{"https://api.github.com:443/repos", "api.github.com", ""},
		{"http://api.github.com", "api.github.com", ""},
		{"https://api.github.com/repos?page=2#top", "api.github.com", ""},
		{"api.github.com:8443", "api.github.com", ""},
		{"api.github.com/repos", "api.github.com", ""},
		{"//api.github.com/x", "api.github.com", ""},
		{"wss://stream.example.com:9443/", "stream.example.com", ""},
		{"  api.github.com  ", "api.github.com", ""},
		// Case, trailing dots.
		{"API.GitHub.COM", "api.github.com", ""},
		{"HTTPS://API.GITHUB.COM/", "api.github.com", ""},
		{"example.com.", "example.com", ""},
		{"https://example.com.:443/", "example.com", ""},
		{"example.com..", "", "empty host name label"},
		{"localhost", "localhost", ""},
		// Unicode names become punycode.
		{"bücher.example", "xn--bcher-kva.example", ""},
		{"BÜCHER.example", "xn--bcher-kva.example", ""},
		{"https://☃.net/", "xn--n3h.net", ""},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", ""},
		{"ｅｘａｍｐｌｅ.com", "example.com", ""},
		// IP addresses.
		{"192.0.2.10", "192.0.2.10", ""},
		{"http://192.0.2.10:8080/x", "192.0.2.10", ""},
		{"[2001:db8::1]", "[2001:db8::1]", ""},
		{"[2001:DB8:0:0::1]:443", "[2001:db8::1]", ""},
		{"https://[2001:db8::1]:8443/path", "[2001:db8::1]", ""},
		{"2001:db8::1", "[2001:db8::1]", ""},
		{"[::ffff:192.0.2.1]", "192.0.2.1", ""},
		{"[fe80::1%25eth0]", "", "zone"},
		{"fe80::1%eth0", "", "zone"},
		{"[2001:db8::1", "", "missing ]"},
		{"[192.0.2.1]", "", "not an IPv6 address"},
		{"[2001:db8::1]x", "", "unexpected"},
		{"2001:db8::zz", "", "neither a host nor an IPv6 address"},
		{"1.2.3", "", "last label is a number"},
		{"999.1.1.1", "", "last label is a number"},
		// Wildcards.
		{"*.example.com", "*.example.com", ""},
		{"https://*.Example.com:443/", "*.example.com", ""},
		{"*.bücher.example", "*.xn--bcher-kva.example", ""},
		{"*.co.uk", "*.co.uk", ""},
		{"*", "", "wildcard must be the whole first label"},
		{"*.com", "", "too broad"},
		{"*example.com", "", "wildcard must be the whole first label"},
		{"a.*.example.com", "", "wildcard must be the whole first label"},
		{"*.*.example.com", "", "wildcard must be the whole first label"},
		{"*.1.2.3.4", "", "last label is a number"},
		// Refused entries.
		{"", "", "empty host entry"},
		{"   ", "", "empty host entry"},
		{"/repos", "", "has a path but no host"},
		{"https:///repos", "", "has a path but no host"},
		{"https://", "", "has no host"},
		{"user@example.com", "", "user information"},
		{"https://user:pw@example.com/", "", "user information"},
		{"https://user:hunter2@example.com/", "", "host entry contains user information (user@); give only the host"},
		{"exa mple.com", "", "contains a space"},
		{"example.com:0", "", "port \"0\" is not a number from 1 to 65535"},
		{"example.com:65536", "", "port \"65536\""},
		{"example.com:http", "", "port \"http\""},
		{"example.com:+80", "", "port \"+80\""},
		{"example.com:", "", "empty port"},
		{"a_b.example.com", "", "not a valid host name"},
		{"-a.example.com", "", "not a valid host name"},
		{"a..example.com", "", "empty label"},
		{"9ttp://example.com", "", "is not a URL scheme"},
		{strings.Repeat("a", 64) + ".com", "", "longer than 63"},
		{strings.Repeat("abcdefghi.", 26) + "com", "", "at most 253"},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			t.Parallel()
			got, err := fleet.NormalizeHost(tt.entry)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("NormalizeHost(%q) = %q, %v; want %q", tt.entry, got, err, tt.want)
				}
				// The normal form is a fixed point.
				if again, err := fleet.NormalizeHost(got); err != nil || again != got {
					t.Fatalf("NormalizeHost(%q) = %q, %v; want it unchanged", got, again, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("NormalizeHost(%q) = %q, %v; want an error containing %q", tt.entry, got, err, tt.err)
			}
		})
	}
}

func TestParseHostList(t *testing.T) {
	t.Parallel()
	got, err := fleet.ParseHostList([]string{"b.example", "https://A.example/x", "a.example:80", "B.EXAMPLE."})
	if err != nil {
		t.Fatal(err)
	}
	if want := (fleet.HostList{"a.example", "b.example"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q (sorted, without repeats)", got, want)
	}
	_, err = fleet.ParseHostList([]string{"ok.example", "", "user@x.example"})
	var fe *fleet.Error
	if !errors.As(err, &fe) || !errors.Is(err, fault.DefinitionInvalid) {
		t.Fatalf("got %v, want an *Error wrapping DefinitionInvalid", err)
	}
	if len(fe.Problems) != 2 || fe.Problems[0].Path != "[1]" || fe.Problems[1].Path != "[2]" {
		t.Fatalf("got problems %+v, want two, at [1] and [2]", fe.Problems)
	}
}

func TestHostListAllows(t *testing.T) {
	t.Parallel()
	list, err := fleet.ParseHostList([]string{
		"https://api.github.com:443/repos", "*.example.com", "bücher.example", "[2001:db8::1]", "192.0.2.10",
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		want bool
	}{
		{"api.github.com", true},
		{"API.GITHUB.COM", true},
		{"api.github.com.", true},
		{"api.github.com:8443", true},
		{"api.github.com:443", true},
		{"github.com", false},
		{"evil-api.github.com", false},
		{"api.github.com.evil.net", false},
		{"a.example.com", true},
		{"a.b.example.com:80", true},
		{"example.com", false},
		{"badexample.com", false},
		{"bücher.example", true},
		{"xn--bcher-kva.example", true},
		{"BÜCHER.example:443", true},
		{"[2001:db8::1]:443", true},
		{"2001:db8::1", true},
		{"[2001:db8:0::1]", true},
		{"[2001:db8::2]", false},
		{"192.0.2.10", true},
		{"192.0.2.10:8080", true},
		{"[::ffff:192.0.2.10]:80", true},
		{"192.0.2.11", false},
		{"", false},
		{"*.example.com", false},
		{"api.github.com:99999", false},
		{"user@api.github.com", false},
	}
	for _, tt := range tests {
		if got := list.Allows(tt.host); got != tt.want {
			t.Errorf("Allows(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
	if (fleet.HostList{}).Allows("api.github.com") {
		t.Error("an empty list allows api.github.com, want it to allow nothing")
	}
}

func TestHostErrorHidesUserInformation(t *testing.T) {
	t.Parallel()
	_, err := fleet.ParseTOML(minimal("[x-agentsfleet.network]\nhosts = [\"https://deploy:hunter2@ci.example.com/\"]\n"))
	probs := problems(t, err)
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %q repeats the password in the entry", err)
	}
	if probs[0].Path != "x-agentsfleet.network.hosts[0]" || probs[0].Line != 4 {
		t.Fatalf("got %+v, want the problem at x-agentsfleet.network.hosts[0], line 4", probs[0])
	}
}
