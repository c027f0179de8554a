// Package envconfig reads a Lambda's typed settings from its environment,
// collecting every malformed value so that one error lists them all.
package envconfig
