package tool

import (
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/run"
)

// Result is what a tool call returns to the model: text plus an error flag,
// and for screenshot an image. It is also the JSON answer of sandboxd and
// of the webtools λ: {"output": "…", "is_error": false, "image": {…}}.
type Result struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error"`
	// Image, when set, is a picture the tool made (screenshot's), shown to
	// the model beside Output.
	Image *Image `json:"image,omitempty"`
	// Egress is what the tool reached on the network as it reports it (the
	// browser tools: their proxy's connections), for the run's egress log
	// and never for the model; the runner records it with the sandbox's
	// mark.
	Egress []run.Egress `json:"egress,omitempty"`
}

// Image is an encoded picture a tool made.
type Image struct {
	// MediaType is the encoding: ImagePNG.
	MediaType string `json:"media_type"`
	// Data is the encoded image: base64 in JSON.
	Data []byte `json:"data"`
	// Width and Height are its size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
}

// ImagePNG is the media type of a PNG image.
const ImagePNG = "image/png"

// Text returns a normal result.
func Text(output string) Result { return Result{Output: output} }

// Errorf returns an error result: a mistake the model can see and fix, such
// as a missing argument or a path outside the agent's data. A broken
// environment is a Go error instead.
func Errorf(format string, args ...any) Result {
	return Result{Output: fmt.Sprintf(format, args...), IsError: true}
}
