package runner

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// EnvCheckpointBucket is the setting BucketFromEnv reads: the S3 bucket of
// the checkpoints larger than an item and of the fleets' folders.
const EnvCheckpointBucket = "AGENTSFLEET_CHECKPOINT_BUCKET"

// Settings are the variables BucketFromEnv and LeaseFromEnv read, none
// required.
func Settings() []setting.Var { return []setting.Var{{Name: EnvCheckpointBucket}, {Name: EnvLease}} }

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
