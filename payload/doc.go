// Package payload holds the two facts the toolkit reads from a message body
// without domain code: its business key ([Key]) and its payload hash
// ([Hash]), from configuration alone; docs/CONTRACT.md states both for any
// runtime.
//
// A [Key] is a JMESPath expression over the JSON body: a non-empty string or
// an integer of at most 2^53 in magnitude is the key, anything else no key.
// A [Hash] is [HashVersion] + ":" + hex SHA-256 of the RFC 8785 bytes of the
// body, or of the part an expression selects; [Hash.Same] says whether two
// hashes compare. A body over [MaxBody] bytes is no key and a hash error,
// never a panic; an expression with the object wildcard is refused. Key and
// Hash are safe for concurrent use once built.
//
// The reasons are in docs/PACKAGES.md#payload.
package payload
