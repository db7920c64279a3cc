package runner

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// A tool's image (screenshot's PNG) is given to the model whole, and kept
// everywhere else by reference: the step that gets it writes it to the
// checkpoint bucket (Config.Blobs), and the conversation's turns (whose
// JSON leaves model.Image.Data out) and the tool.result event name it by
// its key. An invocation that reads the conversation back from the
// checkpoint reads each image's data back before its next model call.
// The secret screen cannot read an image (screen.go says what follows).

// errNoBucket is why an image cannot be kept by a runner without a
// checkpoint bucket.
var errNoBucket = errors.New("this runner has no checkpoint bucket to keep it in")

// modelImage is a tool's image as the conversation holds it, before it is
// kept; nil for none.
func modelImage(img *tool.Image) *model.Image {
	if img == nil {
		return nil
	}
	return &model.Image{MediaType: img.MediaType, Data: img.Data, Width: img.Width, Height: img.Height, Bytes: len(img.Data)}
}

// keepImages writes the images of the step's results to the checkpoint
// bucket and sets their Ref. An image that cannot be sent to a model or
// kept is left out of its result, whose output says so: the model goes on
// without it and may take it again.
func (x *execution) keepImages(ctx context.Context, results []model.ToolResult) {
	for i := range results {
		r := &results[i]
		img := r.Image
		if img == nil {
			continue
		}
		err := img.Check()
		if err == nil && x.r.cfg.Blobs == nil {
			err = errNoBucket
		}
		if err == nil {
			key := fmt.Sprintf("%s/image-%012d-%d-%s.%s", x.blobPrefix(), x.step+1, i, rand.Text(), img.Format())
			if err = x.r.cfg.Blobs.Put(ctx, key, img.Data); err == nil {
				img.Ref = key
				continue
			}
		}
		x.r.log.Warn("a tool's image was left out", "run_id", x.run.ID, "tool", r.Name, "call_id", r.CallID, "error", err)
		r.Image = nil
		r.Output += fmt.Sprintf("\n[The image this call made was left out: %v]", err)
	}
}

// loadImages reads back the data of the conversation's images that have
// none: those of turns read from the checkpoint. The conversation keeps
// what it reads, so each image is read once an invocation. One that
// cannot be read is dropped, its result saying so, so that the run goes
// on; while ctx is done it leaves the rest for the call to fail on.
func (x *execution) loadImages(ctx context.Context) {
	for _, m := range x.st.Messages {
		for _, p := range m.Content {
			r := p.ToolResult
			if r == nil || r.Image == nil || len(r.Image.Data) > 0 {
				continue
			}
			if ctx.Err() != nil {
				return
			}
			var data []byte
			err := errors.New("it was kept nowhere")
			if r.Image.Ref != "" {
				data, err = x.r.getBlob(ctx, r.Image.Ref, "the image of tool call "+r.CallID)
			}
			if err == nil && len(data) == 0 {
				err = fmt.Errorf("the image of tool call %s in %s is empty", r.CallID, r.Image.Ref)
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				x.r.log.Warn("an image of the conversation could not be read back", "run_id", x.run.ID, "ref", r.Image.Ref, "error", err)
				r.Output += fmt.Sprintf("\n[The image this call made could not be read back, and was dropped: %v]", err)
				r.Image = nil
				continue
			}
			r.Image.Data = data
		}
	}
}

// imageRef is img as a tool.result event names it; nil for none.
func imageRef(img *model.Image) *run.ImageRef {
	if img == nil {
		return nil
	}
	return &run.ImageRef{Ref: img.Ref, MediaType: img.MediaType, Width: img.Width, Height: img.Height, Bytes: img.Bytes}
}

// dropImage replaces r's image with a short text saying a screenshot was
// here, for a conversation cut to fit the model's context.
func dropImage(r *model.ToolResult) {
	img := r.Image
	r.Image = nil
	r.Output += fmt.Sprintf("\n[A %d×%d image (%s) this call made was here; it was dropped to keep the conversation within the model's context. Take a new screenshot if you need to see the page again.]",
		img.Width, img.Height, img.MediaType)
}

// imageTokens estimates an image's tokens between model calls, as
// Anthropic documents them: width × height / 750. Bedrock's Claude models
// count the same; other models count fewer, which keeps the estimate on
// the safe side.
func imageTokens(img *model.Image) int64 { return int64(img.Width) * int64(img.Height) / 750 }
