package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Folders keeps the fleets' folders (/agent) between runs, for sandboxes
// that do not keep them themselves (a fresh Fargate task). The runner
// never moves a folder's bytes: it hands sandboxd short-lived presigned
// URLs, the only credential a sandbox without a role gets.
//
// Overlapping runs of one fleet: the first save wins. A run remembers the
// version (ETag) it restored and saves only if the stored folder is still
// that version: checked first (Stat), then enforced by the storage
// (If-Match on that ETag, or If-None-Match: * when there was none). The
// later run's save is refused: its log and its events (folder.not_saved,
// just before run.ended) say so and why, and its changes to the folder are
// lost with its sandbox; nothing is overwritten silently.
type Folders interface {
	// Stat returns the version of the object at key, "" (and no error)
	// when there is none.
	Stat(ctx context.Context, key string) (version string, err error)
	// PresignGet returns a GET URL for the object at key, valid only while
	// it is that version.
	PresignGet(ctx context.Context, key, version string) (Presigned, error)
	// PresignPut returns a PUT URL for key that stores only while the
	// object is still version ("": while there is none).
	PresignPut(ctx context.Context, key, version string) (Presigned, error)
}

// Presigned is a presigned request: its URL, and the headers it was
// signed with, to be sent with it.
type Presigned struct {
	URL    string
	Header http.Header
}

// FolderKey is where the fleet's folder is kept: fleets/<fleet>/agent.tar.gz.
func FolderKey(fleetName string) string { return "fleets/" + fleetName + "/agent.tar.gz" }

// FolderURLExpiry is how long a presigned folder URL is valid when
// S3Folders.Expires is zero.
const FolderURLExpiry = 10 * time.Minute

// S3HeadAPI is the part of the S3 client S3Folders uses.
type S3HeadAPI interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// S3Folders keeps the fleets' folders in an S3 bucket (the checkpoint
// bucket: its lifecycle rule must spare the fleets/ prefix). Presign signs
// the URLs with the runner's credentials; Client reads versions.
type S3Folders struct {
	Presign *s3.PresignClient
	Client  S3HeadAPI
	Bucket  string
	// Expires is how long a URL is valid; zero means FolderURLExpiry.
	Expires time.Duration
}

var _ Folders = S3Folders{}

// Stat returns the object's ETag, or "" when there is none.
func (f S3Folders) Stat(ctx context.Context, key string) (string, error) {
	out, err := f.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(f.Bucket), Key: aws.String(key)})
	var nf *types.NotFound
	var nk *types.NoSuchKey
	if errors.As(err, &nf) || errors.As(err, &nk) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("head s3://%s/%s: %w", f.Bucket, key, err)
	}
	return aws.ToString(out.ETag), nil
}

func (f S3Folders) expires(o *s3.PresignOptions) {
	o.Expires = f.Expires
	if o.Expires <= 0 {
		o.Expires = FolderURLExpiry
	}
}

// PresignGet signs a GET of key with If-Match: version.
func (f S3Folders) PresignGet(ctx context.Context, key, version string) (Presigned, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(f.Bucket), Key: aws.String(key)}
	if version != "" {
		in.IfMatch = aws.String(version)
	}
	req, err := f.Presign.PresignGetObject(ctx, in, f.expires)
	if err != nil {
		return Presigned{}, fmt.Errorf("presign get s3://%s/%s: %w", f.Bucket, key, err)
	}
	return Presigned{URL: req.URL, Header: signed(req.SignedHeader)}, nil
}

// PresignPut signs a PUT of key with If-Match: version, or If-None-Match: *
// when version is "".
func (f S3Folders) PresignPut(ctx context.Context, key, version string) (Presigned, error) {
	in := &s3.PutObjectInput{Bucket: aws.String(f.Bucket), Key: aws.String(key), ContentType: aws.String("application/gzip")}
	if version != "" {
		in.IfMatch = aws.String(version)
	} else {
		in.IfNoneMatch = aws.String("*")
	}
	req, err := f.Presign.PresignPutObject(ctx, in, f.expires)
	if err != nil {
		return Presigned{}, fmt.Errorf("presign put s3://%s/%s: %w", f.Bucket, key, err)
	}
	return Presigned{URL: req.URL, Header: signed(req.SignedHeader)}, nil
}

// signed keeps the signed headers the sender must set (not Host).
func signed(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if !strings.EqualFold(k, "Host") {
			out[k] = v
		}
	}
	return out
}

// folderState is what an invocation knows of its run's folder.
type folderState struct {
	restored bool   // the sandbox holds the stored folder
	version  string // the version restored ("" for none)
	broken   string // why the restore failed
	note     string // for the model, with the next sandbox result
	saved    bool   // the save was tried
	events   []store.NewEvent
}

// keepsFolders reports whether the runner restores and saves the folder:
// Folders is set and the launcher does not keep the folder itself (a
// launch.Placer naming an Agent folder), unless Config.AlwaysFolders.
func (x *execution) keepsFolders() bool {
	if x.r.cfg.Folders == nil || x.def == nil {
		return false
	}
	if x.r.cfg.AlwaysFolders {
		return true
	}
	if p, ok := x.r.cfg.Sandboxes.(launch.Placer); ok && p.Places(x.spec()).Agent != "" {
		return false
	}
	return true
}

// restoreFolder brings the stored folder into sb, a sandbox just acquired,
// before any tool runs in it. sandboxd restores once, so a sandbox kept
// from an earlier invocation of the run answers with what it restored
// then. A failure leaves the folder as it is, tells the model with the
// next result, and keeps the run from saving over the stored folder.
// Called with x.mu held.
func (x *execution) restoreFolder(ctx context.Context, sb *launch.Sandbox) {
	if !x.keepsFolders() {
		return
	}
	key := FolderKey(x.run.Fleet)
	fail := func(err error) {
		x.folder.broken = err.Error()
		x.folder.note = fmt.Sprintf("[The fleet's folder could not be restored (%v): it does not hold what earlier runs left, and this run's changes to it will not be saved.]\n", err)
		x.r.log.Warn("restore the fleet's folder", "run_id", x.run.ID, "sandbox", sb.ID, "key", key, "error", err)
	}
	version, err := x.r.cfg.Folders.Stat(ctx, key)
	if err != nil {
		fail(err)
		return
	}
	var p Presigned
	if version != "" {
		if p, err = x.r.cfg.Folders.PresignGet(ctx, key, version); err != nil {
			fail(err)
			return
		}
	}
	res, err := sb.Client.RestoreAgent(ctx, p.URL, p.Header, version)
	if err != nil {
		fail(err)
		return
	}
	x.folder.restored, x.folder.version, x.folder.broken = true, res.Version, ""
	x.r.log.Info("restored the fleet's folder", "run_id", x.run.ID, "sandbox", sb.ID, "key", key,
		"files", res.Files, "bytes", res.Bytes, "already", res.Already)
}

// takeFolderNote returns the note for the model, once.
func (x *execution) takeFolderNote() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := x.folder.note
	x.folder.note = ""
	return n
}

// saveFolder saves the run's folder as the run ends, before its sandbox is
// released, and returns the event saying how it went (none when the runner
// does not keep folders, or the run never had a sandbox).
func (x *execution) saveFolder(ctx context.Context) []store.NewEvent {
	if !x.keepsFolders() {
		return nil
	}
	if !x.folder.saved {
		// end may commit twice (a budget the last step spent): the save
		// is made once, its event given each time.
		x.folder.saved = true
		x.folder.events = x.save(ctx)
	}
	return x.folder.events
}

func (x *execution) save(ctx context.Context) []store.NewEvent {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), client.FolderTimeout)
	defer cancel()
	key := FolderKey(x.run.Fleet)
	x.mu.Lock()
	sb := x.sandbox
	x.mu.Unlock()
	if sb == nil {
		// An earlier invocation of the run may have left work in its
		// sandbox: the launcher gives it back (a new one restores the
		// stored folder and saves it unchanged).
		if !x.resumed || !x.usesSandbox() {
			return nil
		}
		var err error
		if sb, err = x.acquireSandbox(ctx); err != nil {
			return x.notSaved(key, fmt.Sprintf("the run's sandbox could not be reached to save it: %v", err))
		}
	}
	if x.folder.broken != "" {
		return x.notSaved(key, "it was not restored at the start ("+x.folder.broken+"), so saving would overwrite what earlier runs left")
	}
	if !x.folder.restored {
		return x.notSaved(key, "it was never restored into this run's sandbox")
	}
	current, err := x.r.cfg.Folders.Stat(ctx, key)
	if err != nil {
		return x.notSaved(key, err.Error())
	}
	if current != x.folder.version {
		return x.notSaved(key, fmt.Sprintf("another run of the fleet saved it meanwhile (stored version %s, this run restored %s): the first save wins, and this run's changes to the folder are lost",
			orNone(current), orNone(x.folder.version)))
	}
	p, err := x.r.cfg.Folders.PresignPut(ctx, key, x.folder.version)
	if err != nil {
		return x.notSaved(key, err.Error())
	}
	res, err := sb.Client.SaveAgent(ctx, p.URL, p.Header)
	if err != nil {
		return x.notSaved(key, err.Error())
	}
	x.r.log.Info("saved the fleet's folder", "run_id", x.run.ID, "key", key, "files", res.Files, "bytes", res.Bytes,
		"archive", res.Archive, "skipped", len(res.Skipped))
	return []store.NewEvent{newEvent(run.EventFolderSaved, run.FolderSaved{Key: key, Files: res.Files, Bytes: res.Bytes,
		Archive: res.Archive, Skipped: res.Skipped})}
}

func (x *execution) notSaved(key, reason string) []store.NewEvent {
	x.r.log.Warn("the fleet's folder was not saved", "run_id", x.run.ID, "key", key, "reason", reason)
	return []store.NewEvent{newEvent(run.EventFolderNotSaved, run.FolderNotSaved{Key: key, Reason: reason})}
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// usesSandbox reports whether the run's Definition allows a sandbox tool.
func (x *execution) usesSandbox() bool {
	if x.tools == nil {
		return false
	}
	for _, e := range x.tools.entries {
		if e.RunsIn == fleet.InSandbox {
			return true
		}
	}
	return false
}
