// Package archivetest holds an in-memory S3 for the archive's tests
// ([MemoryS3]) and the contract every [archive.Store] backend passes
// ([RunStore]), run on the in-memory S3 and on the emulators.
package archivetest
