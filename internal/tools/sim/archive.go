package sim

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/archive/archivetest"
	"github.com/homingdlq/homing/replay/replaytest"
)

// archiveBucket is the lane's archive bucket, in memory.
const archiveBucket = "orders-archive"

// The archive's retention tail: once the rest has ended, the clock runs on
// past the parking and invalid queues' 14 days, a pass each step.
const (
	tailSteps = 64
	tailStep  = 6 * time.Hour
)

// archiveModel is the lane's archive (Config.Archive): the archiver the
// replay function runs before each scheduled run, over an in-memory S3,
// and the objects the operator has restored.
type archiveModel struct {
	s3       *archivetest.MemoryS3
	store    *archive.Store
	archiver *archive.Archiver
	restored map[string]bool // object keys brought back to the parking queue
}

func (s *Sim) newArchive() (*archiveModel, error) {
	mem := archivetest.NewMemoryS3()
	mem.AddBucket(archiveBucket)
	store := archive.NewStore(mem, archiveBucket)
	a, err := archive.New(archiveQueue{MemoryQueue: s.sqs.q, m: s.sqs}, store, "orders", s.sqs.route().Key, archive.Options{
		Logger: slog.New(&traceHandler{s: s, actor: "archive"}),
		Now:    s.clock.Now,
	})
	if err != nil {
		return nil, err
	}
	return &archiveModel{s3: mem, store: store, archiver: a, restored: map[string]bool{}}, nil
}

// archiveQueue is the queues as the archiver reaches them: its receives
// and deletes are the simulation's (sqsModel.received, deleted), so an
// archived message is not taken for one that expired.
type archiveQueue struct {
	*replaytest.MemoryQueue
	m *sqsModel
}

func (q archiveQueue) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := q.MemoryQueue.ReceiveMessage(ctx, in, opts...)
	if err == nil {
		q.m.received(out.Messages)
	}
	return out, err
}

func (q archiveQueue) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	out, err := q.MemoryQueue.DeleteMessageBatch(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	receipts := map[string]string{}
	for _, e := range in.Entries {
		receipts[aws.ToString(e.Id)] = aws.ToString(e.ReceiptHandle)
	}
	for _, ok := range out.Successful {
		q.m.deleted(receipts[aws.ToString(ok.Id)], "")
	}
	return out, nil
}

// archivePass is the archive of one run of the replay function: the
// parking and invalid queues' messages near their retention go to the
// archive.
func (s *Sim) archivePass() {
	if s.arch == nil {
		return
	}
	// As the replay function does: the parked metadata verified with the
	// ledger's public seal key, which the simulation writes at its start.
	parking, err := archive.Parked(context.Background(), s.ledger, s.sqs.parking)
	if err != nil {
		s.violate("archive-unverifiable", "", err.Error())
		return
	}
	counts, err := s.arch.archiver.Run(context.Background(), []archive.Queue{parking, {URL: s.sqs.invalid, Role: archive.Invalid}})
	n := 0
	for _, c := range counts {
		n += c.Archived
	}
	if n > 0 || err != nil {
		s.trace.add(s.clock.Now(), "archive", "archived", "", fmt.Sprintf("%d messages %+v, error %v", n, counts, err))
	}
}

// retentionTail runs the clock on past the queues' retention, an archive
// pass each step: what stays parked or invalid ends in the archive, and
// nothing expires unseen.
func (s *Sim) retentionTail() {
	if s.arch == nil {
		return
	}
	for range tailSteps {
		s.clock.Advance(tailStep)
		s.archivePass()
	}
}

// restoreArchived is the operator's `dlq archive restore` before a round:
// each parked message the archive holds goes back to the parking queue, as
// it was, and its object no longer counts as a place.
func (s *Sim) restoreArchived() {
	if s.arch == nil {
		return
	}
	ctx := context.Background()
	restore := "sim-restore-" + s.clock.Now().UTC().Format(time.RFC3339Nano) // as dlq names each restore
	n := 0
	for _, key := range s.arch.s3.Keys(archiveBucket) {
		if _, index := archive.ObjectOf(key); index || s.arch.restored[key] {
			continue
		}
		o, err := s.arch.store.Get(ctx, key)
		if err != nil {
			s.violate("archive-unreadable", key, err.Error())
			continue
		}
		if o.Queue != archive.Parking {
			continue
		}
		id, err := archive.Restore(ctx, s.sqs.q, s.sqs.parking, restore, o)
		if err != nil {
			s.violate("restore-failed", key, err.Error())
			continue
		}
		s.sqs.descend(id, o.MessageID, o.Body, "restore")
		s.arch.restored[key] = true
		n++
	}
	if n > 0 {
		s.trace.add(s.clock.Now(), "operator", "restore the archive", "", strconv.Itoa(n)+" parked messages to the parking queue")
	}
}

// archivedAt adds the archive's objects (those not restored) to the places
// of their publications: an invalid one to invalidAt with its reason, a
// parked one to parkedAt. A message archived twice (its delete failed) is
// one place.
func (s *Sim) archivedAt(invalidAt, parkedAt map[int][]string) {
	if s.arch == nil {
		return
	}
	seen := map[string]bool{}
	for _, key := range s.arch.s3.Keys(archiveBucket) {
		if _, index := archive.ObjectOf(key); index || s.arch.restored[key] {
			continue
		}
		o, err := s.arch.store.Get(context.Background(), key)
		if err != nil {
			s.violate("archive-unreadable", key, err.Error())
			continue
		}
		if seen[o.MessageID] {
			continue
		}
		seen[o.MessageID] = true
		s.stats.Archived++
		n := s.sqs.pubOf(o.MessageID)
		if n < 0 {
			continue
		}
		switch o.Queue {
		case archive.Invalid:
			invalidAt[n] = append(invalidAt[n], o.Reason)
		case archive.Parking:
			if o.Reason == "" {
				s.violate("parked-without-reason", s.subject(o.MessageID, n), "archived from the parking queue without a reason")
			}
			parkedAt[n] = append(parkedAt[n], o.Reason)
		}
	}
}
