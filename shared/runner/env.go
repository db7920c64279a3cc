package runner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// EnvCheckpointBucket is the setting BucketFromEnv reads: the S3 bucket of
// the checkpoints larger than an item and of the fleets' folders.
const EnvCheckpointBucket = "AGENTSFLEET_CHECKPOINT_BUCKET"

// Settings are the variables BucketFromEnv, LeaseFromEnv and
// ToolConcurrencyFromEnv read, none required.
func Settings() []setting.Var {
	return []setting.Var{{Name: EnvCheckpointBucket}, {Name: EnvLease}, {Name: EnvToolConcurrency}}
}

// EnvToolConcurrency is the runner function's setting for
// Config.ToolConcurrency: how many tool calls of one model answer run at
// once.
const EnvToolConcurrency = "AGENTSFLEET_RUN_TOOL_CONCURRENCY"

// DefaultToolConcurrency is how many tool calls of one model answer run at
// once when Config.ToolConcurrency is 0.
const DefaultToolConcurrency = 8

// MaxToolConcurrency is the most EnvToolConcurrency may say.
const MaxToolConcurrency = 64

// ToolConcurrencyFromEnv reads Config.ToolConcurrency from
// EnvToolConcurrency: 0 (DefaultToolConcurrency) when it is unset; a value
// that is not a whole number from 1 to MaxToolConcurrency is an error
// naming it.
func ToolConcurrencyFromEnv(getenv func(string) string) (int, error) {
	v := strings.TrimSpace(getenv(EnvToolConcurrency))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxToolConcurrency {
		return 0, fmt.Errorf("%s=%q: want a whole number of tool calls from 1 to %d (default %d)", EnvToolConcurrency, v, MaxToolConcurrency, DefaultToolConcurrency)
	}
	return n, nil
}

// BucketFromEnv is the Config's Blobs and Folders in the bucket
// EnvCheckpointBucket names, with an S3 client made from awsCfg; ok is
// false when it is unset, and the Config's Blobs and Folders stay nil.
// Fargate tasks keep nothing, so the fleets' folders live in the bucket
// too, under fleets/ (which its checkpoint expiry must not cover). It
// makes no AWS call.
func BucketFromEnv(getenv func(string) string, awsCfg aws.Config) (blobs S3Blobs, folders S3Folders, ok bool) {
	bucket := strings.TrimSpace(getenv(EnvCheckpointBucket))
	if bucket == "" {
		return S3Blobs{}, S3Folders{}, false
	}
	client := s3.NewFromConfig(awsCfg)
	return S3Blobs{Client: client, Bucket: bucket}, S3Folders{Presign: s3.NewPresignClient(client), Client: client, Bucket: bucket}, true
}
