package archivetest_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/homingdlq/homing/internal/archive/archivetest"
	"github.com/homingdlq/homing/internal/suite"
)

func TestStoreTableListsEveryRule(t *testing.T) {
	suite.CheckTable(t, "StoreHarness", archivetest.StoreTests)
}

func TestMemoryS3(t *testing.T) {
	var n atomic.Int64
	m := archivetest.NewMemoryS3()
	archivetest.RunStore(t, archivetest.StoreHarness{S3: m, NewBucket: func(t *testing.T) string {
		name := fmt.Sprintf("bucket-%d", n.Add(1))
		m.AddBucket(name)
		return name
	}})
}
