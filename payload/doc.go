// Package payload holds the two facts the toolkit reads from a message body
// without domain code: its business key ([Key]) and its payload hash
// ([Hash]).
//
// A [Key] is a JMESPath expression over the JSON body, the convention of
// Powertools' eventKeyJmesPath ("shipmentId", "payment.id",
// "join('-', [tenant, id])"). It is evaluated with the JMESPath Community
// implementation (github.com/jmespath-community/go-jmespath). A string
// result, trimmed of JSON's white space and non-empty, or a number that is
// as written an integer of at most 2^53 in magnitude is the key; anything
// else is no key, and the caller decides such a message by its message id.
//
// A [Hash] is the payload hash contract, versioned: [HashVersion] + ":" +
// lowercase hex SHA-256 of the RFC 8785 (JSON Canonicalization Scheme)
// bytes of the body, or of the part an optional JMESPath expression selects
// (Powertools' payloadValidationJmesPath), whose identity the version
// carries. Any runtime can compute it; the exact bytes and a worked example
// are in docs/CONTRACT.md. A recorded hash
// of another version (or an unversioned, older hash) is not comparable:
// [Hash.Same] says so, and the idempotent receiver never calls that a
// conflict.
//
// Both bound what they evaluate: a body over [MaxBody] bytes is no key and a
// hash error, never a panic (a panic inside the JMESPath library is
// recovered as no key, or as [ErrNoPart]). Both are deterministic: keys,
// values and items list an object's members sorted by name (RFC 8785's
// order), and an expression with the object wildcard, which the library
// evaluates in Go's map order, is refused. Key and Hash are values, safe for concurrent use
// by multiple goroutines once built.
package payload
