// Package archive keeps a lane's parked and invalid messages past SQS's
// retention: one JSON [Object] per message in the lane's S3 bucket, under a
// key that lists by lane, queue and day ([ObjectKey]) and an empty index
// object that finds it by business key ([IndexKey]).
//
// An [Archiver] receives from the parking and invalid queues, writes each
// message that is due (near its retention, or every one when archiving on
// arrival) through a [Store], and deletes from its queue only the messages
// whose objects are written: a crash between the two leaves an object
// written twice, never a message lost. A FIFO queue's group is archived
// in order and its keys sort in that order.
//
// docs/OPERATIONS.md#the-archive holds the runbook and the cost.
package archive
