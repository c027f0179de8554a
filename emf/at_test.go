package emf_test

import (
	"errors"

	"github.com/homingdlq/homing/internal/emfline/emflinetest"
)

var at = emflinetest.At

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }
