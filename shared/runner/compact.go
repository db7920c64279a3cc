package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// A long run must not fail for length. Before each model call the runner
// estimates how full the model's context window is; past fillRatio of it,
// it first cuts the outputs of older tool calls and drops their images
// (the model has acted on them), and if that is not enough it has the
// model summarise the conversation so far and goes on from the summary, as
// Codex's compaction does.
const (
	fillRatio = 0.8
	// keepRecent is how many of the last messages keep their tool outputs
	// whole.
	keepRecent = 4
	// cutOutputTo is what an older tool output is cut to.
	cutOutputTo = 1000
)

// bytesPerToken is the estimate used between model calls.
const bytesPerToken = 4

// estimate is the tokens the next request will take: what the provider
// counted for the last call, plus an estimate of what came after it, or
// an estimate of everything when there is no count.
func (x *execution) estimate() int64 {
	n := int64(len(x.system()))
	for _, t := range x.tools.offered {
		n += int64(len(t.Name) + len(t.Description) + len(t.Schema))
	}
	for _, m := range x.st.Messages {
		n += messageBytes(m)
	}
	byBytes := n / bytesPerToken
	if x.st.LastInput == 0 {
		return byBytes
	}
	// Everything since the last model call: its answer and the results.
	var since int64
	for i := len(x.st.Messages) - 1; i >= 0 && i >= len(x.st.Messages)-2; i-- {
		since += messageBytes(x.st.Messages[i])
	}
	return max(x.st.LastInput+since/bytesPerToken, byBytes)
}

func messageBytes(m model.Message) int64 {
	var n int64
	for _, p := range m.Content {
		n += int64(len(p.Text))
		if p.ToolCall != nil {
			n += int64(len(p.ToolCall.Name) + len(p.ToolCall.Arguments))
		}
		if p.ToolResult != nil {
			n += int64(len(p.ToolResult.Output))
			if img := p.ToolResult.Image; img != nil {
				n += imageTokens(img) * bytesPerToken
			}
		}
	}
	return n
}

// fitContext makes the conversation fit the context window.
func (x *execution) fitContext(ctx context.Context) error {
	limit := int64(float64(x.r.cfg.ContextTokens) * fillRatio)
	if x.estimate() <= limit {
		return nil
	}
	if x.cutOldOutputs() {
		// The provider's count is of the conversation before the cut:
		// estimate from bytes until the next call counts again.
		x.st.LastInput = 0
		if x.estimate() <= limit {
			x.r.log.Info("cut older tool outputs to fit the context", "run_id", x.run.ID)
			return nil
		}
	}
	return x.summarise(ctx)
}

// cutOldOutputs cuts the tool outputs of all but the last keepRecent
// messages, and drops their images. It reports whether it cut anything.
func (x *execution) cutOldOutputs() bool {
	cut := false
	for i := 0; i < len(x.st.Messages)-keepRecent; i++ {
		for _, p := range x.st.Messages[i].Content {
			r := p.ToolResult
			if r == nil {
				continue
			}
			if len(r.Output) > cutOutputTo+200 {
				r.Output = fmt.Sprintf("%s\n[… %d more bytes of this earlier output were cut to keep the conversation within the model's context; run the tool again if you need them]",
					cutUTF8(r.Output, cutOutputTo), len(r.Output)-len(cutUTF8(r.Output, cutOutputTo)))
				cut = true
			}
			if r.Image != nil {
				dropImage(r)
				cut = true
			}
		}
	}
	return cut
}

const summaryPrompt = `The conversation below is an agent's work on a task so far. It has grown too long for the model's context. Write a summary that lets the agent go on without it: the task, what has been done and found (files, commands, results, decisions), what is left to do, and anything it promised or must not forget. Be specific: keep names, paths, numbers and errors. Answer with the summary only.`

// summarise replaces the conversation with the task and a summary of the
// work so far, written by the model. The summary call's tokens are spent
// with the step that commits it, which writes the new conversation as one
// turn, where the conversation starts from then on (state.go).
func (x *execution) summarise(ctx context.Context) error {
	var transcript strings.Builder
	for _, m := range x.st.Messages {
		for _, p := range m.Content {
			switch {
			case p.Text != "":
				fmt.Fprintf(&transcript, "[%s] %s\n\n", m.Role, p.Text)
			case p.ToolCall != nil:
				fmt.Fprintf(&transcript, "[tool call %s] %s\n\n", p.ToolCall.Name, p.ToolCall.Arguments)
			case p.ToolResult != nil:
				out := p.ToolResult.Output
				if len(out) > 4*cutOutputTo {
					out = cutUTF8(out, 4*cutOutputTo) + " […]"
				}
				if img := p.ToolResult.Image; img != nil {
					out += fmt.Sprintf(" [and a %d×%d image]", img.Width, img.Height)
				}
				fmt.Fprintf(&transcript, "[tool result %s] %s\n\n", p.ToolResult.Name, out)
			}
		}
	}
	began := time.Now()
	resp, err := x.r.cfg.Model.Converse(ctx, model.Request{
		Model:  x.modelID(),
		System: summaryPrompt,
		Messages: []model.Message{{Role: model.User, Content: []model.Part{{Text: transcript.String() +
			"\n\nWrite the summary now."}}}},
	})
	if err != nil {
		if ctx.Err() != nil {
			return x.interrupted(ctx, err)
		}
		return x.end(ctx, store.StatusFailed, "", &run.Error{Code: run.CodeModel, Message: "compacting the conversation: " + err.Error()})
	}
	x.recordModel(x.modelID(), resp.Usage.InputTokens, resp.Usage.OutputTokens, time.Since(began))
	x.used(resp.Usage)
	summary := strings.TrimSpace(resp.Message.Text())
	if summary == "" {
		return x.end(ctx, store.StatusFailed, "", &run.Error{Code: run.CodeNoAnswer, Message: "the model wrote no summary when the conversation had to be compacted"})
	}
	task := x.st.Messages[0].Text()
	x.st.Messages = []model.Message{{Role: model.User, Content: []model.Part{{Text: task +
		"\n\n[Earlier work on this task was compacted into this summary, because the conversation grew too long:]\n" + summary +
		"\n\n[Go on with the task from here.]"}}}}
	x.st.Compactions++
	x.st.LastInput = 0
	x.st.Usage.InputTokens += resp.Usage.InputTokens
	x.st.Usage.OutputTokens += resp.Usage.OutputTokens
	x.r.log.Info("compacted the conversation", "run_id", x.run.ID, "compactions", x.st.Compactions)
	err = x.commit(ctx, store.Step{Spend: store.Budget{Tokens: resp.Usage.Total()}, WhileRunning: true})
	switch {
	case errors.Is(err, store.ErrRunEnded):
		return x.end(ctx, store.StatusCancelled, "", nil)
	case errors.Is(err, fault.RunBudgetSpent):
		return x.budgetSpent(ctx, err)
	}
	return err
}
