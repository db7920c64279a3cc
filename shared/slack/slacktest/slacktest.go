// Package slacktest is a local Slack Web API for tests: an httptest server
// that slack-go (slack.OptionAPIURL) or agentsfleet
// (AGENTSFLEET_SLACK_API_URL) is pointed at. It serves the methods
// agentsfleet calls and keeps what they did to the workspace (messages
// posted, edited and streamed, reactions, uploads). It refuses what Slack
// refuses, answering 200 with {"ok": false, "error": CODE} and Slack's own
// code, so that a call Slack would turn down fails in a test too and not
// only in a deployment:
//
//   - every method wants the bot token, as an Authorization: Bearer header
//     or the token argument (not_authed without one, invalid_auth for
//     another); a method it does not serve is unknown_method;
//   - chat.postMessage wants a channel (channel_not_found) and text, blocks
//     or attachments (no_text);
//   - chat.update wants a message posted in that channel
//     (message_not_found), and text or blocks (no_text);
//   - blocks, where a method takes them, must be a JSON array of at most
//     50 blocks whose section and header text objects are plain_text or
//     mrkdwn with 1 to 3,000 characters, emoji only on plain_text
//     (invalid_blocks), as Block Kit's reference says;
//   - chat.postEphemeral wants a channel (channel_not_found), a user
//     (user_not_found; user_not_in_channel where Members says who is in the
//     channel and the user is not), and text or blocks (no_text);
//   - usergroups.users.list wants a user group the workspace has
//     (no_such_subteam; AddUserGroup makes one) and answers its members;
//   - chat.startStream wants a channel (channel_not_found) and, outside a
//     direct message (a channel whose id does not start with D),
//     recipient_team_id and recipient_user_id: Slack's method documentation
//     says both are "required when streaming to channels", and Slack
//     answers missing_recipient_team_id, then missing_recipient_user_id,
//     without them;
//   - chat.appendStream and chat.stopStream want a message that
//     chat.startStream began in that channel (message_not_found) and that is
//     still streaming (message_not_in_streaming_state); appendStream wants
//     markdown_text (no_text);
//   - reactions.add and reactions.remove want channel and timestamp
//     (no_item_specified) and a name (invalid_name); a reaction already
//     there is already_reacted, one that is not there no_reaction;
//   - assistant.threads.setStatus wants channel_id (channel_not_found) and
//     thread_ts (invalid_thread_ts); since March 2026 Slack sets it in any
//     thread of a channel the app may write to, so it is taken;
//   - files.getUploadURLExternal wants filename and length
//     (invalid_arguments); files.completeUploadExternal wants files it
//     issued and that were uploaded (file_not_found).
//
// Each message also keeps what a person would see of it (Message.Rendered):
// Slack's rendering of its blocks, or of its text where it has none, with
// what Slack would format marked — mrkdwn's *bold*, _italic_, ~strike~ and
// `code`, :emoji: codes, <…> mentions and links — and &amp; &lt; &gt;
// decoded, as Slack shows them. plain_text shows no formatting but renders
// :emoji: unless its emoji is false; a message's text is mrkdwn unless the
// call set mrkdwn false, and even then its :emoji: codes render (Slack's
// documentation promises nothing else), so only a plain_text block with
// emoji false shows every line exactly as written.
//
// Refuse makes it refuse a method the way Slack does for reasons a fake
// cannot see (missing_scope, not_in_channel, ratelimited, …). A Server is
// safe for concurrent use.
package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// Call is one Web API call the Server took.
type Call struct {
	Method string
	// Args holds each argument's first value, the token left out.
	Args map[string]string
	// Error is the code the call was refused with, "" when it succeeded.
	Error string
}

// Message is a message the app has in the workspace.
type Message struct {
	Channel, TS, ThreadTS string
	// Text is the message's text: for a streamed message, the markdown
	// streamed so far.
	Text   string
	Blocks string // the blocks argument as sent, JSON
	// Rendered is what a person sees of a posted or updated message (see
	// the package comment); empty for a streamed one.
	Rendered string
	// Ephemeral says chat.postEphemeral posted it, for User alone.
	Ephemeral bool
	User      string
	// Streamed says chat.startStream began it; Streaming that
	// chat.stopStream has not ended it yet.
	Streamed, Streaming bool
	// Recipient and RecipientTeam are a stream's recipient_user_id and
	// recipient_team_id.
	Recipient, RecipientTeam string
}

// Server is the fake Web API. Its URL is the server's; APIURL is the base
// slack-go wants.
type Server struct {
	URL   string
	token string
	srv   *httptest.Server

	mu        sync.Mutex
	n         int
	calls     []Call
	refuse    map[string]string
	messages  []*Message
	reactions map[string]bool // channel/ts/name
	files     map[string][]byte
	uploaded  map[string]bool
	last      []byte
	groups    map[string][]string // user group id → members
	members   map[string][]string // channel → members, where known
}

// New starts a Server that wants token as the bot token, closed when the
// test ends.
func New(t testing.TB, token string) *Server {
	s := &Server{token: token, refuse: map[string]string{}, reactions: map[string]bool{},
		files: map[string][]byte{}, uploaded: map[string]bool{}, groups: map[string][]string{}, members: map[string][]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// APIURL is the Web API's base URL, ending in a slash, as
// slack.OptionAPIURL and AGENTSFLEET_SLACK_API_URL take it.
func (s *Server) APIURL() string { return s.URL + "/api/" }

// Client is a slack-go client of the Server with its token.
func (s *Server) Client() *slack.Client {
	return slack.New(s.token, slack.OptionAPIURL(s.APIURL()))
}

// Refuse makes every later call of method fail with code, as Slack's
// answer {"ok": false, "error": code}; an empty code takes it back.
func (s *Server) Refuse(method, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == "" {
		delete(s.refuse, method)
		return
	}
	s.refuse[method] = code
}

// AddUserGroup gives the workspace the user group id (S…) with members,
// replacing any it had.
func (s *Server) AddUserGroup(id string, members ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = append([]string(nil), members...)
}

// Members says who is in channel, for chat.postEphemeral's
// user_not_in_channel; a channel never named here takes any user.
func (s *Server) Members(channel string, users ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members[channel] = append([]string(nil), users...)
}

// Calls returns the calls taken so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Methods returns the methods called so far, in order.
func (s *Server) Methods() []string {
	var out []string
	for _, c := range s.Calls() {
		out = append(out, c.Method)
	}
	return out
}

// Last returns the last call of method, the zero Call if there was none.
func (s *Server) Last(method string) Call {
	calls := s.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Method == method {
			return calls[i]
		}
	}
	return Call{}
}

// Refused returns the calls that were refused, as "method: code".
func (s *Server) Refused() []string {
	var out []string
	for _, c := range s.Calls() {
		if c.Error != "" {
			out = append(out, c.Method+": "+c.Error)
		}
	}
	return out
}

// Reset forgets the calls taken so far; the workspace stays as it is.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// Messages returns the app's messages, in the order they were posted.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.messages))
	for i, m := range s.messages {
		out[i] = *m
	}
	return out
}

// Upload returns the content of the last file uploaded.
func (s *Server) Upload() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.last...)
}

// refusal is a call Slack refuses, with its code.
type refusal string

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if id, ok := strings.CutPrefix(r.URL.Path, "/upload/"); ok {
		s.upload(w, r, id)
		return
	}
	r.ParseMultipartForm(1 << 20)
	r.ParseForm()
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	args := map[string]string{}
	for k, v := range r.Form {
		if k != "token" && len(v) > 0 {
			args[k] = v[0]
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	answer, err := s.call(r, method, args)
	c := Call{Method: method, Args: args}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if err != "" {
		c.Error = string(err)
		answer = map[string]any{"ok": false, "error": string(err)}
	} else {
		answer["ok"] = true
	}
	s.calls = append(s.calls, c)
	json.NewEncoder(w).Encode(answer)
}

// call serves one method, s.mu held.
func (s *Server) call(r *http.Request, method string, args map[string]string) (map[string]any, refusal) {
	token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !bearer {
		token = r.Form.Get("token")
	}
	switch {
	case token == "":
		return nil, "not_authed"
	case token != s.token:
		return nil, "invalid_auth"
	}
	if code := s.refuse[method]; code != "" {
		return nil, refusal(code)
	}
	switch method {
	case "chat.postMessage":
		return s.postMessage(args)
	case "chat.update":
		return s.update(args)
	case "chat.postEphemeral":
		return s.postEphemeral(args)
	case "usergroups.users.list":
		members, ok := s.groups[args["usergroup"]]
		if !ok {
			return nil, "no_such_subteam"
		}
		return map[string]any{"users": append([]string{}, members...)}, ""
	case "chat.startStream":
		return s.startStream(args)
	case "chat.appendStream", "chat.stopStream":
		return s.stream(method, args)
	case "reactions.add", "reactions.remove":
		return s.react(method, args)
	case "assistant.threads.setStatus":
		switch {
		case args["channel_id"] == "":
			return nil, "channel_not_found"
		case args["thread_ts"] == "":
			return nil, "invalid_thread_ts"
		}
		return map[string]any{}, ""
	case "files.getUploadURLExternal":
		if args["filename"] == "" || args["length"] == "" || args["length"] == "0" {
			return nil, "invalid_arguments"
		}
		id := fmt.Sprintf("F%08d", s.next())
		s.files[id] = nil
		return map[string]any{"upload_url": s.URL + "/upload/" + id, "file_id": id}, ""
	case "files.completeUploadExternal":
		return s.complete(args)
	}
	return nil, "unknown_method"
}

func (s *Server) next() int {
	s.n++
	return s.n
}

// newMessage adds a message of the app's, with a fresh ts.
func (s *Server) newMessage(m Message) *Message {
	m.TS = fmt.Sprintf("1800000000.%06d", s.next())
	s.messages = append(s.messages, &m)
	return &m
}

// find is the app's message ts in channel.
func (s *Server) find(channel, ts string) *Message {
	for _, m := range s.messages {
		if m.Channel == channel && m.TS == ts {
			return m
		}
	}
	return nil
}

func (s *Server) postMessage(args map[string]string) (map[string]any, refusal) {
	if args["channel"] == "" {
		return nil, "channel_not_found"
	}
	if args["text"] == "" && args["blocks"] == "" && args["attachments"] == "" {
		return nil, "no_text"
	}
	rendered, err := render(args)
	if err != "" {
		return nil, err
	}
	m := s.newMessage(Message{Channel: args["channel"], ThreadTS: args["thread_ts"], Text: args["text"], Blocks: args["blocks"], Rendered: rendered})
	return map[string]any{"channel": m.Channel, "ts": m.TS, "message": map[string]any{"type": "message", "text": m.Text, "ts": m.TS}}, ""
}

func (s *Server) postEphemeral(args map[string]string) (map[string]any, refusal) {
	channel, user := args["channel"], args["user"]
	switch {
	case channel == "":
		return nil, "channel_not_found"
	case user == "":
		return nil, "user_not_found"
	case s.members[channel] != nil && !slices.Contains(s.members[channel], user):
		return nil, "user_not_in_channel"
	case args["text"] == "" && args["blocks"] == "" && args["attachments"] == "":
		return nil, "no_text"
	}
	rendered, err := render(args)
	if err != "" {
		return nil, err
	}
	m := s.newMessage(Message{Channel: channel, ThreadTS: args["thread_ts"], Text: args["text"], Blocks: args["blocks"],
		Rendered: rendered, Ephemeral: true, User: user})
	return map[string]any{"message_ts": m.TS}, ""
}

func (s *Server) update(args map[string]string) (map[string]any, refusal) {
	if args["channel"] == "" {
		return nil, "channel_not_found"
	}
	m := s.find(args["channel"], args["ts"])
	if m == nil {
		return nil, "message_not_found"
	}
	if args["text"] == "" && args["blocks"] == "" && args["attachments"] == "" {
		return nil, "no_text"
	}
	rendered, err := render(args)
	if err != "" {
		return nil, err
	}
	m.Text, m.Blocks, m.Rendered = args["text"], args["blocks"], rendered
	return map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text}, ""
}

// IsDM reports whether channel is a direct message's: Slack's DM ids
// start with D.
func IsDM(channel string) bool { return strings.HasPrefix(channel, "D") }

func (s *Server) startStream(args map[string]string) (map[string]any, refusal) {
	channel := args["channel"]
	switch {
	case channel == "":
		return nil, "channel_not_found"
	case !IsDM(channel) && args["recipient_team_id"] == "":
		return nil, "missing_recipient_team_id"
	case !IsDM(channel) && args["recipient_user_id"] == "":
		return nil, "missing_recipient_user_id"
	}
	m := s.newMessage(Message{Channel: channel, ThreadTS: args["thread_ts"], Text: args["markdown_text"],
		Streamed: true, Streaming: true, Recipient: args["recipient_user_id"], RecipientTeam: args["recipient_team_id"]})
	return map[string]any{"channel": m.Channel, "ts": m.TS}, ""
}

func (s *Server) stream(method string, args map[string]string) (map[string]any, refusal) {
	if args["channel"] == "" {
		return nil, "channel_not_found"
	}
	m := s.find(args["channel"], args["ts"])
	switch {
	case m == nil || !m.Streamed:
		return nil, "message_not_found"
	case !m.Streaming:
		return nil, "message_not_in_streaming_state"
	case method == "chat.appendStream" && args["markdown_text"] == "":
		return nil, "no_text"
	}
	m.Text += args["markdown_text"]
	if method == "chat.stopStream" {
		m.Streaming = false
	}
	return map[string]any{"channel": m.Channel, "ts": m.TS}, ""
}

func (s *Server) react(method string, args map[string]string) (map[string]any, refusal) {
	if args["channel"] == "" || args["timestamp"] == "" {
		return nil, "no_item_specified"
	}
	if args["name"] == "" {
		return nil, "invalid_name"
	}
	key := args["channel"] + "/" + args["timestamp"] + "/" + args["name"]
	switch {
	case method == "reactions.add" && s.reactions[key]:
		return nil, "already_reacted"
	case method == "reactions.remove" && !s.reactions[key]:
		return nil, "no_reaction"
	}
	s.reactions[key] = method == "reactions.add"
	return map[string]any{}, ""
}

// upload takes a file's content at the URL files.getUploadURLExternal
// gave, as the multipart form slack-go sends.
func (s *Server) upload(w http.ResponseWriter, r *http.Request, id string) {
	var content []byte
	if f, _, err := r.FormFile("file"); err == nil {
		content, _ = io.ReadAll(f)
		f.Close()
	} else {
		content, _ = io.ReadAll(r.Body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[id]; !ok {
		http.Error(w, "no such upload", http.StatusNotFound)
		return
	}
	s.files[id], s.uploaded[id], s.last = content, true, content
	fmt.Fprintf(w, "OK - %d", len(content))
}

func (s *Server) complete(args map[string]string) (map[string]any, refusal) {
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(args["files"]), &files); err != nil || len(files) == 0 {
		return nil, "invalid_arguments"
	}
	out := make([]map[string]string, len(files))
	for i, f := range files {
		if !s.uploaded[f.ID] {
			return nil, "file_not_found"
		}
		out[i] = map[string]string{"id": f.ID, "title": f.Title}
	}
	if ch := args["channel_id"]; ch != "" {
		s.newMessage(Message{Channel: ch, ThreadTS: args["thread_ts"], Text: args["initial_comment"]})
	}
	return map[string]any{"files": out}, ""
}

// Sorted returns the methods called so far, each once, sorted.
func (s *Server) Sorted() []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range s.Methods() {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// textObject is a Block Kit text object.
type textObject struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji *bool  `json:"emoji"`
}

// block is what the fake reads of a block: its type and text.
type block struct {
	Type string      `json:"type"`
	Text *textObject `json:"text"`
}

// maxBlocks and maxTextObject are Block Kit's limits: blocks in a message,
// characters in a section's or header's text object.
const (
	maxBlocks     = 50
	maxTextObject = 3000
)

// render is what a person sees of a message with these arguments (see the
// package comment), or invalid_blocks.
func render(args map[string]string) (string, refusal) {
	if args["blocks"] == "" {
		if args["mrkdwn"] == "false" {
			return emoji(unescape(args["text"])), ""
		}
		return mrkdwn(args["text"]), ""
	}
	var blocks []block
	if err := json.Unmarshal([]byte(args["blocks"]), &blocks); err != nil || len(blocks) == 0 || len(blocks) > maxBlocks {
		return "", "invalid_blocks"
	}
	var out []string
	for _, b := range blocks {
		if b.Type == "" {
			return "", "invalid_blocks"
		}
		if b.Text == nil || (b.Type != "section" && b.Type != "header") {
			continue // buttons and the like: not text a person reads here
		}
		t := b.Text
		if n := utf8.RuneCountInString(t.Text); n == 0 || n > maxTextObject {
			return "", "invalid_blocks"
		}
		switch t.Type {
		case "plain_text":
			shown := unescape(t.Text)
			if t.Emoji == nil || *t.Emoji {
				shown = emoji(shown)
			}
			out = append(out, shown)
		case "mrkdwn":
			if t.Emoji != nil {
				return "", "invalid_blocks"
			}
			out = append(out, mrkdwn(t.Text))
		default:
			return "", "invalid_blocks"
		}
	}
	return strings.Join(out, "\n"), "" // blocks stack, each on lines of its own
}

var (
	controlRE = regexp.MustCompile(`<([^<>]*)>`)
	codeRE    = regexp.MustCompile("`([^`\n]+)`")
	boldRE    = regexp.MustCompile(`\*([^*\n]+)\*`)
	italicRE  = regexp.MustCompile(`_([^_\n]+)_`)
	strikeRE  = regexp.MustCompile(`~([^~\n]+)~`)
	emojiRE   = regexp.MustCompile(`:([a-z][a-z0-9_+'-]*):`)
)

// mrkdwn marks what Slack formats in mrkdwn text: <…> (a mention, a
// channel, a link), `code`, *bold*, _italic_, ~strike~ and :emoji:, then
// decodes the three entities.
func mrkdwn(text string) string {
	t := controlRE.ReplaceAllString(text, "«link:$1»")
	t = codeRE.ReplaceAllString(t, "«code:$1»")
	t = boldRE.ReplaceAllString(t, "«bold:$1»")
	t = italicRE.ReplaceAllString(t, "«italic:$1»")
	t = strikeRE.ReplaceAllString(t, "«strike:$1»")
	return emoji(unescape(t))
}

// emoji marks the :emoji: codes Slack shows as pictures.
func emoji(text string) string { return emojiRE.ReplaceAllString(text, "«emoji:$1»") }

// unescape decodes what Slack decodes for display: &lt; &gt; &amp;.
func unescape(text string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text)
}
