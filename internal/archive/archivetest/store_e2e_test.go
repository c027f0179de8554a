//go:build e2e

package archivetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/homingdlq/homing/internal/archive/archivetest"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

// The store contract on every S3 of HOMING_S3_ENDPOINTS.
func TestStoreContract(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.S3, func(t *testing.T, e emulatortest.Endpoint) {
		api := s3.NewFromConfig(e.Config)
		archivetest.RunStore(t, archivetest.StoreHarness{S3: api, NewBucket: func(t *testing.T) string {
			return bucket(t, api)
		}})
	})
}

// bucket creates a bucket of t's own and empties and deletes it when t ends.
func bucket(t *testing.T, api *s3.Client) string {
	t.Helper()
	name := strings.ToLower(emulatortest.Name(t, "archive"))
	if len(name) > 63 {
		name = strings.Trim(name[len(name)-63:], "-")
	}
	if _, err := api.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				break
			}
			for _, o := range page.Contents {
				_, _ = api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key})
			}
		}
		_, _ = api.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	return name
}
