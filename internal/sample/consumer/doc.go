// Package consumer assembles the sample's invoice consumer: its
// configuration, read from the environment as package settings declares it
// ([LoadConfig]), and the handler of one SQS batch ([New]): the batch
// processor over the invoicing handler behind the idempotent receiver,
// publishing invalid orders to the invalid queue, counted into one set of EMF
// lines per invocation. functions/consumer only wires AWS clients into it
// and calls lambda.Start.
package consumer
