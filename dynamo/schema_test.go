package dynamo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/settings"
)

// The items' attribute tags spell the key schema that settings declares and
// the construct creates the tables with: a struct tag cannot name a
// constant, so this pins each key and TTL field to its declaration.
func TestItemTagsAreTheKeySchema(t *testing.T) {
	for _, tc := range []struct {
		item   any
		fields map[string]string // field -> the attribute its tag must name
	}{
		{idempotencyItem{}, map[string]string{"Key": settings.PartitionKeyAttribute, "ExpiresAt": settings.TTLAttribute}},
		{messageItem{}, map[string]string{"PK": settings.PartitionKeyAttribute, "SK": settings.SortKeyAttribute, "ExpiresAt": settings.TTLAttribute}},
		{runItem{}, map[string]string{"PK": settings.PartitionKeyAttribute, "SK": settings.SortKeyAttribute, "ExpiresAt": settings.TTLAttribute}},
	} {
		typ := reflect.TypeOf(tc.item)
		for field, want := range tc.fields {
			f, ok := typ.FieldByName(field)
			if !ok {
				t.Errorf("%s has no field %s", typ.Name(), field)
				continue
			}
			if got, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ","); got != want {
				t.Errorf("%s.%s is stored as %q, want %q (settings)", typ.Name(), field, got, want)
			}
		}
	}
}
