// Package post is the slack λ's half of package thread: it shows a run in
// its Slack thread with slack-go (the Slack Web API; OptionAPIURL points it
// at a fake in tests). It is the only code that uses the bot token.
//
//   - working: a status message with a Stop button, and the assistant
//     thread status where the thread is an assistant thread (else an
//     hourglass reaction on the thread's first message);
//   - the plan: one message, edited in place (chat.update) as it changes;
//   - a message line: posted as the runner made it (secrets replaced,
//     mentions inert), as plain text that Slack shows exactly as written
//     (plainBlocks), within the runner's 12 seconds;
//   - the answer: streamed into the thread (chat.startStream, appendStream,
//     stopStream) to the person the run answers, posted plainly when
//     streaming is refused or that person is not known, and uploaded as a
//     file (the external upload flow) past MaxInline bytes;
//   - a run that did not succeed: said in the thread, with why.
//
// The status message loses its Stop button once the run has ended. The ts
// of the status and plan messages are kept in the store, so that any
// invocation of the slack λ edits the same messages.
package post

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Defaults of Config.
const (
	// DefaultMaxInline is the longest answer posted as a message; a longer
	// one is uploaded as a file. Slack cuts messages near 4,000 characters.
	DefaultMaxInline = 3500
	// streamChunk is the most text one chat.appendStream carries.
	streamChunk = 1000
)

// Records keeps a run's thread messages; *store.Store has it.
type Records interface {
	SetThreadMessage(ctx context.Context, runID, which, ts string) error
	GetThreadMessages(ctx context.Context, runID string) (store.ThreadMessages, error)
}

var _ Records = (*store.Store)(nil)

// Config configures a Poster.
type Config struct {
	Slack   *slack.Client
	Records Records
	// MaxInline is the longest answer posted inline, in bytes; 0 means
	// DefaultMaxInline.
	MaxInline int
	Log       *slog.Logger
}

// Poster posts runs' progress to their threads. Safe for concurrent use.
type Poster struct {
	cfg Config
	log *slog.Logger
}

// New returns a Poster over cfg.
func New(cfg Config) (*Poster, error) {
	if cfg.Slack == nil || cfg.Records == nil {
		return nil, errors.New("slack post: want a Slack client and the records")
	}
	if cfg.MaxInline <= 0 {
		cfg.MaxInline = DefaultMaxInline
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Poster{cfg: cfg, log: log}, nil
}

// Invoke is the slack λ's handler for the runner's requests: a
// thread.Request as JSON in, a thread.Response as JSON out. A payload that
// is not a Request is an error.
func (p *Poster) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var req thread.Request
	if err := json.Unmarshal(payload, &req); err != nil || req.Op == "" || req.Channel == "" || req.ThreadTS == "" {
		return nil, fmt.Errorf("slack post: the payload must be a thread.Request with op, channel and thread_ts, not %.200q", payload)
	}
	return json.Marshal(p.Post(ctx, req))
}

// Post serves one request. A post Slack refuses answers Delivered false
// with Slack's reason.
func (p *Poster) Post(ctx context.Context, req thread.Request) thread.Response {
	var err error
	switch req.Op {
	case thread.OpWorking:
		err = p.working(ctx, req)
	case thread.OpPlan:
		err = p.plan(ctx, req)
	case thread.OpLine:
		_, _, err = p.cfg.Slack.PostMessageContext(ctx, req.Channel, slack.MsgOptionTS(req.ThreadTS),
			slack.MsgOptionBlocks(plainBlocks(req.Text)...), slack.MsgOptionText(req.Text, false),
			slack.MsgOptionDisableMarkdown(), slack.MsgOptionLinkNames(false))
	case thread.OpProposal:
		err = p.proposal(ctx, req)
	case thread.OpApproval:
		err = p.approval(ctx, req)
	case thread.OpAnswer:
		err = p.answer(ctx, req)
	case thread.OpEnded:
		err = p.ended(ctx, req)
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		p.log.Warn("slack post failed", "run_id", req.RunID, "op", req.Op, "error", err)
		return thread.Response{Error: err.Error()}
	}
	return thread.Response{Delivered: true}
}

// working posts the status message with its Stop button.
func (p *Poster) working(ctx context.Context, req thread.Request) error {
	text := "Working on it…"
	_, ts, err := p.cfg.Slack.PostMessageContext(ctx, req.Channel, slack.MsgOptionTS(req.ThreadTS),
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(statusBlocks(text, req.RunID, true)...))
	if err != nil {
		return err
	}
	if err := p.cfg.Records.SetThreadMessage(ctx, req.RunID, "status", ts); err != nil {
		p.log.Warn("keep the status message", "run_id", req.RunID, "error", err)
	}
	p.setStatus(ctx, req, "is working…")
	return nil
}

// setStatus sets the assistant thread status, or (where Slack refuses it:
// not an assistant thread) marks the thread with a reaction.
func (p *Poster) setStatus(ctx context.Context, req thread.Request, status string) {
	err := p.cfg.Slack.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: req.Channel, ThreadTS: req.ThreadTS, Status: status})
	if err == nil {
		return
	}
	ref := slack.NewRefToMessage(req.Channel, req.ThreadTS)
	if status != "" {
		err = p.cfg.Slack.AddReactionContext(ctx, "hourglass_flowing_sand", ref)
	} else {
		err = p.cfg.Slack.RemoveReactionContext(ctx, "hourglass_flowing_sand", ref)
	}
	if err != nil {
		p.log.Info("no thread status", "run_id", req.RunID, "error", err)
	}
}

// statusBlocks is the status message: its text, and a Stop button while
// the run works.
func statusBlocks(text, runID string, stop bool) []slack.Block {
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, text, false, false), nil, nil)}
	if stop {
		btn := slack.NewButtonBlockElement(thread.StopAction, runID, slack.NewTextBlockObject(slack.PlainTextType, "Stop", false, false))
		btn.Style = slack.StyleDanger
		blocks = append(blocks, slack.NewActionBlock("agentsfleet_run", btn))
	}
	return blocks
}

// proposal posts an improvement chat's proposal: the agent's answer, the
// summary and the diff as plain text, and the Apply and Discard buttons.
func (p *Poster) proposal(ctx context.Context, req thread.Request) error {
	text := thread.Inert(req.Text + "\n\nProposal: " + req.Summary + "\n\n" + req.Diff)
	blocks := plainBlocks(text)
	apply := slack.NewButtonBlockElement(thread.ApplyAction, req.Improvement, slack.NewTextBlockObject(slack.PlainTextType, "Apply", false, false))
	apply.Style = slack.StylePrimary
	discard := slack.NewButtonBlockElement(thread.DiscardAction, req.Improvement, slack.NewTextBlockObject(slack.PlainTextType, "Discard", false, false))
	blocks = append(blocks, slack.NewActionBlock("agentsfleet_improve", apply, discard))
	_, _, err := p.cfg.Slack.PostMessageContext(ctx, req.Channel, slack.MsgOptionTS(req.ThreadTS),
		slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false), slack.MsgOptionDisableMarkdown(), slack.MsgOptionLinkNames(false))
	return err
}

// approval posts the calls a run waits on, each with Approve and Deny
// buttons.
func (p *Poster) approval(ctx context.Context, req thread.Request) error {
	if len(req.Approvals) == 0 {
		return errors.New("an approval request names no approval")
	}
	text := fmt.Sprintf("This run waits for a person before it goes on (until %s):", req.Expires)
	blocks := plainBlocks(text)
	for _, a := range req.Approvals {
		line := thread.Inert(a.Tool) + " " + a.Arguments
		if a.Secret != "" {
			line = fmt.Sprintf("%s wants to use the secret %s for %s %s (once approved, for the rest of the run): %s",
				thread.Inert(a.Tool), thread.Inert(a.Secret), thread.Inert(a.Method), a.Host, a.Arguments)
		}
		if n := utf8.RuneCountInString(line); n > MaxTextObject-100 {
			line = string([]rune(line)[:MaxTextObject-100]) + " …"
		}
		blocks = append(blocks, plainBlocks(line)...)
		v := thread.ApprovalValue(req.RunID, a.ID)
		approve := slack.NewButtonBlockElement(thread.ApproveAction, v, slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false))
		approve.Style = slack.StylePrimary
		deny := slack.NewButtonBlockElement(thread.DenyAction, v, slack.NewTextBlockObject(slack.PlainTextType, "Deny", false, false))
		deny.Style = slack.StyleDanger
		blocks = append(blocks, slack.NewActionBlock("agentsfleet_approval_"+a.ID, approve, deny))
	}
	_, _, err := p.cfg.Slack.PostMessageContext(ctx, req.Channel, slack.MsgOptionTS(req.ThreadTS),
		slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false), slack.MsgOptionDisableMarkdown(), slack.MsgOptionLinkNames(false))
	return err
}

// MaxTextObject is the most characters Block Kit takes in one section's
// text object.
const MaxTextObject = 3000

// plainBlocks is a message line as Slack shows it exactly as written: one
// section block a MaxTextObject characters, each a plain_text text object
// with emoji false. plain_text is never read as mrkdwn (*bold*, _x_, ~x~,
// `code`, quotes, <…> mentions and links), and emoji false keeps :name:
// codes as text; Slack still decodes &amp; &lt; &gt;, which is how the
// runner's inert line (thread.Inert) shows its & < > as written. The line
// is cut at a line's end where one falls near the limit (the blocks stack,
// so the cut shows as that line's end), else at the limit, never inside a
// character or an entity. The message's text, which notifications show,
// is the line with mrkdwn false.
func plainBlocks(text string) []slack.Block {
	var out []slack.Block
	for text != "" {
		cut, skip := len(text), 0
		if utf8.RuneCountInString(text) > MaxTextObject {
			end := 0
			for n := 0; n < MaxTextObject; n++ {
				_, size := utf8.DecodeRuneInString(text[end:])
				end += size
			}
			switch i := strings.LastIndexByte(text[:end], '\n'); {
			case text[end] == '\n':
				cut, skip = end, 1
			case i > 0:
				cut, skip = i, 1
			default:
				cut = end
				if amp := strings.LastIndexByte(text[:end], '&'); amp > 0 && end-amp < len("&amp;") && !strings.Contains(text[amp:end], ";") {
					cut = amp // not inside &amp; &lt; &gt;
				}
			}
		}
		out = append(out, slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, text[:cut], false, false), nil, nil))
		text = text[cut+skip:]
	}
	return out
}

// plan posts the plan, or edits the run's plan message.
func (p *Poster) plan(ctx context.Context, req thread.Request) error {
	text := planText(req)
	msgs, err := p.cfg.Records.GetThreadMessages(ctx, req.RunID)
	if err != nil {
		return err
	}
	if msgs.Plan != "" {
		_, _, _, err := p.cfg.Slack.UpdateMessageContext(ctx, req.Channel, msgs.Plan, slack.MsgOptionText(text, false))
		return err
	}
	_, ts, err := p.cfg.Slack.PostMessageContext(ctx, req.Channel, slack.MsgOptionTS(req.ThreadTS), slack.MsgOptionText(text, false))
	if err != nil {
		return err
	}
	return p.cfg.Records.SetThreadMessage(ctx, req.RunID, "plan", ts)
}

// planText is the plan as a message: one line a step, its status a mark.
func planText(req thread.Request) string {
	var b strings.Builder
	b.WriteString("*Plan*")
	if e := strings.TrimSpace(req.Explanation); e != "" {
		b.WriteString(" — " + thread.Inert(e))
	}
	for _, s := range req.Plan {
		mark := map[string]string{"completed": "✅", "in_progress": "⏳"}[s.Status]
		if mark == "" {
			mark = "▫️"
		}
		b.WriteString("\n" + mark + " " + thread.Inert(s.Step))
	}
	return b.String()
}

// answer streams the answer into the thread (a plain post where streaming
// is refused), or uploads it past MaxInline, then ends the status message.
func (p *Poster) answer(ctx context.Context, req thread.Request) error {
	text := thread.Inert(req.Text)
	var err error
	if len(text) > p.cfg.MaxInline {
		_, err = p.cfg.Slack.UploadFileContext(ctx, slack.UploadFileParameters{
			Content: req.Text, FileSize: len(req.Text), Filename: "answer.md", Title: "Answer",
			Channel: req.Channel, ThreadTimestamp: req.ThreadTS,
			InitialComment: "The answer is long, so here it is as a file."})
	} else if err = p.stream(ctx, req, text); err != nil {
		p.log.Info("streaming refused, posting the answer", "run_id", req.RunID, "error", err)
		_, _, err = p.cfg.Slack.PostMessageContext(ctx, req.Channel, slack.MsgOptionTS(req.ThreadTS), slack.MsgOptionText(text, false))
	}
	p.finish(ctx, req, "Done.")
	return err
}

// errNoRecipient is why an answer is not streamed in a channel thread
// whose run has no recipient recorded.
var errNoRecipient = errors.New("the run names no recipient (user and team), which chat.startStream needs outside a direct message")

// stream sends text through chat.startStream, appendStream and stopStream,
// to the run's recipient (req.User of req.Team). Slack refuses a stream
// without one outside a direct message (missing_recipient_team_id,
// missing_recipient_user_id), so a request without one is not streamed
// there.
func (p *Poster) stream(ctx context.Context, req thread.Request, text string) error {
	chunks := split(text, streamChunk)
	opts := []slack.MsgOption{slack.MsgOptionTS(req.ThreadTS), slack.MsgOptionMarkdownText(chunks[0])}
	switch {
	case req.User != "" && req.Team != "":
		opts = append(opts, slack.MsgOptionRecipientUserID(req.User), slack.MsgOptionRecipientTeamID(req.Team))
	case !strings.HasPrefix(req.Channel, "D"): // Slack's DM ids start with D
		return errNoRecipient
	}
	_, ts, err := p.cfg.Slack.StartStreamContext(ctx, req.Channel, opts...)
	if err != nil {
		return err
	}
	for _, c := range chunks[1:] {
		if _, _, err := p.cfg.Slack.AppendStreamContext(ctx, req.Channel, ts, slack.MsgOptionMarkdownText(c)); err != nil {
			return fmt.Errorf("the answer's stream broke after it started (%w); it may show only in part", err)
		}
	}
	_, _, err = p.cfg.Slack.StopStreamContext(ctx, req.Channel, ts)
	return err
}

// split cuts text into pieces of at most n bytes, not inside a character.
func split(text string, n int) []string {
	var out []string
	for len(text) > n {
		i := n
		for i > 0 && text[i]&0xC0 == 0x80 {
			i--
		}
		out = append(out, text[:i])
		text = text[i:]
	}
	return append(out, text)
}

// ended says in the thread how a run that did not succeed ended.
func (p *Poster) ended(ctx context.Context, req thread.Request) error {
	text, done := "The run failed: "+thread.Inert(req.Text), "Failed."
	if req.Status == "cancelled" {
		text, done = "The run was stopped.", "Stopped."
	}
	_, _, err := p.cfg.Slack.PostMessageContext(ctx, req.Channel, slack.MsgOptionTS(req.ThreadTS), slack.MsgOptionText(text, false))
	p.finish(ctx, req, done)
	return err
}

// finish ends the status message (its Stop button gone) and the thread
// status.
func (p *Poster) finish(ctx context.Context, req thread.Request, text string) {
	p.setStatus(ctx, req, "")
	msgs, err := p.cfg.Records.GetThreadMessages(ctx, req.RunID)
	if err != nil || msgs.Status == "" {
		return
	}
	if _, _, _, err := p.cfg.Slack.UpdateMessageContext(ctx, req.Channel, msgs.Status,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(statusBlocks(text, req.RunID, false)...)); err != nil {
		p.log.Warn("end the status message", "run_id", req.RunID, "error", err)
	}
}
