package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"path"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3API is the part of the S3 client S3Blobs uses.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// S3Blobs keeps large checkpoints, and the images of tool results, in an
// S3 bucket (the stack's, with a lifecycle rule that expires them).
type S3Blobs struct {
	Client S3API
	Bucket string
}

var _ BlobStore = S3Blobs{}

// Put writes data under key, its content type the one key's extension
// names (.json for checkpoints and turns, .png for a screenshot).
func (b S3Blobs) Put(ctx context.Context, key string, data []byte) error {
	ctype := mime.TypeByExtension(path.Ext(key))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	_, err := b.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(data), ContentType: aws.String(ctype)})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", b.Bucket, key, err)
	}
	return nil
}

// Get reads what Put wrote under key.
func (b S3Blobs) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := b.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", b.Bucket, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("read s3://%s/%s: %w", b.Bucket, key, err)
	}
	return data, nil
}
