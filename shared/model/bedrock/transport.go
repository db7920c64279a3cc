package bedrock

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// bodyGuard works around a race in smithy-go (v1.28.9) that can kill a
// stream just after it started. smithy wraps the request body in a
// "safe" reader whose WriteTo returns io.EOF once closed, and closes it as
// soon as the response headers arrive. net/http, after writing the body's
// Content-Length bytes, calls WriteTo once more to check that nothing is
// left; when the close got there first, that EOF counts as a failed
// request write and the transport closes the connection, under the
// response stream still being read ("use of closed network connection").
// Over a real network the write has long finished when the headers come
// back, so it mostly bites fast local endpoints (the local stack, tests;
// TestConverseLongStreams fails without the guard), but it is a race all
// the same. Hiding WriteTo makes net/http use Read, whose EOF after the
// close is the clean end it should be.
type bodyGuard struct {
	client aws.HTTPClient
}

func (g bodyGuard) Do(r *http.Request) (*http.Response, error) {
	if _, ok := r.Body.(io.WriterTo); ok {
		shallow := *r
		shallow.Body = readCloser{r.Body}
		r = &shallow
	}
	return g.client.Do(r)
}

// readCloser is an io.ReadCloser and nothing more.
type readCloser struct{ io.ReadCloser }
