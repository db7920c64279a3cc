package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/modeltest"
)

func shot(id string, pic []byte, output string) model.Message {
	return model.Message{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: id, Name: "screenshot", Output: output,
		Image: &model.Image{MediaType: model.ImagePNG, Data: pic, Width: 320, Height: 200, Bytes: len(pic), Ref: "checkpoints/run/image-" + id + ".png"}}}}}
}

func call(id string) model.Message {
	return model.Message{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: id, Name: "screenshot", Arguments: json.RawMessage(`{}`)}}}}
}

// TestCutOldOutputsDropsImages: cutting the conversation to fit the
// context drops the images of older results, each replaced by a note
// after its (cut) output, and keeps the recent ones; an image counts in
// the estimate as its tokens.
func TestCutOldOutputsDropsImages(t *testing.T) {
	t.Parallel()
	pic := modeltest.PNG(320, 200)
	long := strings.Repeat("x", 5000)
	x := &execution{st: &state{Messages: []model.Message{
		text(model.User, "look"),
		call("a"), shot("a", pic, long),
		call("b"), shot("b", pic, "short"),
		call("c"), shot("c", pic, "recent"),
		call("d"), text(model.User, "the last"),
	}}}
	before := messageBytes(x.st.Messages[4])
	if want := int64(len("short")) + 320*200/750*bytesPerToken; before != want {
		t.Errorf("a result with an image counts %d bytes, want %d", before, want)
	}
	if !x.cutOldOutputs() {
		t.Fatal("cutOldOutputs cut nothing")
	}
	for i, want := range map[int]string{2: "more bytes of this earlier output were cut", 4: "short\n[A 320×200 image (image/png) this call made was here; it was dropped"} {
		r := x.st.Messages[i].Content[0].ToolResult
		if r.Image != nil || !strings.Contains(r.Output, want) || !strings.HasSuffix(r.Output, "Take a new screenshot if you need to see the page again.]") {
			t.Errorf("message %d: image kept %v, output %.200q…; want the image dropped and the output saying so", i, r.Image != nil, r.Output)
		}
	}
	if r := x.st.Messages[6].Content[0].ToolResult; r.Image == nil || r.Output != "recent" {
		t.Errorf("the recent result got image kept %v, output %q; want it whole", r.Image != nil, r.Output)
	}
	if after := messageBytes(x.st.Messages[4]); after >= before {
		t.Errorf("the result counts %d bytes once its image is dropped, %d before", after, before)
	}
}

// TestTurnsNameImages: the turns a step writes name each image by its
// reference, never with its data, however large it is.
func TestTurnsNameImages(t *testing.T) {
	t.Parallel()
	pic := modeltest.PNG(600, 600)
	r := &Runner{cfg: Config{Blobs: &memBlobs{m: map[string][]byte{}}}}
	s := &state{Messages: []model.Message{text(model.User, "look"), call("a"), shot("a", pic, "a page")}}
	_, turns, err := r.encode(context.Background(), "checkpoints/run", 1, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 {
		t.Fatalf("%d turns written, want 1", len(turns))
	}
	data := string(turns[0].Data)
	if strings.Contains(data, base64.StdEncoding.EncodeToString(pic[64:88])) || len(data) > 2048 {
		t.Errorf("the turn holds the image's data (%d bytes): %.300s", len(data), data)
	}
	var d turnData
	var msgs []model.Message
	if err := json.Unmarshal(turns[0].Data, &d); err != nil || json.Unmarshal(d.Messages, &msgs) != nil || len(msgs) != 3 {
		t.Fatalf("the turn does not decode to 3 messages: %v: %s", err, data)
	}
	got := msgs[2].Content[0].ToolResult.Image
	want := model.Image{MediaType: model.ImagePNG, Width: 320, Height: 200, Bytes: len(pic), Ref: "checkpoints/run/image-a.png"}
	if got == nil || got.Data != nil || got.MediaType != want.MediaType || got.Width != want.Width || got.Height != want.Height || got.Bytes != want.Bytes || got.Ref != want.Ref {
		t.Errorf("the turn's image got %+v, want %+v", got, want)
	}
}

// TestLoadImages: the images a conversation read back from the checkpoint
// names get their data from the bucket; one that cannot be read is
// dropped, its result saying so, and the rest still load.
func TestLoadImages(t *testing.T) {
	t.Parallel()
	pic := modeltest.PNG(320, 200)
	blobs := &memBlobs{m: map[string][]byte{"checkpoints/run/image-a.png": pic}}
	x := &execution{r: &Runner{cfg: Config{Blobs: blobs}, log: slog.New(slog.DiscardHandler)}}
	x.st = &state{Messages: []model.Message{text(model.User, "look"), call("a"), shot("a", nil, "a page"), call("b"), shot("b", nil, "gone")}}
	x.loadImages(context.Background())
	if img := x.st.Messages[2].Content[0].ToolResult.Image; img == nil || !bytes.Equal(img.Data, pic) {
		t.Errorf("image a was not read back")
	}
	r := x.st.Messages[4].Content[0].ToolResult
	if r.Image != nil || !strings.HasPrefix(r.Output, "gone\n[The image this call made could not be read back, and was dropped: read the image of tool call b from checkpoints/run/image-b.png:") {
		t.Errorf("image b: kept %v, output %q; want it dropped, saying why", r.Image != nil, r.Output)
	}
}

// TestKeepImagesLeavesOutWhatNoModelTakes: an image no model would take
// (a full-page screenshot taller than a model's limit, a format none
// reads) is left out of its result, which says why, instead of failing
// every later model call of the run.
func TestKeepImagesLeavesOutWhatNoModelTakes(t *testing.T) {
	t.Parallel()
	blobs := &memBlobs{m: map[string][]byte{}}
	x := &execution{r: &Runner{cfg: Config{Blobs: blobs}, log: slog.New(slog.DiscardHandler)}}
	results := []model.ToolResult{
		{CallID: "tall", Output: "a long page", Image: &model.Image{MediaType: model.ImagePNG, Data: modeltest.PNG(2, 2), Width: 1280, Height: 9000}},
		{CallID: "bmp", Output: "a bitmap", Image: &model.Image{MediaType: "image/bmp", Data: []byte("BM"), Width: 2, Height: 2}},
	}
	x.keepImages(context.Background(), results)
	for i, want := range []string{
		"a long page\n[The image this call made was left out: image is 1280×9000 pixels; a model takes at most 8000 a side]",
		`a bitmap` + "\n" + `[The image this call made was left out: image has media type "image/bmp"; a model takes image/png, image/jpeg, image/gif or image/webp]`,
	} {
		if r := results[i]; r.Image != nil || r.Output != want {
			t.Errorf("result %s: kept %v, output %q; want %q", r.CallID, r.Image != nil, r.Output, want)
		}
	}
	if len(blobs.m) != 0 {
		t.Errorf("%d blobs written, want none", len(blobs.m))
	}
}
