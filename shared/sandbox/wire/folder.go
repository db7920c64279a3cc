package wire

// The fleet's folder (the Agent root, /agent in the image) is the fleet's
// memory across runs. A sandbox that does not keep it itself (a fresh
// Fargate task) has it restored from a tar.gz at the start of a run and
// saved to one at its end, through presigned URLs the runner hands
// sandboxd: the URL is sandboxd's only credential (the task has no role).
//
//	POST AgentRestorePath {"url": GET URL, "header": {…}, "version": "…"} → 200 AgentResult
//	POST AgentSavePath    {"url": PUT URL, "header": {…}}                 → 200 AgentResult
//
// Both need the bearer token. Errors are an ErrorBody with 400 (a bad
// request or an archive entry refused, named), 404 (this sandboxd serves
// no fleet folder), 409 (restored before and that restore failed), 413
// (past MaxAgentArchive, MaxAgentUnpacked or MaxAgentFiles) or 502 (the
// storage URL failed or refused the transfer).
const (
	// AgentRestorePath replaces the Agent root with the archive at a URL.
	AgentRestorePath = "/v1/agent/restore"
	// AgentSavePath uploads a tar.gz of the Agent root to a URL.
	AgentSavePath = "/v1/agent/save"

	// MaxAgentArchive is the largest archive, compressed, either way.
	MaxAgentArchive = 256 << 20
	// MaxAgentUnpacked bounds the bytes of the files in an archive, so
	// that a small archive cannot fill the disk when unpacked.
	MaxAgentUnpacked = 2 << 30
	// MaxAgentFiles is the most entries (files, directories, links) an
	// archive holds.
	MaxAgentFiles = 100_000
	// MaxAgentSkipped is how many skipped entries AgentResult names.
	MaxAgentSkipped = 20
)

// AgentRestore is the body of POST AgentRestorePath. An empty URL means
// there is nothing stored yet: the folder is emptied.
//
// sandboxd restores once in its life (it serves one run): a second
// restore changes nothing and answers Already with the first one's
// Version, so that a runner invoked again for the same run learns what was
// restored without wiping the run's work.
type AgentRestore struct {
	// URL is a presigned GET URL: https, or http to a loopback address.
	URL string `json:"url"`
	// Header holds headers the URL was signed with (If-Match, …), sent
	// with the request.
	Header map[string]string `json:"header,omitempty"`
	// Version is the caller's tag for what URL holds (an S3 ETag),
	// remembered and given back.
	Version string `json:"version,omitempty"`
}

// AgentSave is the body of POST AgentSavePath.
type AgentSave struct {
	// URL is a presigned PUT URL: https, or http to a loopback address.
	URL string `json:"url"`
	// Header holds headers the URL was signed with (If-Match,
	// If-None-Match, Content-Type), sent with the upload.
	Header map[string]string `json:"header,omitempty"`
}

// AgentResult is the answer of both endpoints.
type AgentResult struct {
	// Files is how many entries (files, directories, links) were unpacked
	// or packed; Bytes is the size of the files in them.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Archive is the size of the tar.gz (save, and restore of an archive).
	Archive int64 `json:"archive,omitempty"`
	// Skipped names entries a save left out and why (sockets, links
	// leading out of the folder), at most MaxAgentSkipped of them.
	Skipped []string `json:"skipped,omitempty"`
	// Version is what AgentRestore.Version said on the restore.
	Version string `json:"version,omitempty"`
	// Already says this sandboxd had restored before: nothing changed.
	Already bool `json:"already,omitempty"`
}
