package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3 is the part of the S3 client a [Store] uses.
type S3 interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// ErrNotFound is wrapped by [Store.Get] for a key without an object.
var ErrNotFound = errors.New("archive: no such object")

// maxObjectBytes bounds what Get reads: a message of SQS's largest size with
// every byte escaped, and its metadata.
const maxObjectBytes = 8 << 20

// Store reads and writes the objects of one bucket. It holds no state of
// its own and is safe for concurrent use.
type Store struct {
	api    S3
	bucket string
}

// NewStore returns the store of bucket through api.
func NewStore(api S3, bucket string) *Store { return &Store{api: api, bucket: bucket} }

// Put writes o at [ObjectKey], then its index at [IndexKey] when o has a
// business key, and returns the object's key. Writing o again overwrites
// both with the same keys. The bucket's default encryption applies.
func (s *Store) Put(ctx context.Context, o Object) (string, error) {
	body, err := json.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("encode %s of %s: %w", o.MessageID, o.Queue, err)
	}
	key := ObjectKey(o)
	if err := s.put(ctx, key, body); err != nil {
		return "", err
	}
	if index := IndexKey(o); index != "" {
		if err := s.put(ctx, index, nil); err != nil {
			return "", err
		}
	}
	return key, nil
}

func (s *Store) put(ctx context.Context, key string, body []byte) error {
	_, err := s.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:      aws.String(s.bucket),
		Key:         aws.String(key),
		Body:        bytes.NewReader(body),
		ContentType: aws.String("application/json"),
	})
	if err != nil {
		return fmt.Errorf("put %s in %s: %w", key, s.bucket, err)
	}
	return nil
}

// Get reads the object at key, or at the object an index key points to.
// A missing object is an error wrapping [ErrNotFound].
func (s *Store) Get(ctx context.Context, key string) (Object, error) {
	if object, ok := ObjectOf(key); ok {
		key = object
	}
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	var missing *types.NoSuchKey
	if errors.As(err, &missing) {
		return Object{}, fmt.Errorf("get %s from %s: %w", key, s.bucket, ErrNotFound)
	}
	if err != nil {
		return Object{}, fmt.Errorf("get %s from %s: %w", key, s.bucket, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxObjectBytes+1))
	if err != nil {
		return Object{}, fmt.Errorf("read %s from %s: %w", key, s.bucket, err)
	}
	if len(b) > maxObjectBytes {
		return Object{}, fmt.Errorf("read %s from %s: larger than %d bytes", key, s.bucket, maxObjectBytes)
	}
	var o Object
	if err := json.Unmarshal(b, &o); err != nil {
		return Object{}, fmt.Errorf("decode %s from %s: %w", key, s.bucket, err)
	}
	return o, nil
}

// List calls fn with each key under prefix, in key order,
// one page of at most 1,000 keys in memory at a time, until fn returns
// false or the keys end.
func (s *Store) List(ctx context.Context, prefix string, fn func(key string) bool) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)}
	for {
		out, err := s.api.ListObjectsV2(ctx, in)
		if err != nil {
			return fmt.Errorf("list %s in %s: %w", prefix, s.bucket, err)
		}
		for _, o := range out.Contents {
			if !fn(aws.ToString(o.Key)) {
				return nil
			}
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}
