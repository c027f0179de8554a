package archivetest

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// MemoryS3 is an in-memory, versioned S3 of the calls archive.S3 makes, as
// S3 answers them: a missing key is NoSuchKey, a missing bucket
// NoSuchBucket, listings are in key order, at most MaxKeys (default and
// bound 1,000) a page. It is safe for concurrent use.
type MemoryS3 struct {
	// PutFault, when set, fails the PutObject of a key with its error.
	PutFault func(key string) error

	mu      sync.Mutex
	buckets map[string]map[string][][]byte // bucket, key: versions, oldest first
}

// NewMemoryS3 returns a MemoryS3 without buckets.
func NewMemoryS3() *MemoryS3 { return &MemoryS3{buckets: map[string]map[string][][]byte{}} }

// AddBucket creates an empty bucket of name, unless it exists.
func (m *MemoryS3) AddBucket(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buckets[name] == nil {
		m.buckets[name] = map[string][][]byte{}
	}
}

// Versions returns how many versions of key bucket holds.
func (m *MemoryS3) Versions(bucket, key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets[bucket][key])
}

// Keys returns bucket's keys in order.
func (m *MemoryS3) Keys(bucket string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.buckets[bucket]))
	for k := range m.buckets[bucket] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (m *MemoryS3) bucket(name *string) (map[string][][]byte, error) {
	b, ok := m.buckets[aws.ToString(name)]
	if !ok {
		return nil, &types.NoSuchBucket{Message: aws.String("The specified bucket does not exist")}
	}
	return b, nil
}

// PutObject implements archive.S3.
func (m *MemoryS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	key := aws.ToString(in.Key)
	if m.PutFault != nil {
		if err := m.PutFault(key); err != nil {
			return nil, err
		}
	}
	var body []byte
	if in.Body != nil {
		var err error
		if body, err = io.ReadAll(in.Body); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	b[key] = append(b[key], body)
	return &s3.PutObjectOutput{VersionId: aws.String(strconv.Itoa(len(b[key])))}, nil
}

// GetObject implements archive.S3: the newest version.
func (m *MemoryS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	v := b[aws.ToString(in.Key)]
	if len(v) == 0 {
		return nil, &types.NoSuchKey{Message: aws.String("The specified key does not exist.")}
	}
	body := v[len(v)-1]
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(body)), ContentLength: aws.Int64(int64(len(body)))}, nil
}

// ListObjectsV2 implements archive.S3: Prefix, StartAfter,
// ContinuationToken (the last key of the previous page) and MaxKeys.
func (m *MemoryS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	limit := int(aws.ToInt32(in.MaxKeys))
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	after := aws.ToString(in.StartAfter)
	if in.ContinuationToken != nil {
		after = aws.ToString(in.ContinuationToken)
	}
	keys := make([]string, 0)
	for k := range b {
		if strings.HasPrefix(k, aws.ToString(in.Prefix)) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(len(keys) > limit)}
	if len(keys) > limit {
		keys = keys[:limit]
		out.NextContinuationToken = aws.String(keys[limit-1])
	}
	for _, k := range keys {
		v := b[k]
		out.Contents = append(out.Contents, types.Object{Key: aws.String(k), Size: aws.Int64(int64(len(v[len(v)-1])))})
	}
	out.KeyCount = aws.Int32(int32(len(out.Contents)))
	return out, nil
}
