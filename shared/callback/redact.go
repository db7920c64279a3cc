package callback

import "net/url"

// Redacted is rawURL as logs may carry it: its scheme, host (with the port)
// and path only. The query and fragment may hold the receiver's token and
// the user information a password, so none of them is kept; a URL that
// does not parse is "(a callback_url that does not parse)", nothing of it.
func Redacted(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(a callback_url that does not parse)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}
