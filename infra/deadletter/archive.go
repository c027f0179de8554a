package deadletter

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/homingdlq/homing/internal/settings"
)

// ArchiveProps configures the lane's archive: an S3 bucket that keeps the
// parking and invalid queues' messages past SQS's retention
// (docs/OPERATIONS.md#the-archive). Every field is optional.
type ArchiveProps struct {
	// Bucket adopts the team's bucket; its encryption, versioning, policy
	// and lifecycle stay the team's. Default: the lane creates one,
	// encrypted (SSE-S3, or Queues.EncryptionKey with an S3 Bucket Key),
	// versioned, public access blocked, TLS only, kept on delete as the
	// lane's tables are.
	Bucket awss3.IBucket
	// TransitionAfter moves archived objects to TransitionTo after this
	// long; whole days, at least 1. Default: no transition. Nothing
	// expires.
	TransitionAfter awscdk.Duration
	// TransitionTo is the storage class of TransitionAfter. Default
	// GLACIER_INSTANT_RETRIEVAL.
	TransitionTo awss3.StorageClass
	// OnArrival archives every message at the first run that sees it
	// (ARCHIVE_MODE=on-arrival). Default false: Margin before its
	// retention ends.
	OnArrival *bool
	// Margin is ARCHIVE_MARGIN. Default 48 hours; 1 hour..13 days.
	Margin awscdk.Duration
}

// archiveResolved is ArchiveProps with its defaults.
type archiveResolved struct {
	bucket          awss3.IBucket
	transitionAfter *float64 // seconds
	transitionTo    awss3.StorageClass
	onArrival       bool
	margin          *float64 // seconds; nil: the function's default
}

func (p ArchiveProps) resolve() archiveResolved {
	r := archiveResolved{
		bucket:          p.Bucket,
		transitionAfter: optionalSeconds(p.TransitionAfter),
		transitionTo:    p.TransitionTo,
		onArrival:       p.OnArrival != nil && *p.OnArrival,
		margin:          optionalSeconds(p.Margin),
	}
	if r.transitionTo == nil {
		r.transitionTo = awss3.StorageClass_GLACIER_INSTANT_RETRIEVAL()
	}
	return r
}

func (r archiveResolved) validate() []error {
	c := checker{prefix: "Archive."}
	if t := r.transitionAfter; t != nil {
		c.whole("TransitionAfter (days)", *t/86400, 1, 36500)
	}
	if m := r.margin; m != nil && (*m < settings.ArchiveMargin.Min.Seconds() || *m > settings.ArchiveMargin.Max.Seconds()) {
		c.bad("Margin is %s, want %s", human(*m), settings.ArchiveMargin.Want())
	}
	return c.errs
}

// archiveEnvironment is the replay function's archive variables.
func (l *lane) archiveEnvironment() map[string]*string {
	env := map[string]*string{
		settings.ArchiveBucket.Env:          l.archive.BucketName(),
		settings.ArchiveInvalidQueueURL.Env: l.invalid.QueueUrl(),
	}
	if l.props.archive.onArrival {
		env[settings.ArchiveMode.Env] = jsii.String(settings.ArchiveOnArrival)
	}
	if m := l.props.archive.margin; m != nil {
		env[settings.ArchiveMargin.Env] = jsii.String(settings.FormatDuration(time.Duration(*m * float64(time.Second))))
	}
	return env
}

// addArchive adopts Archive.Bucket or creates the lane's bucket.
func (l *lane) addArchive() {
	r := l.props
	if r.archive.bucket != nil {
		l.archive = r.archive.bucket
		return
	}
	props := &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		Versioned:         jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     r.removalPolicy,
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
	}
	if key := r.queues.key; key != nil {
		props.Encryption = awss3.BucketEncryption_KMS
		props.EncryptionKey = key
		props.BucketKeyEnabled = jsii.Bool(true)
	}
	if t := r.archive.transitionAfter; t != nil {
		props.LifecycleRules = &[]*awss3.LifecycleRule{{
			Id: jsii.String("transition"),
			Transitions: &[]*awss3.Transition{{
				StorageClass:    r.archive.transitionTo,
				TransitionAfter: awscdk.Duration_Days(jsii.Number(*t / 86400)),
			}},
		}}
	}
	bucket := awss3.NewBucket(l.scope(), jsii.String("Archive"), props)
	suppress(bucket, "AwsSolutions-S1", "Server access logs would log each archived message's write: the replay function logs every run's "+
		"archive, and CloudTrail data events are the account's choice.")
	l.archive = bucket
}

// grantArchive grants the replay function what the archive needs: receive,
// release, delete and the retention of the parking and invalid queues, and
// s3:PutObject in the bucket (with its key's kms:GenerateDataKey).
func (l *lane) grantArchive() {
	replay := l.replay.fn
	for _, q := range []awssqs.IQueue{l.parking, l.invalid} {
		grantQueue(q, replay, "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
	}
	// A policy of its own, so that the suppression of its one wildcard
	// (the bucket's objects) applies to it alone.
	write := awsiam.NewPolicy(l.scope(), jsii.String("ArchiveWrite"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{l.replay.role},
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:PutObject"),
			Resources: &[]*string{l.archive.ArnForObjects(jsii.String("*"))},
		})},
	})
	replay.Node().AddDependency(write) // no run before it may write
	if key := l.archive.EncryptionKey(); key != nil {
		key.Grant(replay, jsii.String("kms:GenerateDataKey"))
	}
	suppress(write, "AwsSolutions-IAM5", "s3:PutObject on the archive bucket's objects: the archive writes one object per message, "+
		"under keys by lane, queue, day and message id (docs/OPERATIONS.md#the-archive).")
}

// grantArchiveRead grants principal the archive's reads (dlq archive):
// list the bucket, read its objects (and decrypt with its key). The one
// wildcard, the objects of the bucket the lane created, is suppressed on
// principal when it is a construct of the app.
func (l *lane) grantArchiveRead(principal awsiam.IGrantable) {
	for _, g := range []struct {
		actions string
		arn     *string
	}{{"archive-bucket", l.archive.BucketArn()}, {"archive-objects", l.archive.ArnForObjects(jsii.String("*"))}} {
		awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{Grantee: principal, Actions: jsii.Strings(operatorActions[g.actions]...), ResourceArns: &[]*string{g.arn}})
	}
	if key := l.archive.EncryptionKey(); key != nil {
		key.Grant(principal, jsii.String("kms:Decrypt"))
	}
	bucket, own := l.archive.(awss3.Bucket)
	if c, ok := principal.(constructs.IConstruct); ok && own && l.props.archive.bucket == nil {
		id := awscdk.Stack_Of(bucket).GetLogicalId(bucket.Node().DefaultChild().(awscdk.CfnElement))
		cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String("s3:GetObject on the lane's archive objects, for dlq archive ls and show (docs/OPERATIONS.md#the-archive)."),
			AppliesTo: &[]any{"Resource::<" + *id + ".Arn>/*"},
		}}, jsii.Bool(true))
	}
}
