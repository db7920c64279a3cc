// Package modeltest provides what tests of the model providers and of
// their callers share: a real PNG to put in a tool result.
package modeltest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
)

// PNG returns a width × height PNG of a gradient, different for every
// size, so that a test comparing bytes tells two images apart.
func PNG(width, height int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, width, height))
	for y := range height {
		for x := range width {
			img.Set(x, y, color.NRGBA{R: uint8(x * 255 / max(width, 1)), G: uint8(y * 255 / max(height, 1)), B: uint8(x ^ y), A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // an in-memory image always encodes
	}
	return buf.Bytes()
}
