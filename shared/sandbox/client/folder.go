package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// FolderTimeout bounds RestoreAgent and SaveAgent: moving an archive of up
// to wire.MaxAgentArchive bytes between the sandbox and the storage.
const FolderTimeout = 10*time.Minute + CallMargin

// The kinds of failure of RestoreAgent and SaveAgent, beside ErrBadRequest
// (400: a bad URL, or an archive entry refused, named), ErrUnauthorized and
// ErrUnavailable.
var (
	// ErrNoFolder: this sandboxd serves no fleet folder (404).
	ErrNoFolder = errors.New("the sandbox serves no fleet folder")
	// ErrFolderTooLarge: the folder or its archive is past wire's caps (413).
	ErrFolderTooLarge = errors.New("the fleet's folder is too large")
	// ErrRestoredBefore: the sandbox was restored before and that
	// restore failed (409).
	ErrRestoredBefore = errors.New("the fleet's folder was restored before and that failed")
	// ErrStorage: the storage URL failed or refused the transfer (502);
	// a refused conditional upload says 412 in the message.
	ErrStorage = errors.New("the storage refused the fleet's folder")
	// ErrFolderFailed: the folder could not be read or written inside
	// sandboxd (500).
	ErrFolderFailed = errors.New("the fleet's folder failed inside sandboxd")
)

var folderKinds = map[int]error{
	http.StatusBadRequest:            ErrBadRequest,
	http.StatusUnauthorized:          ErrUnauthorized,
	http.StatusNotFound:              ErrNoFolder,
	http.StatusConflict:              ErrRestoredBefore,
	http.StatusRequestEntityTooLarge: ErrFolderTooLarge,
	http.StatusBadGateway:            ErrStorage,
	http.StatusInternalServerError:   ErrFolderFailed,
}

var errFolderTimeout = errors.New("the folder timeout passed")

// RestoreAgent makes sandboxd replace its fleet folder with the tar.gz at
// url, a presigned GET URL (https, or http to loopback), sent with header
// (the headers it was signed with; nil for none); an empty url empties the
// folder. version is the caller's tag for what url holds, given back in the
// result. sandboxd restores once: a later call changes nothing and answers
// Already with the first call's Version. Every error is a *Error, as Call's,
// matching ErrBadRequest, ErrUnauthorized, ErrNoFolder, ErrRestoredBefore,
// ErrFolderTooLarge, ErrStorage, ErrFolderFailed or ErrUnavailable. The URL
// never appears in an error (it is a credential).
func (c *Client) RestoreAgent(ctx context.Context, url string, header http.Header, version string) (wire.AgentResult, error) {
	return c.folder(ctx, "restore the fleet's folder", wire.AgentRestorePath,
		wire.AgentRestore{URL: url, Header: flat(header), Version: version})
}

// SaveAgent makes sandboxd upload a tar.gz of its fleet folder with PUT to
// url, a presigned PUT URL, sent with header (If-Match and the like). The
// errors are RestoreAgent's; a conditional upload the storage refused is
// ErrStorage, its message saying 412.
func (c *Client) SaveAgent(ctx context.Context, url string, header http.Header) (wire.AgentResult, error) {
	return c.folder(ctx, "save the fleet's folder", wire.AgentSavePath, wire.AgentSave{URL: url, Header: flat(header)})
}

func flat(h http.Header) map[string]string {
	if len(h) == 0 {
		return nil
	}
	m := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			m[k] = v[0]
		}
	}
	return m
}

func (c *Client) folder(ctx context.Context, name, path string, body any) (wire.AgentResult, error) {
	return post[wire.AgentResult](ctx, c, name, path, body, FolderTimeout, errFolderTimeout, folderKinds, `the body is not {"files", "bytes"}`)
}

// post sends body as JSON to path and decodes a 200 answer as T; within
// timeout (whose passing is cause), a non-200 answer with an ErrorBody
// becoming kinds[status]. name says what the call does, in errors; shape
// says, in errors, what a 200 answer should have been.
func post[T any](ctx context.Context, c *Client, name, path string, body any, timeout time.Duration, cause error, kinds map[int]error, shape string) (T, error) {
	var zero T
	op := op{c: c, name: name}
	b, err := json.Marshal(body)
	if err != nil {
		return zero, op.notSent(ErrBadRequest, "the request could not be made")
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, cause)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return zero, op.notSent(ErrBadRequest, "the request could not be made")
	}
	req.Header.Set(wire.AuthorizationHeader, c.auth)
	req.Header.Set("Content-Type", wire.ContentType)
	req.Header.Set("Accept", wire.ContentType)
	status, ctype, answer, err := c.do(req)
	if err != nil {
		return zero, op.noAnswer(ctx, status, err, timeout, cause)
	}
	if status == http.StatusOK {
		var res T
		if json.Unmarshal(answer, &res) != nil {
			return zero, op.foreign(status, ctype, shape)
		}
		return res, nil
	}
	kind := kinds[status]
	var eb struct {
		Error *string `json:"error"`
	}
	if kind == nil || json.Unmarshal(answer, &eb) != nil || eb.Error == nil {
		return zero, op.foreign(status, ctype, "")
	}
	return zero, op.refused(kind, status, *eb.Error)
}
