package deadletter_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// The archive bucket keeps what it holds: encrypted, versioned, public
// access blocked, TLS only, retained as the tables are, no expiry; a
// transition only when the team sets one.
func TestArchiveBucket(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	r := s.resources[id.archive]
	if r["DeletionPolicy"] != "RetainExceptOnCreate" || r["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("archive removal: %v / %v, want the tables' RetainExceptOnCreate / Retain", r["DeletionPolicy"], r["UpdateReplacePolicy"])
	}
	if lc := props(r)["LifecycleConfiguration"]; lc != nil {
		t.Errorf("a lifecycle by default: %s", mustJSON(lc))
	}
	check(t, "encrypted (SSE-S3), versioned, public access blocked", func() {
		s.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), like(obj{
			"BucketEncryption":               obj{"ServerSideEncryptionConfiguration": arr{obj{"ServerSideEncryptionByDefault": obj{"SSEAlgorithm": "AES256"}}}},
			"VersioningConfiguration":        obj{"Status": "Enabled"},
			"PublicAccessBlockConfiguration": obj{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
			"OwnershipControls":              obj{"Rules": arr{obj{"ObjectOwnership": "BucketOwnerEnforced"}}},
		}))
	})
	check(t, "TLS only", func() {
		s.template.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), like(obj{
			"Bucket": refTo(id.archive),
			"PolicyDocument": like(obj{"Statement": arr{like(obj{
				"Effect": "Deny", "Action": "s3:*", "Condition": obj{"Bool": obj{"aws:SecureTransport": "false"}},
			})}}),
		}))
	})

	tuned := tuned.get(t)
	check(t, "the tuned lane's transition after 30 days", func() {
		tuned.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), like(obj{
			"LifecycleConfiguration": obj{"Rules": arr{obj{"Id": "transition", "Status": "Enabled",
				"Transitions": arr{obj{"StorageClass": "GLACIER_IR", "TransitionInDays": 30}}}}},
		}))
	})
}

// With Queues.EncryptionKey the archive uses the lane's key, through an S3
// Bucket Key; an adopted bucket is used as it is.
func TestArchiveKeyAndAdoption(t *testing.T) {
	stack := newStack()
	key := awskms.NewKey(stack, jsii.String("LaneKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	p := baseProps()
	p.Queues.EncryptionKey = key
	s := synthesize(stack, deadletter.NewLane(stack, "Orders", p))
	check(t, "SSE-KMS with the lane's key and a bucket key", func() {
		s.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), like(obj{
			"BucketEncryption": obj{"ServerSideEncryptionConfiguration": arr{obj{
				"BucketKeyEnabled":              true,
				"ServerSideEncryptionByDefault": obj{"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": getAtt(s.ref(key.KeyArn()), "Arn")},
			}}},
		}))
	})

	stack = newStack()
	team := awss3.Bucket_FromBucketName(stack, jsii.String("TeamArchive"), jsii.String("team-archive"))
	p = baseProps()
	p.Archive.Bucket = team
	l := deadletter.NewLane(stack, "Orders", p)
	s = synthesize(stack, l)
	if n := len(s.ofType("AWS::S3::Bucket")); n != 0 {
		t.Errorf("%d buckets created beside the adopted one", n)
	}
	if *l.Archive().BucketName() != "team-archive" {
		t.Errorf("Archive() is %s", *l.Archive().BucketName())
	}
}
